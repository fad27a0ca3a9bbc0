"""The package's build backend (python/packaging/gatherjit_build.py): its
source distribution holds the repository's files and builds again from an
unpacked copy, and its editable wheel imports the source tree's Python
files with the build's native module."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import numpy as np
import pytest

import gatherjit as gj

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKEND = os.path.join(ROOT, "python", "packaging", "gatherjit_build.py")


def backend_at(path, name):
    """The backend module at path (each tree's finds its own root)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def members(sdist):
    """{name: (mode, bytes)} of a source distribution's files."""
    with tarfile.open(sdist) as tar:
        return {m.name: (m.mode, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()}


def tracked_files():
    if not os.path.exists(os.path.join(ROOT, ".git")) or not shutil.which("git"):
        pytest.skip("the source tree is not a git checkout")
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))}


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    tracked = tracked_files()
    out = tmp_path_factory.mktemp("sdist")
    name = backend_at(BACKEND, "gatherjit_build_checkout").build_sdist(str(out))
    return tracked, out / name


def test_sdist_holds_every_tracked_file_and_its_metadata(sdist):
    tracked, path = sdist
    base = f"gatherjit-{gj.__version__}"
    assert path.name == base + ".tar.gz"
    files = members(path)
    assert set(files) == {f"{base}/{f}" for f in tracked} | {f"{base}/PKG-INFO"}
    info = files[f"{base}/PKG-INFO"][1].decode()
    assert "Name: gatherjit\n" in info and f"Version: {gj.__version__}\n" in info
    for f in tracked:
        mode, data = files[f"{base}/{f}"]
        with open(os.path.join(ROOT, f), "rb") as source:
            assert data == source.read(), f
        assert bool(mode & 0o111) == os.access(os.path.join(ROOT, f), os.X_OK), f
    assert files[f"{base}/.ci/run"][0] == 0o755
    assert not [p for p in os.listdir(path.parent) if p.endswith(".part")]


def test_an_unpacked_sdist_packs_the_same_files_without_its_builds(sdist, tmp_path):
    _, path = sdist
    with tarfile.open(path) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    tree = tmp_path / f"gatherjit-{gj.__version__}"
    # What a build leaves in the tree, which .gitignore names.
    for junk in ["build-wheel/python/gatherjit/_native.so", "dist/gatherjit.whl",
                 "bench/results/2026-01-01.json.tmp", "python/gatherjit/__pycache__/a.pyc"]:
        (tree / junk).parent.mkdir(parents=True, exist_ok=True)
        (tree / junk).write_bytes(b"built")
    again = tmp_path / "again"
    again.mkdir()
    unpacked = backend_at(str(tree / "python" / "packaging" / "gatherjit_build.py"),
                          "gatherjit_build_unpacked")
    name = unpacked.build_sdist(str(again))
    assert members(again / name) == members(path)


def test_the_editable_wheel_imports_the_sources_with_the_built_module(tmp_path, monkeypatch):
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(gj.__file__))))
    backend = backend_at(BACKEND, "gatherjit_build_editable")
    monkeypatch.setattr(backend, "_build", lambda: build)
    name = backend.build_editable(str(tmp_path))
    assert name.startswith(f"gatherjit-{gj.__version__}-") and name.endswith(".whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(tmp_path / name) as whl:
        assert not [n for n in whl.namelist() if n.startswith("gatherjit/")]
        whl.extractall(site)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = (
        "import site, sys; site.addsitedir(sys.argv[1])\n"
        "import numpy as np, gatherjit, gatherjit.bench\n"
        "print(gatherjit.__file__); print(gatherjit._native.__file__)\n"
        "print(gatherjit.bench.__file__)\n"
        "print(gatherjit.take(np.arange(5.0), np.array([4, -5, 2])).tolist())\n")
    out = subprocess.run([sys.executable, "-c", script, str(site)], env=env, cwd=str(tmp_path),
                         check=True, stdout=subprocess.PIPE, text=True).stdout.splitlines()
    source = os.path.join(ROOT, "python", "gatherjit")
    assert out[0] == os.path.join(source, "__init__.py")
    assert out[1].startswith(os.path.join(build, "python", "gatherjit", "_native"))
    assert out[2] == os.path.join(source, "bench.py")
    assert out[3] == "[4.0, 0.0, 2.0]"


def test_the_metadata_says_what_pyproject_declares(sdist):
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    _, path = sdist
    info = members(path)[f"gatherjit-{gj.__version__}/PKG-INFO"][1].decode().splitlines()
    fields = [tuple(line.split(": ", 1)) for line in info]
    assert ("Name", project["name"]) in fields
    assert ("Summary", project["description"]) in fields
    assert ("Requires-Python", project["requires-python"]) in fields
    declared = list(project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        assert ("Provides-Extra", extra) in fields
        declared += [f'{r}; extra == "{extra}"' for r in requirements]
    assert sorted(v for k, v in fields if k == "Requires-Dist") == sorted(declared)


def test_the_build_directory_is_absolute_and_cmake_args_split_as_a_shell_splits_them(
        monkeypatch, tmp_path):
    backend = backend_at(BACKEND, "gatherjit_build_args")
    calls = []
    monkeypatch.setattr(backend.subprocess, "run", lambda args, **kw: calls.append(args))
    # A relative build directory, which the editable wheel's hook reads
    # from wherever the user's process runs, is made absolute.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GATHERJIT_WHEEL_BUILD_DIR", "wheel-build")
    monkeypatch.setenv("CMAKE_ARGS", "-DCMAKE_CXX_FLAGS='-O2 -g0'  -DGATHERJIT_EPILOGUES=OFF")
    build = str(tmp_path / "wheel-build")
    assert backend._build() == build
    configure = calls[0]
    assert configure[:5] == ["cmake", "-S", ROOT, "-B", build]
    assert configure[-2:] == ["-DCMAKE_CXX_FLAGS=-O2 -g0", "-DGATHERJIT_EPILOGUES=OFF"]
