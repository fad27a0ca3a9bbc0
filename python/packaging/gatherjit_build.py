"""The PEP 517 build backend of the gatherjit Python package.

`pip install .`, `pip install -e .` and `python3 -m build --no-isolation`
call it from the repository root. It needs nothing beyond the standard
library: it configures and builds the project's CMake targets for the
Python package (the `_native` module and the `gatherjit-epilogue` helper,
Release, tests and benchmarks off) with the interpreter that runs it,
strips them, and writes a wheel of the `gatherjit` package. The module
links gatherjit's compiler and LLVM statically; oneTBB (Debian's libtbb12)
is its one shared dependency beside the C and C++ runtimes.

The source distribution holds the files git tracks (in a checkout), or
every file that .gitignore does not name (in an unpacked source
distribution), under gatherjit-VERSION/, with its PKG-INFO. The editable
wheel (PEP 660) holds no package: an import hook finds gatherjit's Python
files in the source tree, so an edit takes effect at the next import, and
its native module in the build directory, which `pip install -e .` again
rebuilds.

GATHERJIT_WHEEL_BUILD_DIR chooses the CMake build directory (default:
build-wheel in the source tree, kept so that a second build is
incremental); CMAKE_ARGS adds configure arguments (split as a shell splits
them, quotes kept together).
"""

import base64
import fnmatch
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
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
            "run time\nLicense: Apache-2.0\nRequires-Python: >=3.9\nRequires-Dist: numpy\n"
            "Provides-Extra: dask\nRequires-Dist: dask[array]; extra == \"dask\"\n"
            "Provides-Extra: torch\nRequires-Dist: torch; extra == \"torch\"\n")


def _build():
    build = os.path.abspath(os.environ.get("GATHERJIT_WHEEL_BUILD_DIR") or
                            os.path.join(ROOT, "build-wheel"))
    configure = ["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython3_EXECUTABLE={sys.executable}", "-DGATHERJIT_BUILD_TESTS=OFF",
                 "-DGATHERJIT_BUILD_BENCH=OFF", "-DGATHERJIT_BUILD_EXAMPLES=OFF"]
    configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
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


def _write_then_rename(target, write):
    """Calls write(path) for a temporary path beside target, then renames it
    to target: never a partial file, and none left behind by an error."""
    part = target + ".part"
    try:
        write(part)
        os.replace(part, target)
    except BaseException:
        if os.path.exists(part):
            os.unlink(part)
        raise


def _write_wheel(wheel_directory, files):
    """Writes a wheel of the files, (name in the wheel, bytes, executable),
    with its metadata and record; returns its file name."""
    version = _version()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{_tag()}.whl"

    def write(path):
        records = []
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
            def add(arc, data, executable=False):
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                whl.writestr(info, data)
                records.append(_record_line(arc, data))

            for arc, data, executable in files:
                add(arc, data, executable)
            add(f"{dist_info}/METADATA", _metadata().encode())
            add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: gatherjit_build\n"
                                       f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode())
            record = "\n".join(records + [f"{dist_info}/RECORD,,"]) + "\n"
            add(f"{dist_info}/RECORD", record.encode())

    _write_then_rename(os.path.join(wheel_directory, wheel_name), write)
    return wheel_name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build()
    staging = os.path.join(build, "wheel-staging")
    os.makedirs(staging, exist_ok=True)
    files = []
    for arc, path in _files(build, staging):
        with open(path, "rb") as f:
            files.append((arc, f.read(), os.access(path, os.X_OK)))
    return _write_wheel(wheel_directory, files)


# The editable wheel's import hook: `gatherjit` is the source tree's
# package, its __path__ the source directory and then the build's (where
# _native is; the build's copies of the Python files come second). The
# epilogue helper is found in the build directory, which the module names
# (EpilogueProcess.cpp's GATHERJIT_BUILD_DIR).
_EDITABLE_FINDER = '''"""gatherjit, installed editable from {source}."""
import importlib.util
import sys

SOURCE = {source!r}
BUILT = {built!r}


class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "gatherjit":
            return None
        return importlib.util.spec_from_file_location(
            name, SOURCE + "/__init__.py", submodule_search_locations=[SOURCE, BUILT])


def install():
    if _Finder not in sys.meta_path:
        sys.meta_path.append(_Finder)
'''


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build()
    finder = _EDITABLE_FINDER.format(source=os.path.join(ROOT, "python", NAME),
                                     built=os.path.join(build, "python", NAME))
    return _write_wheel(wheel_directory, [
        (f"_{NAME}_editable.py", finder.encode(), False),
        (f"_{NAME}_editable.pth", f"import _{NAME}_editable; _{NAME}_editable.install()\n".encode(),
         False)])


def _ignored(path, patterns):
    """Whether .gitignore's patterns (anchored, as the project's are:
    "/build*/", "/bench/results/*.tmp") name the path (a folder's ends
    with "/") or a folder above it."""
    parts = path.split("/")
    for pattern in patterns:
        folder = pattern.endswith("/")
        pattern = pattern.strip("/")
        depth = pattern.count("/") + 1
        if len(parts) < depth + folder:
            continue
        if fnmatch.fnmatchcase("/".join(parts[:depth]), pattern):
            return True
    return False


def _source_files():
    """The source distribution's files, relative to the root: git's tracked
    files where the root is a checkout, else every file .gitignore does not
    name (and no __pycache__)."""
    if os.path.exists(os.path.join(ROOT, ".git")) and shutil.which("git"):
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                                stdout=subprocess.PIPE).stdout.decode().split("\0")
        return sorted(f for f in listed if f and os.path.isfile(os.path.join(ROOT, f)))
    patterns = []
    if os.path.exists(os.path.join(ROOT, ".gitignore")):
        with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as f:
            patterns = [line.strip() for line in f if line.strip() and line[0] not in "#!"]
    files = []
    for folder, dirs, names in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs
                         if d not in ("__pycache__", ".git")
                         and not _ignored(rel + d + "/", patterns))
        files += [rel + n for n in names
                  if not _ignored(rel + n, patterns) and rel + n != "PKG-INFO"]
    return sorted(files)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "1577836800"))  # 2020-01-01

    def entry(name, mode, size=0):
        info = tarfile.TarInfo(f"{base}/{name}")
        info.mode, info.size, info.mtime = mode, size, mtime
        return info

    def write(path):
        with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            metadata = _metadata().encode()
            tar.addfile(entry("PKG-INFO", 0o644, len(metadata)), io.BytesIO(metadata))
            for name in _source_files():
                source = os.path.join(ROOT, name)
                mode = 0o755 if os.access(source, os.X_OK) else 0o644
                with open(source, "rb") as f:
                    tar.addfile(entry(name, mode, os.path.getsize(source)), f)

    _write_then_rename(os.path.join(sdist_directory, base + ".tar.gz"), write)
    return base + ".tar.gz"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{NAME}-{_version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return dist_info


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return []
