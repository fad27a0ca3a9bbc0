"""device="cuda" through the test suite's fake CUDA driver
(tests/fakecuda/FakeCuda.c, whose device memory is host memory and whose
launches run nothing): the operands are taken where they lie through
__cuda_array_interface__, the kernel is made for the device and launched
with the plan's grid, a bad index the device reports is an IndexError
naming it, and host arrays are refused rather than copied."""

import os
from types import SimpleNamespace

import numpy as np
import pytest

FAKE = os.environ.get("GATHERJIT_FAKE_CUDA_LIBRARY")
pytestmark = pytest.mark.skipif(not FAKE, reason="the fake CUDA driver was not built")


class DeviceArray:
    """A numpy array presented as device memory (the fake device's memory is
    the host's)."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.a.shape, "typestr": self.a.dtype.str,
                "data": (self.a.ctypes.data, False),
                "strides": self.a.strides if not self.a.flags.c_contiguous else None,
                "version": 3}


class DLPackArray:
    """A numpy array exported as a DLPack capsule of CUDA memory, as JAX or
    CuPy export theirs (strides in elements, as DLPack counts them)."""

    def __init__(self, a, code, device=(2, 0)):
        import ctypes
        self.a = a
        self.code = code
        self.device = device
        self.streams = []

        class Device(ctypes.Structure):
            _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]

        class DataType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                        ("lanes", ctypes.c_uint16)]

        class Managed(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                        ("dtype", DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)),
                        ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p)]

        # The base pointer 16 bytes early, put right by byte_offset.
        self.shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        self.strides = (ctypes.c_int64 * a.ndim)(*(st // a.itemsize for st in a.strides))
        self.managed = Managed(a.ctypes.data - 16, Device(*device), a.ndim,
                               DataType(code, a.itemsize * 8, 1), self.shape, self.strides, 16,
                               None, None)
        self.ctypes = ctypes

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        new = self.ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = self.ctypes.py_object, [self.ctypes.c_void_p,
                                                            self.ctypes.c_char_p,
                                                            self.ctypes.c_void_p]
        return new(self.ctypes.addressof(self.managed), b"dltensor", None)


@pytest.fixture()
def gj(tmp_path, monkeypatch):
    monkeypatch.setenv("GATHERJIT_CUDA_DRIVER", FAKE)
    monkeypatch.setenv("GATHERJIT_FAKE_CUDA", "ok")
    monkeypatch.setenv("GATHERJIT_FAKE_CUDA_LOG", str(tmp_path / "driver.log"))
    monkeypatch.delenv("GATHERJIT_FAKE_CUDA_KEY", raising=False)
    import gatherjit
    return gatherjit


def test_a_device_gather_launches_on_the_operands_where_they_lie(gj, tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 2], [0, 1], [1, 1]], dtype=np.int64)
    out = DeviceArray(np.full((3, 2), -1, dtype=np.float32))
    got = gj.take_along_axis(DeviceArray(data), DeviceArray(idx), 1, out=out, device="cuda")
    assert got is out
    log = (tmp_path / "driver.log").read_text()
    assert ".target sm_86" in log
    # The shape's family kernel (the first shape of its family compiles
    # it): one block for its 6 elements, its sizes passed with the launch.
    assert "family" in log and "grid=1 block=256 shared=0 sizes=3,2" in log
    # Strided views are described, not copied.
    view = DeviceArray(np.arange(48, dtype=np.float32).reshape(6, 8)[::2, ::2])
    gj.take(view, DeviceArray(np.array([2, 0], dtype=np.int32)), 0,
            out=DeviceArray(np.zeros((2, 4), np.float32)), device="cuda:0")


def test_take_along_axis_broadcasts_on_the_device_as_on_the_cpu(gj, tmp_path):
    # numpy's rule: indices of one row against data of three give three
    # rows (the CPU's result), not ONNX's one.
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 0]], dtype=np.int64)
    assert gj.take_along_axis(data, idx, 1).shape == (3, 2)
    out = DeviceArray(np.zeros((3, 2), dtype=np.float32))
    assert gj.take_along_axis(DeviceArray(data), DeviceArray(idx), 1, out=out,
                              device="cuda") is out
    assert "sizes=3,2" in (tmp_path / "driver.log").read_text()
    with pytest.raises(ValueError, match=r"out has shape \(1, 2\); the result's is \(3, 2\)"):
        gj.take_along_axis(DeviceArray(data), DeviceArray(idx), 1,
                           out=DeviceArray(np.zeros((1, 2), np.float32)), device="cuda")
    with pytest.raises(IndexError, match="do not broadcast at dimension 0"):
        gj.take_along_axis(DeviceArray(data), DeviceArray(np.zeros((2, 2), np.int64)), 1,
                           out=DeviceArray(np.zeros((3, 2), np.float32)), device="cuda")


def test_the_devices_bad_index_is_an_index_error(gj, monkeypatch):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 2], [0, 1], [1, 9]], dtype=np.int64)
    monkeypatch.setenv("GATHERJIT_FAKE_CUDA_KEY", "5")
    with pytest.raises(IndexError, match="9"):
        gj.take_along_axis(DeviceArray(data), DeviceArray(idx), 1,
                           out=DeviceArray(np.zeros((3, 2), np.float32)), device="cuda")


def test_dlpack_exporters_of_cuda_memory_are_taken_where_they_lie(gj, monkeypatch):
    # Strided indices (a view every other column), int32 by DLPack's code 0;
    # the device reports key 3 (output [1, 1]): the error names the index
    # read through the capsule's pointer, offset and strides.
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    wide = np.array([[3, 7, 2, 7], [0, 7, 9, 7], [1, 7, 1, 7]], dtype=np.int32)
    idx = DLPackArray(wide[:, ::2], 0)
    out = DLPackArray(np.zeros((3, 2), np.float32), 2)
    monkeypatch.setenv("GATHERJIT_FAKE_CUDA_KEY", "3")
    with pytest.raises(IndexError, match=r"IndicesTensor\[1,1\] = 9 \(position 3\)"):
        gj.take_along_axis(DLPackArray(data, 2), idx, 1, out=out, device="cuda")
    # Asked for the legacy default stream, where the launch goes.
    assert idx.streams == [1]
    monkeypatch.delenv("GATHERJIT_FAKE_CUDA_KEY")
    assert gj.take_along_axis(DLPackArray(data, 2), idx, 1, out=out, device="cuda") is out
    # DLPack memory on the host is refused, not copied.
    with pytest.raises(TypeError, match=r"ndarray in the host's memory \(DLPack device type 1\), "
                                        "not an array on a CUDA"):
        gj.take(np.arange(4.0), np.arange(2), 0, out=out, device="cuda")


def test_operands_run_on_their_own_device_and_never_on_another(gj, tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 2], [0, 1], [1, 1]], dtype=np.int64)
    out = np.zeros((3, 2), np.float32)

    def on(device, a, code=2):
        return DLPackArray(a, code, device)

    # Operands on two devices, or on another than device= names: refused
    # before anything is compiled or launched.
    with pytest.raises(ValueError,
                       match=r"\(data on cuda:0, indices on cuda:1, out on cuda:0\); a gather"):
        gj.take_along_axis(on((2, 0), data), on((2, 1), idx, 0), 1, out=on((2, 0), out),
                           device="cuda")
    with pytest.raises(ValueError, match=r"data on cuda:0, out on cuda:1"):
        gj.take_along_axis(on((2, 0), data), DeviceArray(idx), 1, out=on((2, 1), out),
                           device="cuda:0")
    with pytest.raises(ValueError, match=r"device = 'cuda:0', but data is on cuda:1"):
        gj.take_along_axis(on((2, 1), data), on((2, 1), idx, 0), 1, out=on((2, 1), out),
                           device="cuda:0")
    # An array of the CUDA array interface names its device as PyTorch's
    # tensors (device.index) or CuPy's arrays (device.id) do.
    for device in (SimpleNamespace(type="cuda", index=1), SimpleNamespace(id=1)):
        tensor = DeviceArray(idx)
        tensor.device = device
        with pytest.raises(ValueError, match=r"device = 'cuda:0', but indices is on cuda:1"):
            gj.take_along_axis(DeviceArray(data), tensor, 1, out=DeviceArray(out),
                               device="cuda:0")
    with pytest.raises(ValueError, match=r"data names device -1, which is no CUDA device's"):
        gj.take_along_axis(on((2, -1), data), DeviceArray(idx), 1, out=DeviceArray(out),
                           device="cuda")
    assert not (tmp_path / "driver.log").exists()
    # device="cuda" is the operands' device: here device 1, which the fake
    # driver does not have.
    with pytest.raises(ValueError, match="no CUDA device 1: the driver has 1"):
        gj.take_along_axis(on((2, 1), data), on((2, 1), idx, 0), 1, out=on((2, 1), out),
                           device="cuda")
    # Managed memory (kDLCUDAManaged) is read where it lies, as device
    # memory is; the interface's arrays name no device and go with the rest.
    got = gj.take_along_axis(on((13, 0), data), DeviceArray(idx), 1, out=on((13, 0), out),
                             device="cuda")
    assert "launch" in (tmp_path / "driver.log").read_text() and got.a is out
    # One runtime answers for "cuda" and "cuda:0", the one that ran it.
    assert gj.stats(device="cuda") == gj.stats(device="cuda:0")
    assert gj.stats(device="cuda")["misses"] >= 1
    with pytest.raises(TypeError, match=r"in pinned host memory \(DLPack device type 3\)"):
        gj.take_along_axis(on((3, 0), data), DeviceArray(idx), 1, out=DeviceArray(out),
                           device="cuda")


def test_host_arrays_and_bad_devices_are_refused(gj):
    data = np.arange(4, dtype=np.float32)
    idx = np.array([0, 1])
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        gj.take(data, idx, 0, device="cuda")
    with pytest.raises(TypeError, match="needs out="):
        gj.take(DeviceArray(data), DeviceArray(idx), 0, device="cuda")
    with pytest.raises(ValueError, match="'gpu'"):
        gj.take(DeviceArray(data), DeviceArray(idx), 0, device="gpu")
    # Named in Python's words, not the native layer's options.
    for bad in ("cuda:x", "cuda:-1", "cuda:", "cuda:1234", "cuda:\u0663"):
        with pytest.raises(ValueError, match=r"device = '.*' is not 'cpu', 'cuda' or 'cuda:N'"):
            gj.take(DeviceArray(data), DeviceArray(idx), 0, device=bad)
        with pytest.raises(ValueError, match=r"is not 'cpu', 'cuda' or 'cuda:N'"):
            gj.stats(device=bad)
    with pytest.raises(ValueError, match="out has shape"):
        gj.take(DeviceArray(data), DeviceArray(idx), 0,
                out=DeviceArray(np.zeros(3, np.float32)), device="cuda")


class Hostile:
    """Protocol objects that break their protocols."""

    def __init__(self, device=(2, 0), capsule=None, iface=None):
        self.device, self.capsule = device, capsule
        if iface is not None:
            self.__cuda_array_interface__ = iface

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        if isinstance(self.capsule, Exception):
            raise self.capsule
        return self.capsule


def test_broken_protocol_objects_are_errors_that_name_the_argument(gj):
    good = DeviceArray(np.arange(4, dtype=np.float32))
    out = DeviceArray(np.zeros(2, np.float32))
    cases = [
        (Hostile(device="junk"), r"indices\.__dlpack_device__\(\) did not give"),
        (Hostile(device=(2, 0), capsule=42), r"indices\.__dlpack__\(stream=1\) did not give"),
        (Hostile(capsule=TypeError("no stream argument")), r"indices\.__dlpack__.*no stream"),
    ]
    for bad, message in cases:
        with pytest.raises(TypeError, match=message):
            gj.take(good, bad, 0, out=out, device="cuda")
    # A capsule already used ("used_dltensor"), as a consumer leaves it.
    used = DLPackArray(np.arange(2, dtype=np.int64), 0).__dlpack__()
    import ctypes
    rename = ctypes.pythonapi.PyCapsule_SetName
    rename.argtypes = [ctypes.py_object, ctypes.c_char_p]
    rename(used, b"used_dltensor")
    with pytest.raises(TypeError, match=r"indices\.__dlpack__.*'dltensor'"):
        gj.take(good, Hostile(capsule=used), 0, out=out, device="cuda")
    # A CUDA array interface without its fields.
    holey = type("Holey", (), {"__cuda_array_interface__": {"shape": (2,)}})()
    with pytest.raises(TypeError, match=r"data\.__cuda_array_interface__ is not.*typestr"):
        gj.take(holey, DeviceArray(np.arange(2)), 0, out=out, device="cuda")


@pytest.mark.skipif(not __import__("gatherjit").EPILOGUES,
                    reason="built without clang's libraries")
def test_element_row_and_checked_epilogues_are_fused_into_the_device_kernel(gj, tmp_path,
                                                                         monkeypatch):
    # FLOAT16 in, the epilogue's FLOAT32 out: out= must have the fused type;
    # row epilogues and checked ones too.
    data = DeviceArray(np.arange(12, dtype=np.float16).reshape(3, 4))
    idx = DeviceArray(np.array([[3, 2], [0, 1], [1, 1]], dtype=np.int64))
    half = gj.Epilogue("float f(float16_t x) { return (float)x * 0.5f; }", "f")
    out = DeviceArray(np.full((3, 2), -1, dtype=np.float32))
    assert gj.take_along_axis(data, idx, 1, out=out, device="cuda", epilogue=half) is out
    assert "launch gj_b2_" in (tmp_path / "driver.log").read_text()
    with pytest.raises(ValueError, match="float32 array of shape \\(3, 2\\) \\(the epilogue's"):
        gj.take_along_axis(data, idx, 1, out=DeviceArray(np.zeros((3, 2), np.float16)),
                           device="cuda", epilogue=half)
    # A row epilogue: rows of 4 FLOAT16 into rows of 1 FLOAT32.
    first = gj.Epilogue("void r(const float16_t *row, float *out) { out[0] = row[0]; }", "r",
                        row_out=1)
    rows = DeviceArray(np.full((2, 1), -1, np.float32))
    assert gj.take(data, DeviceArray(np.array([0, 2])), 0, out=rows, device="cuda",
                   epilogue=first) is rows
    assert "launch gj_b2_" in (tmp_path / "driver.log").read_text().split(".target")[-1]
    with pytest.raises(ValueError, match="float32 array of shape \\(2, 1\\) \\(the epilogue's"):
        gj.take(data, DeviceArray(np.array([0, 2])), 0, device="cuda", epilogue=first,
                out=DeviceArray(np.zeros((2, 4), np.float32)))
    # A checked epilogue; a fault the device reports (the fake device's
    # status word: element 4 faulted) is the CPU's ValueError.
    checked = gj.Epilogue("float f(float16_t x) { return (float)x; }", "f", checked=True)
    out = DeviceArray(np.zeros((3, 2), np.float32))
    assert gj.take_along_axis(data, idx, 1, out=out, device="cuda", epilogue=checked) is out
    monkeypatch.setenv("GATHERJIT_FAKE_CUDA_KEY", str((1 << 63) | 4))
    with pytest.raises(ValueError, match="^the checked epilogue read or wrote outside"):
        gj.take_along_axis(data, idx, 1, out=out, device="cuda", epilogue=checked)


def test_a_second_process_loads_device_kernels_from_the_cache_directory(gj, tmp_path):
    import subprocess
    import sys
    script = (
        "import numpy as np, gatherjit as gj, test_device as t\n"
        "data = t.DeviceArray(np.zeros((3, 4), np.float32))\n"
        "ids = t.DeviceArray(np.zeros((3, 2), np.int64))\n"
        "gj.take_along_axis(data, ids, 1, out=t.DeviceArray(np.zeros((3, 2), np.float32)),\n"
        "                   device='cuda')\n"
        "s = gj.stats(device='cuda'); c = gj.stats()\n"
        "print(s['family_kernels'], s['disk_loads'], s['disk_stores'], c['disk_stores'])\n")
    env = dict(os.environ, GATHERJIT_CACHE_DIR=str(tmp_path / "kernels"),
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + sys.path))
    env.pop("GATHERJIT_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0] == ["1", "0", "1", "0"]  # the family's PTX compiled and stored
    assert runs[1] == ["1", "1", "0", "0"]  # loaded: no LLVM
    with pytest.raises(ValueError, match="'gpu'"):
        gj.stats(device="gpu")
    assert gj.stats(device=None).keys() == gj.stats().keys()  # the CPU's, as gathers take None
