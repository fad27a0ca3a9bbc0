"""The PEP 517 build backend of the gatherjit Python package.

`pip install .` and `python3 -m build --wheel --no-isolation` call it from
the repository root. It needs nothing beyond the standard library: it
configures and builds the project's CMake targets for the Python package
(the `_native` module and the `gatherjit-epilogue` helper, Release, tests
and benchmarks off) with the interpreter that runs it, strips them, and
writes a wheel of the `gatherjit` package. The module links gatherjit's
compiler and LLVM statically; oneTBB (Debian's libtbb12) is its one shared
dependency beside the C and C++ runtimes.

GATHERJIT_WHEEL_BUILD_DIR chooses the CMake build directory (default:
build-wheel in the source tree, kept so that a second build is
incremental); CMAKE_ARGS adds configure arguments.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "gatherjit"


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(gatherjit VERSION ([0-9.]+)", f.read()).group(1)


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{platform}"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            "Summary: Tensor gather operators (DirectML, ONNX) compiled to native code at "
            "run time\nLicense: Apache-2.0\nRequires-Python: >=3.9\nRequires-Dist: numpy\n")


def _build():
    build = os.environ.get("GATHERJIT_WHEEL_BUILD_DIR", os.path.join(ROOT, "build-wheel"))
    configure = ["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython3_EXECUTABLE={sys.executable}", "-DGATHERJIT_BUILD_TESTS=OFF",
                 "-DGATHERJIT_BUILD_BENCH=OFF", "-DGATHERJIT_BUILD_EXAMPLES=OFF"]
    configure += os.environ.get("CMAKE_ARGS", "").split()
    subprocess.run(configure, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", build, "--target", "gatherjit_python",
                    "gatherjit_epilogue"], check=True, stdout=sys.stderr)
    return build


def _files(build, staging):
    """The package's files, stripped where they are native: (name in the
    wheel, path on disk)."""
    package = os.path.join(build, "python", NAME)
    out = []
    for name in sorted(os.listdir(package)):
        if name == "__pycache__":
            continue
        out.append((f"{NAME}/{name}", os.path.join(package, name)))
    out.append((f"{NAME}/gatherjit-epilogue", os.path.join(build, "gatherjit-epilogue")))
    stripped = []
    for arc, path in out:
        if arc.endswith(".so") or arc.endswith("gatherjit-epilogue"):
            copy = os.path.join(staging, os.path.basename(path))
            shutil.copy2(path, copy)
            if shutil.which("strip"):
                subprocess.run(["strip", "--strip-unneeded", copy], check=True)
            path = copy
        stripped.append((arc, path))
    return stripped


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build()
    version = _version()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{_tag()}.whl"
    staging = os.path.join(build, "wheel-staging")
    os.makedirs(staging, exist_ok=True)
    target = os.path.join(wheel_directory, wheel_name)
    records = []
    with zipfile.ZipFile(target + ".part", "w", zipfile.ZIP_DEFLATED) as whl:
        def add(arc, data, mode=0o644):
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (mode | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            records.append(_record_line(arc, data))

        for arc, path in _files(build, staging):
            with open(path, "rb") as f:
                data = f.read()
            add(arc, data, 0o755 if os.access(path, os.X_OK) else 0o644)
        add(f"{dist_info}/METADATA", _metadata().encode())
        add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: gatherjit_build\n"
                                   f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode())
        records.append(f"{dist_info}/RECORD,,")
        whl.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    os.replace(target + ".part", target)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{NAME}-{_version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return dist_info
