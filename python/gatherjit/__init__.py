"""gatherjit: gather operators compiled to native code at run time.

numpy-style functions (each call finds its kernel in the process's cache,
compiling it the first time a layout is seen):

    take_along_axis(data, indices, axis, out=None, mode="raise")  # GatherElements
    take(data, indices, axis=0, out=None, mode="raise")           # Gather
    gather_nd(data, indices, batch_dims=0, out=None, mode="raise")  # GatherND

and kernels compiled once for calls that repeat:

    k = compile("gather_elements", data=((4096, 4096), "float32"),
                indices=((4096, 4096), "int64"), axis=1)
    k(data, indices, out=out)

Arrays are used where they lie: any strides (a transposed or sliced view is
not copied), the output written in place when `out` is given. mode="raise"
raises IndexError naming the first out-of-range index; mode="clip" is
numpy's (too large reads the last element, negative the first); mode="clamp"
wraps negative indices once and clamps the rest into range (DirectML's).
Bad shapes, dtypes and axes raise ValueError. The kernels run with the GIL
released.

Any of them fuses a C function into the kernel with `epilogue=`:

    dequant = Epilogue(source, "dequant", row_out=128)
    rows = take(table, ids, epilogue=dequant)

(see Epilogue).
"""

import inspect as _inspect
import json as _json
import operator as _operator
import os as _os
import sys as _sys

import numpy as _np

from . import _native
from ._native import Kernel

__all__ = ["take_along_axis", "take", "gather_nd", "compile", "Epilogue", "Kernel", "set_threads",
           "set_specialize", "set_epilogue_limits", "set_cache_dir", "cache_dir", "set_output_pool",
           "wait_background", "stats"]

#: Whether this build compiles epilogues (built with clang's libraries).
EPILOGUES = _native.epilogues_supported
__version__ = _native.__version__


class Epilogue:
    """A C function clang compiles in-process and the kernel inlines into its
    loop (freestanding C: no library calls, no mutable globals).

    `function` names one of

        OUT f(IN x)                        applied to every gathered element
        OUT f(IN x, const P *params)
        void f(const IN *row, OUT *out)    applied to every gathered row
        void f(const IN *row, OUT *out, const P *params)

    with IN the data's element type and OUT the result's, as C types (float,
    double, float16_t, bfloat16_t, int8_t ... uint64_t, bool). A row is the
    data's last dimension, GJ_ROW_IN elements (a macro the source reads),
    and the result's rows have `row_out` elements (GJ_ROW_OUT; None: as many
    as the data's). `params` (bytes, or any buffer such as a numpy array) is
    copied into the kernel as a constant. A bad epilogue raises ValueError
    with clang's first error as FILE:LINE:COL: error: ...

    `checked=True` checks every memory access the function makes at run
    time: one outside its row, output row, parameters and own variables (or
    an integer division by zero) raises ValueError from the call instead of
    reading or writing there. Casts of integers to pointers, calls through
    function pointers and recursion are refused when it compiles.
    """

    __slots__ = ("source", "function", "params", "row_out", "file_name", "checked")

    def __init__(self, source, function, params=None, row_out=None, file_name="epilogue.c",
                 checked=False):
        self.source = str(source)
        self.function = str(function)
        self.params = b"" if params is None else bytes(memoryview(params).cast("B"))
        self.row_out = None if row_out is None else int(row_out)
        if self.row_out is not None and self.row_out <= 0:
            raise ValueError(f"epilogue: row_out = {row_out} is not a positive length")
        self.file_name = str(file_name)
        self.checked = bool(checked)

    @classmethod
    def from_file(cls, path, function, params=None, row_out=None, checked=False):
        """The epilogue in the C file at `path` (its name in diagnostics)."""
        path = _os.fspath(path)  # a path, never a file descriptor open() would close
        with open(path, encoding="utf-8") as f:
            return cls(f.read(), function, params, row_out,
                       file_name=_os.fsdecode(path), checked=checked)

    def _as_tuple(self):
        return (self.source, self.function, self.file_name, self.params, self.row_out or 0,
                self.checked)

    def __eq__(self, other):
        return isinstance(other, Epilogue) and self._as_tuple() == other._as_tuple()

    def __hash__(self):
        return hash(self._as_tuple())

    def __getstate__(self):
        return self._as_tuple()

    def __setstate__(self, state):
        source, function, file_name, params, row_out, checked = state
        self.__init__(source, function, params, row_out or None, file_name, checked)

    def __repr__(self):
        return (f"Epilogue(function={self.function!r}, file_name={self.file_name!r}, "
                f"params={len(self.params)} bytes, row_out={self.row_out}, checked={self.checked})")


def _fused(epilogue):
    if epilogue is None:
        return None
    if not isinstance(epilogue, Epilogue):
        raise TypeError(f"epilogue must be a gatherjit.Epilogue, not {type(epilogue).__name__}")
    return epilogue._as_tuple()


_Tensor = None  # torch.Tensor, once a tensor has been seen (for _gather's fast path)


def _torch_tensor(x):
    global _Tensor
    torch = _sys.modules.get("torch")  # never imported here: only its tensors
    if torch is None or not isinstance(x, torch.Tensor):
        return False
    _Tensor = torch.Tensor
    return True


def _array(x, name="data", writable=False):
    """A numpy array viewing `x`'s memory: numpy arrays as they are, PyTorch
    CPU tensors (bfloat16 too) and other DLPack exporters without a copy."""
    if isinstance(x, _np.ndarray):
        if isinstance(x, _np.ma.MaskedArray):
            # Its values alone would be gathered and its mask lost.
            raise TypeError(f"{name} is a numpy masked array; gatherjit gathers plain arrays: "
                            f"pass {name}.filled(...) or {name}.data, and gather "
                            f"numpy.ma.getmaskarray({name}) the same way for the mask")
        return x
    if _torch_tensor(x):
        if x.device.type != "cpu":
            raise ValueError(f"{name} is on {x.device}; gatherjit runs on CPU memory")
        if x.layout != _sys.modules["torch"].strided:
            raise TypeError(f"{name} is a tensor of layout {x.layout}; gatherjit "
                            + ("writes into strided (dense) tensors" if writable else
                               f"gathers strided (dense) tensors: pass {name}.to_dense()"))
        if writable and x.requires_grad:
            raise RuntimeError(f"{name} requires grad: gatherjit's functions with out= do not "
                               "support automatic differentiation (as torch's refuse them)")
        if writable and _lazy_view(x):
            raise _lazy_out(name)
        torch = _sys.modules["torch"]
        if getattr(torch._C, "_are_functorch_transforms_active", bool)():
            # Within torch.func's transforms (grad, vmap) a tensor the
            # transform wraps has no memory of its own, and torch's
            # operations return such tensors: a plain operand is viewed
            # below the transforms, and a wrapped one refused.
            if torch._C._functorch.is_functorch_wrapped_tensor(x):
                raise TypeError(f"{name} is a tensor of a torch.func transform (vmap, grad, "
                                "jvp); gatherjit.torch's functions follow those transforms, "
                                "this one reads a tensor's memory")
            with torch._C._DisableFuncTorch():
                return _tensor_array(torch, x)
        return _tensor_array(torch, x)
    if hasattr(x, "__dlpack__"):
        if writable:
            raise ValueError(f"{name}: DLPack gives read-only memory; pass a numpy array or a "
                             "PyTorch tensor to write into")
        try:
            return _np.from_dlpack(x)
        except Exception as e:
            # Types numpy's DLPack reader lacks (bfloat16) or the exporter
            # cannot export (JAX's float8s): its own numpy view, where it
            # has one (JAX's and ml_dtypes' types move as their bytes).
            if not hasattr(x, "__array__"):
                raise TypeError(f"{name}: its DLPack capsule is not one numpy reads ({e}), "
                                "and it has no __array__") from e
    if writable:
        raise TypeError(f"{name} must be a numpy array or a PyTorch tensor to write into, "
                        f"not {type(x).__name__}")
    array = _np.asarray(x)
    if name == "indices" and array.size == 0 and array.dtype == _np.float64:
        # An empty list of indices is numpy's too: it selects nothing.
        return array.astype(_np.intp)
    return array


def _lazy_view(t):
    """Whether PyTorch tensor `t` is a view that conjugates or negates its
    memory's values when read (PyTorch 1.10 and later): its memory holds
    other values than it shows."""
    return getattr(t, "is_conj", bool)() or getattr(t, "is_neg", bool)()


def _lazy_out(name):
    return ValueError(f"{name} is a conjugated or negated view, whose memory holds other values "
                      f"than it shows: gather without out= and copy the result in "
                      f"({name}.copy_(result))")


def _tensor_array(torch, x):
    t = x.detach()
    if _lazy_view(t):
        # A conjugated or negated view's memory holds other values than it
        # shows: those are made (copied) first, as torch's own kernels do,
        # in its layout where that has no overlaps (a compiled kernel's).
        try:
            t = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype).copy_(t)
        except RuntimeError:  # an expanded view
            t = t.resolve_conj().resolve_neg()
    dtype = _numpy_dtype_of(t)
    if dtype.kind == "V":  # numpy has no such type: the elements' bytes
        return t.view(getattr(torch, _WORDS[dtype.itemsize])).numpy().view(dtype)
    return t.numpy()


# An integer type of each size of element that numpy lacks a type for, by
# name in both numpy and PyTorch: the elements' bytes are moved as those.
_WORDS = {1: "uint8", 2: "int16", 4: "int32"}


def _numpy_dtype_of(t):
    """The numpy dtype the package views a PyTorch tensor's elements as:
    numpy's own, or a void of their size for bfloat16 (gatherjit's
    BFLOAT16), the one-byte floats (float8 formats) and complex32, which
    numpy lacks; a TypeError for the quantized types, whose values are not
    their bytes alone."""
    torch = _sys.modules["torch"]
    if t.dtype == torch.bfloat16:
        return _np.dtype("V2")
    if (t.is_floating_point() and t.element_size() == 1) or t.dtype == getattr(
            torch, "complex32", None):
        return _np.dtype(f"V{t.element_size()}")
    try:
        return _np.dtype(str(t.dtype).replace("torch.", ""))
    except TypeError:
        raise TypeError(f"a PyTorch tensor of {t.dtype}, which gatherjit does not gather "
                        "(it moves elements whose bytes are their values)") from None


def _result(array, like):
    # A numpy subclass in (np.matrix, a recarray, a unit-carrying array), the
    # same subclass out, made from `like` as numpy makes its takes' and
    # indexing's results (its __array_wrap__); a 0-d one is numpy's scalar.
    if isinstance(like, _np.ndarray) and type(like) is not _np.ndarray:
        wrapped = like.__array_wrap__(_np.asarray(array))
        return wrapped if wrapped.ndim else wrapped[()]
    # A PyTorch tensor in, a PyTorch tensor out (sharing the result's memory).
    if not _torch_tensor(like):
        return array
    torch = _sys.modules["torch"]
    array = _np.asarray(array)  # (a take of one element is numpy's scalar)
    if array.dtype == _np.dtype("V2"):
        return torch.from_numpy(array.view(_np.int16)).view(torch.bfloat16)
    if array.dtype in (_np.dtype("V1"), _np.dtype("V4")):  # float8s', complex32's
        return torch.from_numpy(array.view(_WORDS[array.itemsize])).view(like.dtype)
    return torch.from_numpy(array)


# DLPack's device types whose memory a CUDA kernel reads where it lies:
# kDLCUDA and kDLCUDAManaged; and the names of the others, for the error.
_DL_ON_DEVICE = (2, 13)
_DL_DEVICES = {1: "the host's memory", 3: "pinned host memory", 4: "an OpenCL device",
               7: "a Vulkan device", 8: "a Metal device", 10: "a ROCm device",
               11: "ROCm's pinned host memory", 14: "a oneAPI device"}
# DLPack's type codes (int, uint, float, bfloat, complex, bool) as numpy's
# kinds; bfloat16 is gatherjit's two-byte void, as from PyTorch.
_DL_KINDS = {0: "i", 1: "u", 2: "f", 4: "V", 5: "c", 6: "b"}


def _row_major(shape):
    """The strides, in elements, of a contiguous row-major array of shape."""
    elems = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        elems[d] = elems[d + 1] * shape[d + 1]
    return elems


def _not_on_device(x, name, where):
    return TypeError(f"{name} is a {type(x).__name__}{where}, not an array on a CUDA device (an "
                     "object with __cuda_array_interface__ or a DLPack capsule of CUDA memory, "
                     "such as a PyTorch CUDA tensor); device='cuda' takes no copies of host "
                     "arrays")


def _dlpack_operand(x, name):
    """_device_operand's answer for an object that exports a DLPack capsule of
    CUDA memory (JAX, CuPy, PyTorch), and the capsule, which must live until
    the launch is over (its deleter runs when it is freed)."""
    import ctypes

    class Device(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]

    class DataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16)]

    class Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                    ("dtype", DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("byte_offset", ctypes.c_uint64)]

    try:
        kind, ordinal = (int(v) for v in x.__dlpack_device__())
    except Exception as e:
        raise TypeError(f"{name}.__dlpack_device__() did not give (device type, device id): "
                        f"{e}") from e
    if kind not in _DL_ON_DEVICE:
        where = _DL_DEVICES.get(kind, "memory")
        raise _not_on_device(x, name, f" in {where} (DLPack device type {kind})")
    # Stream 1, the legacy default stream, where the launch goes: the
    # producer orders its own work before it.
    try:
        capsule = x.__dlpack__(stream=1)
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        t = Tensor.from_address(get(capsule, b"dltensor"))
    except Exception as e:
        raise TypeError(f"{name}.__dlpack__(stream=1) did not give an unused DLPack capsule "
                        f"(a PyCapsule named 'dltensor'): {e}") from e
    if not 0 <= t.ndim <= 8 or (t.ndim and not t.shape):
        raise ValueError(f"{name}'s DLPack tensor has {t.ndim} dimensions"
                         f"{'' if t.shape else ' and no shape'}; gatherjit takes 0 to 8")
    letter = _DL_KINDS.get(t.dtype.code)
    if letter is None or t.dtype.lanes != 1 or t.dtype.bits % 8:
        raise TypeError(f"{name}'s DLPack type (code {t.dtype.code}, {t.dtype.bits} bits, "
                        f"{t.dtype.lanes} lanes) is not one gatherjit gathers")
    dtype = _np.dtype("?" if letter == "b" else f"{letter}{t.dtype.bits // 8}")
    shape = tuple(t.shape[d] for d in range(t.ndim))
    elems = [t.strides[d] for d in range(t.ndim)] if t.strides else _row_major(shape)
    return (shape, dtype, elems), (t.data or 0) + t.byte_offset, None, capsule, ordinal


def _device_operand(x, name):
    """(shape, dtype, strides in elements) and the pointer of an object on a
    CUDA device (its __cuda_array_interface__: a PyTorch CUDA tensor,
    CuPy, Numba; or its DLPack capsule), the stream it names, what must
    live until the launch is over, and the device's ordinal where the
    object says it (DLPack's device id, a PyTorch tensor's or CuPy array's
    `device`; the CUDA array interface itself has none), else None."""
    iface = getattr(x, "__cuda_array_interface__", None)
    if iface is None and hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _dlpack_operand(x, name)
    if iface is None:
        raise _not_on_device(x, name, "")
    try:
        dtype = _np.dtype(iface["typestr"])
        shape = tuple(int(s) for s in iface["shape"])
        data = int(iface["data"][0])
        strides = iface.get("strides")
    except Exception as e:
        raise TypeError(f"{name}.__cuda_array_interface__ is not a CUDA array interface "
                        f"(typestr, shape, data, strides): {e!r}") from e
    if strides is None:
        elems = _row_major(shape)
    else:
        if any(st % dtype.itemsize for st in strides):
            raise ValueError(f"{name}'s strides {tuple(strides)} are not whole elements")
        elems = [st // dtype.itemsize for st in strides]
    return (shape, dtype, elems), data, iface.get("stream"), None, _ordinal_of(x)


def _ordinal_of(x):
    """The CUDA device of an array with __cuda_array_interface__, where its
    `device` names it (PyTorch's torch.device, CuPy's Device), else None."""
    dev = getattr(x, "device", None)
    for attr in ("index", "id"):
        ordinal = getattr(dev, attr, None)
        if isinstance(ordinal, int) and not isinstance(ordinal, bool):
            return ordinal
    return None


def _device_of_operands(device, ordinals):
    """The device a gather runs on: device= ("cuda" is the operands' own
    device where they name one, else cuda:0); a ValueError where the
    operands are on different devices, or device= names another."""
    named = {n: o for n, o in ordinals.items() if o is not None}
    for n, o in named.items():
        if o < 0:
            raise ValueError(f"{n} names device {o}, which is no CUDA device's number")
    if len(set(named.values())) > 1:
        where = ", ".join(f"{n} on cuda:{o}" for n, o in named.items())
        raise ValueError(f"the operands are on different devices ({where}); a gather's data, "
                         "indices and out must be on one device")
    if not named:
        return device
    name, ordinal = next(iter(named.items()))
    if device == "cuda":
        return f"cuda:{ordinal}"
    if int(device[5:]) != ordinal:
        raise ValueError(f"device = {device!r}, but {name} is on cuda:{ordinal}")
    return device


# PyTorch CUDA tensors' layouts seen before (op, axis, mode, device= and
# each tensor's device, dtype, shape and strides) -> (kernel, the result's
# dtype): such a call reads the tensors' pointers alone, where describing
# them through __cuda_array_interface__ and finding the kernel cost more
# than the launch.
_device_layouts = {}
_MAX_DEVICE_LAYOUTS = 1024


def _torch_stream(torch, tensor):
    """The current stream of `tensor`'s device, as a CUstream."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(tensor.device.index)
    return torch.cuda.current_stream(tensor.device).cuda_stream


def _run_on_device(k, op, data, indices, axis, d_ptr, i_ptr, o_ptr, stream):
    try:
        k._run_device(d_ptr, i_ptr, o_ptr, int(stream or 0))
    except IndexError as e:
        # A PyTorch tensor's bad index is named in its own shape, as on a
        # CPU (its indices copied to the host for the message alone).
        torch = _sys.modules.get("torch")
        if (getattr(e, "position", None) is None or torch is None
                or not isinstance(indices, torch.Tensor)):
            raise
        raise IndexError(_out_of_range(op, data, indices.cpu(), axis, e.position)) from None


def _device_name(device):
    """A device= argument as the native layer names it: "cpu" (also for
    None, the gathers' default), "cuda" (also for True) or "cuda:N"; a
    ValueError for anything else."""
    dev = "cuda" if device is True else "cpu" if device is None else str(device)
    number = dev[5:]
    if not (dev in ("cpu", "cuda") or (dev[:5] == "cuda:" and 0 < len(number) <= 3
                                       and all(c in "0123456789" for c in number))):
        raise ValueError(f"device = {device!r} is not 'cpu', 'cuda' or 'cuda:N'")
    return dev


def _gather_on_device(op, data, indices, axis, out, mode, epilogue, device, broadcast):
    """A gather of arrays on a CUDA device, in place on the device: no copy
    of the operands; the result is `out`, or a new PyTorch tensor beside a
    PyTorch `data`. `broadcast` as for the CPU (_gather)."""
    torch = _sys.modules.get("torch")  # never imported here: only its tensors
    tensor = torch.Tensor if torch is not None else None
    if tensor is not None:
        # Conjugated and negated views' values are made on the device first
        # (in the stream the launch follows), as torch's own kernels do.
        data, indices = (x.resolve_conj().resolve_neg()
                         if isinstance(x, tensor) and _lazy_view(x) else x
                         for x in (data, indices))
        if isinstance(out, tensor) and _lazy_view(out):
            raise _lazy_out("out")
    key = None
    if (tensor is not None and type(data) is tensor and type(indices) is tensor
            and (out is None or type(out) is tensor) and epilogue is None and type(axis) is int):
        key = (op, axis, mode, broadcast, device, data.device, data.dtype, data.shape,
               data.stride(),
               indices.device, indices.dtype, indices.shape, indices.stride(),
               None if out is None else (out.device, out.dtype, out.shape, out.stride()))
        seen = _device_layouts.get(key)
        if seen is not None and data.is_cuda:
            k, dtype = seen
            if out is None:
                out = torch.empty(k.output_shape, dtype=dtype, device=data.device)
            _run_on_device(k, op, data, indices, axis, data.data_ptr(), indices.data_ptr(),
                           out.data_ptr(), _torch_stream(torch, data))
            return out
    dev = _device_name(device)
    d_spec, d_ptr, stream, d_keep, d_at = _device_operand(data, "data")
    i_spec, i_ptr, _, i_keep, i_at = _device_operand(indices, "indices")
    if not _np.issubdtype(i_spec[1], _np.integer):
        raise TypeError(f"indices must be integers, not {i_spec[1]}")
    if axis is None:
        raise ValueError("axis=None (a flattened take) is not supported on a device")
    if isinstance(axis, bool) or not isinstance(axis, int):
        axis = _index(axis)
    o_spec = None
    o_keep = o_at = None
    if out is not None:
        o_spec, o_ptr, _, o_keep, o_at = _device_operand(out, "out")
    dev = _device_of_operands(dev, {"data": d_at, "indices": i_at, "out": o_at})
    k = _native.compile_device(op, d_spec, i_spec, axis, mode, _fused(epilogue), dev,
                               o_spec, broadcast)
    dtype = None
    if out is None:
        if torch is None or not isinstance(data, torch.Tensor):
            raise TypeError("device='cuda' needs out= unless data is a PyTorch tensor")
        dtype = torch.from_numpy(_np.empty(0, k.output_dtype)).dtype
        out = torch.empty(k.output_shape, dtype=dtype, device=data.device)
        o_ptr = _device_operand(out, "out")[1]
        if stream is None:
            stream = _torch_stream(torch, data)
    try:
        _run_on_device(k, op, data, indices, axis, d_ptr, i_ptr, o_ptr, stream)
    finally:
        del d_keep, i_keep, o_keep  # The DLPack capsules, once the run is over.
    if key is not None:
        if len(_device_layouts) >= _MAX_DEVICE_LAYOUTS:
            _device_layouts.clear()
        _device_layouts[key] = (k, dtype or torch.from_numpy(_np.empty(0, k.output_dtype)).dtype)
    return out


def _gather(op, data, indices, axis, out, mode, epilogue, broadcast=True, device=None):
    if device is not None and device != "cpu":
        return _gather_on_device(op, data, indices, axis, out, mode, epilogue, device,
                                 broadcast)
    try:
        # (numpy arrays in and out, an int axis and no epilogue went straight
        # to the native layer from take, take_along_axis and gather_nd.)
        # PyTorch CPU tensors likewise, their layouts read from the tensors
        # (None: a call the general path serves).
        if (type(data) is _Tensor and type(indices) is _Tensor and epilogue is None
                and (out is None or type(out) is _Tensor)):
            got = _native.gather_tensors(op, data, indices, axis, out, mode, broadcast, False)
            if got is not None:
                return got
        return _run_gather(op, data, indices, axis, out, mode, epilogue, broadcast)
    except IndexError as e:
        _reraise_out_of_range(op, data, indices, axis, e)


def _reraise_out_of_range(op, data, indices, axis, e):
    """Raises the kernel's IndexError `e` again, an out-of-range index it
    reports named in the caller's shapes."""
    if getattr(e, "position", None) is None:
        raise e
    error = IndexError(_out_of_range(op, data, indices, axis, e.position))
    error.position = e.position  # for gatherjit.dask, which names it in the whole array
    raise error from None


class _IndexTypeError(IndexError, TypeError):
    """Indices that are not integers: numpy's take raises TypeError for
    them, its take_along_axis IndexError; this is both."""


class _OutDtypeError(ValueError, TypeError):
    """An `out` of another dtype than the result's: numpy's take raises
    TypeError for one it cannot cast to, a bad argument is a ValueError;
    this is both."""


class _ShapeMismatchError(IndexError, ValueError):
    """take_along_axis indices whose shape does not broadcast against the
    data's: numpy raises IndexError, a bad shape is a ValueError; this is
    both."""


def _index(axis):
    # numpy's rule: an integer or an object with __index__, never a float,
    # a string or a bool.
    if isinstance(axis, (bool, _np.bool_)):
        raise TypeError(f"axis must be an integer, not {type(axis).__name__} {axis!r}")
    return _operator.index(axis)


def _wrapped(op, data, indices, axis):
    """mode="wrap": `indices` taken modulo the sizes they index (numpy's
    rule), as int64, and the mode to gather them with."""
    ids = _np.asarray(indices)
    if not _np.issubdtype(ids.dtype, _np.integer):
        raise _IndexTypeError(f"indices must be integers, not {ids.dtype}")
    if op != "gather_nd" and not -data.ndim <= axis < data.ndim:
        return indices, "raise"  # the gather names the bad axis
    shape = data.shape
    if op == "gather_nd":
        if ids.ndim == 0 or not 0 <= axis < ids.ndim:
            return ids, "raise"  # the gather names the bad shape or batch_dims
        k = ids.shape[-1]
        sizes = _np.array(shape[axis:axis + k], dtype=_np.int64)
        rest = shape[:axis] + shape[axis + k:]
    else:
        axis %= data.ndim
        sizes = _np.int64(shape[axis])
        rest = shape[:axis] + shape[axis + 1:]
    if _np.any(sizes == 0) and ids.size:
        # numpy's rule: an error where the result has elements; an empty
        # result reads nothing, which clip's kernel gives.
        if 0 not in rest:
            raise IndexError("cannot do a non-empty take from an empty axis (mode='wrap')")
        return _np.zeros(ids.shape, _np.int64), "clip"
    sizes = _np.maximum(sizes, 1)
    if ids.dtype == _np.uint64:  # above 2**63 - 1 too: modulo before int64
        return (ids % sizes.astype(_np.uint64)).astype(_np.int64), "raise"
    return ids.astype(_np.int64) % sizes, "raise"


def _range(size):
    return f"valid indices are {-size}..{size - 1}" if size else "the axis is empty"


def _out_of_range(op, data, indices, axis, position, starts=()):
    """The first out-of-range index at `position` (row-major in the indices
    the kernel saw) named in the caller's shapes; `indices` a block of a
    larger array that starts at `starts` names it in that array. `data` may
    be given by its shape (a tuple)."""
    ids = _array(indices, "indices")
    shape = data if isinstance(data, tuple) else getattr(data, "shape", None) or _np.shape(data)
    shape = tuple(int(s) for s in shape)
    if op == "gather_nd":
        k = ids.shape[-1]
        where = _np.unravel_index(position // max(k, 1), ids.shape[:-1]) if ids.ndim > 1 else ()
        tup = [int(v) for v in ids[where]]
        for j, v in enumerate(tup):
            size = shape[axis + j]
            if not -size <= v < size:
                at = _at(where, starts)
                return (f"indices[{at + ', ' if at else ''}:] = {tuple(tup)} has component {j} = "
                        f"{v}, out of range for axis {axis + j} of size {size}; {_range(size)}")
    if axis is None:
        shape, axis = (int(_np.prod(shape)),), 0
    axis = axis + len(shape) if axis < 0 else axis
    seen = list(ids.shape)
    if op == "gather_elements":  # broadcast as numpy's take_along_axis
        seen = [max(s, d) if a != axis else s for a, (s, d) in enumerate(zip(seen, shape))]
    where = _np.unravel_index(position, seen) if seen else ()
    where = tuple(int(c) if ids.shape[d] > 1 else 0 for d, c in enumerate(where))
    size = shape[axis]
    return (f"indices[{_at(where, starts)}] = {int(ids[where])} is out of range for axis {axis} "
            f"of size {size}; {_range(size)}")


def _at(where, starts):
    return ", ".join(str(int(c) + (starts[d] if d < len(starts) else 0))
                     for d, c in enumerate(where))


def _run_gather(op, data, indices, axis, out, mode, epilogue, broadcast):
    like = data
    if axis is None:  # numpy's: from the flattened data (np.matrix's ravel() is 2-D)
        data, axis = _np.asarray(_array(data)).ravel(), 0
    got = _native.gather_arrays(op, _array(data), _array(indices, "indices"), _index(axis),
                                None if out is None else _array(out, "out", writable=True),
                                mode, _fused(epilogue), broadcast)
    return out if out is not None else _result(got, like)


def _native_function(python_function):
    """`python_function`, one of the package's gather functions, as the
    native layer's built-in function of its name, signature and docstring:
    a call the native layer serves alone (numpy arrays; PyTorch CPU
    tensors) runs from the call itself, without the frame of a Python
    function, and every other call is `python_function`'s."""
    sig = _inspect.signature(python_function)
    plain = sig.replace(parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
                        return_annotation=sig.empty)
    return _native.gather_function(python_function, str(plain))


@_native_function
def take_along_axis(data, indices, axis, out=None, mode="raise", epilogue=None, device=None):
    """numpy.take_along_axis: out[i, j] = data[i, indices[i, j]] along `axis`.

    Dimensions other than `axis` broadcast as numpy's do. An element
    `epilogue` (an Epilogue) is applied to every element gathered. numpy
    arrays, PyTorch CPU tensors and DLPack exporters are read where they
    lie; a PyTorch tensor gives a PyTorch tensor.
    """
    return _gather("gather_elements", data, indices, axis, out, mode, epilogue, device=device)


@_native_function
def take(data, indices, axis=0, out=None, mode="raise", epilogue=None, device=None):
    """numpy.take: the slices of `data` along `axis` that `indices` pick.

    `axis=None` takes from the flattened data, as numpy does. An `epilogue`
    (an Epilogue) is applied to every element or row gathered.
    """
    return _gather("gather", data, indices, axis, out, mode, epilogue, device=device)


@_native_function
def gather_nd(data, indices, batch_dims=0, out=None, mode="raise", epilogue=None, device=None):
    """ONNX GatherND: the slices of `data` that the tuples in the last
    dimension of `indices` address, after `batch_dims` leading batches. An
    `epilogue` (an Epilogue) is applied to every element or row gathered."""
    return _gather("gather_nd", data, indices, batch_dims, out, mode, epilogue, device=device)


def compile(op, data=None, indices=None, axis=0, mode="raise", batch_dims=None, epilogue=None):
    """A kernel for one layout: `op` is "gather_elements", "gather" or
    "gather_nd"; `data` and `indices` are (shape, dtype), (shape, dtype,
    strides in elements) or arrays whose layouts they stand for. For "gather_nd", `batch_dims` replaces `axis`.
    `op` may instead be a descriptor dict in the format of `gatherjit run`
    ({"operator": "GATHER_ND1", "input": {...}, ...}, DirectML's tensors).
    Call it as k(data, indices, out=None); k.ir() and k.asm() show its code,
    k.save_object(path, name, header) compiles it ahead of time.
    `epilogue` (an Epilogue) is fused into the kernel; the result then has
    its type (and a row epilogue's row length)."""
    fused = _fused(epilogue)
    if isinstance(op, dict):
        text = _json.dumps(op)
        kernel = _native.compile_descriptor(text, fused)
        kernel._spec = ("descriptor", text, epilogue)
        return kernel
    if not isinstance(op, str):
        raise TypeError("compile: op must be 'gather_elements', 'gather', 'gather_nd' or a "
                        f"descriptor dict; got {type(op).__name__}")
    if data is None or indices is None:
        raise ValueError("compile: give data and indices layouts, or a descriptor dict")
    if batch_dims is not None:
        axis = batch_dims
    data, indices = _layout_of(data), _layout_of(_indices_as_read(indices))
    spec = (tuple(data), tuple(indices))
    axis = _index(axis)
    kernel = _native.compile(op, _layout(data, "data"), _layout(indices, "indices"), axis, mode,
                             fused)
    kernel._spec = (op, spec[0], spec[1], axis, mode, epilogue)
    return kernel


def _indices_as_read(x):
    # Integer indices on the CPU as a call hands them to its kernel (the
    # copies it makes of narrow or byte-swapped ones): the kernel then takes
    # the array it was compiled from.
    if isinstance(x, _np.ndarray) or (_torch_tensor(x) and x.device.type == "cpu"):
        array = _array(x, "indices")
        if array.dtype.kind in "iu":
            return _native.native_indices(array)
    return x


def _layout_of(x):
    # An array (numpy's or anything with shape and dtype) stands for its
    # layout: its shape, dtype and, where they are not C-contiguous, its
    # strides in elements. A PyTorch tensor's as the package views it
    # (_numpy_dtype_of), its strides as it has them.
    if isinstance(x, tuple) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    if _torch_tensor(x):
        dtype = _numpy_dtype_of(x)
        shape = tuple(x.shape)
        return (shape, dtype) if x.is_contiguous() else (shape, dtype, tuple(x.stride()))
    dtype = _np.dtype(str(x.dtype)) if not isinstance(x, _np.ndarray) else x.dtype
    shape = tuple(int(s) for s in x.shape)
    strides = getattr(x, "strides", None)
    if isinstance(x, _np.ndarray) and not x.flags.c_contiguous:
        return (shape, dtype, tuple(s // dtype.itemsize for s in strides))
    return (shape, dtype)


def _layout(spec, name):
    spec = tuple(spec)
    if len(spec) not in (2, 3):
        raise ValueError(f"{name}: a layout is (shape, dtype) or (shape, dtype, strides)")
    out = (_counts(spec[0], name, "shape"), _np.dtype(spec[1]))
    if len(spec) == 3 and spec[2] is not None:
        out += (_counts(spec[2], name, "strides"),)
    return out


def _counts(values, name, field):
    got = tuple(_operator.index(v) for v in values)
    for v in got:
        if not 0 <= v < 1 << 63:
            hint = ("; a kernel reads strides of 0 or more (pass a copy of an array of negative "
                    "strides, numpy.ascontiguousarray)" if field == "strides" and v < 0 else "")
            raise ValueError(f"{name}: the layout's {field} {got} holds {v}, which is not in "
                             f"0..2**63-1{hint}")
    return got


def _rebuild(spec):
    if spec[0] == "descriptor":
        return compile(_json.loads(spec[1]), epilogue=spec[2])
    op, data, indices, axis, mode, epilogue = spec
    return compile(op, data, indices, axis, mode, epilogue=epilogue)


def _reduce(kernel):
    # A kernel pickles as its spec and compiles again (through the cache)
    # where it is loaded.
    return (_rebuild, (kernel._spec,))


def set_threads(threads):
    """The threads a large kernel is split across in this process (0, the
    default: every core; 1: the caller's thread alone, as one dask worker
    thread per core wants). Takes effect only before the process's first
    kernel; returns whether it did."""
    threads = _operator.index(threads)
    if not 0 <= threads < 1 << 32:
        raise ValueError(f"threads = {threads} is not in 0..2**32-1 (0: every core)")
    return _native.set_threads(threads)


def set_specialize(mode):
    """When this process's kernels are specialized: "adaptive" (the default:
    a new shape runs at once, on its family's kernel or the generic loop,
    and is compiled for its shape on a background thread once hot; a very
    large call is compiled first), "compile" (every kernel compiled before
    its first call: warm-ups, benchmarks) or "never" (the generic loop
    only). Takes effect only before the process's first kernel; returns
    whether it did. ValueError for any other mode."""
    return _native.set_specialize(str(mode))


def set_cache_dir(path):
    """The directory where compiled kernels persist across processes, before
    the first kernel is compiled; None keeps none. The default is the
    command line's: none under GATHERJIT_NO_CACHE, else
    GATHERJIT_CACHE_DIR, $XDG_CACHE_HOME/gatherjit or ~/.cache/gatherjit,
    bounded to GATHERJIT_CACHE_LIMIT_MIB MiB (0: no bound; default 256),
    least recently used entries removed past it.
    Returns False (and changes nothing) once the runtime exists."""
    return _native.set_cache_dir(None if path is None else _os.fspath(path))


def cache_dir():
    """The persistent cache directory of this process ("" for none)."""
    return _native.cache_dir()


def set_epilogue_limits(seconds=30.0, memory_bytes=2 << 30, isolated=True, checked=False):
    """Limits on an epilogue's compile, before the first kernel is compiled.

    clang compiles each epilogue in a helper process; a source that makes it
    crash, run past `seconds` or allocate past `memory_bytes` raises
    ValueError ("the epilogue's compile was stopped: ...") and the
    interpreter goes on. `isolated=False` compiles in this process, without
    limits. `checked=True` compiles every epilogue checked, whatever its own
    `checked` says (see Epilogue). Returns False (and changes nothing) once
    the runtime exists.
    """
    memory_bytes = _operator.index(memory_bytes)
    if not 0 <= memory_bytes < 1 << 64:
        raise ValueError(f"memory_bytes = {memory_bytes} is not in 0..2**64-1")
    return _native.set_epilogue_limits(float(seconds), memory_bytes, bool(isolated),
                                       bool(checked))


def wait_background():
    """Waits until the background thread has compiled every specialization
    asked for so far (benchmarks and tests that want hot shapes' code)."""
    _native.wait_background()


def set_output_pool(bytes, linger=None):
    """The idle memory this process keeps for results of 128 KiB or more
    (128 MiB by default; 0: none). A large result's buffer returns to the
    pool when its array dies, and the next result that fits takes it,
    already mapped: a fresh one is faulted in page by page as the kernel
    first writes it, which can cost more than the gather. Buffers past the
    capacity linger `linger` seconds (1.0 by default; unchanged where
    None) before they are freed, so that work making results of one size
    again and again reuses them; none lingers with a capacity of 0.
    Returns the capacity it replaces."""
    bytes = _operator.index(bytes)
    if not 0 <= bytes < 1 << 63:
        raise ValueError(f"bytes = {bytes} is not in 0..2**63-1")
    if linger is not None:
        if isinstance(linger, bool) or not isinstance(linger, (int, float)):
            raise TypeError(f"linger = {linger!r} is not a number of seconds")
        linger = float(linger)
        if not 0 <= linger <= 3600:
            raise ValueError(f"linger = {linger} is not in 0..3600 seconds")
    return _native.set_output_pool(bytes, linger)


def stats(device="cpu"):
    """The process's kernel cache: hits, misses, entries, evictions,
    compile_ms, generic_entries (kernels running the generic loop now),
    family_entries (running a family kernel now), family_kernels (compiled,
    each for every shape of its family), specializations (made in the
    background), specialized_at_compile, upgrades (quick tier to O2),
    cache_bytes, disk_loads and disk_stores (kernels loaded from and stored
    in the cache directory); and output_pool_bytes, the idle memory kept
    for results (set_output_pool). With device="cuda" or "cuda:N", the
    kernels of that device's gathers (device=...)."""
    return _native.stats(_device_name(device))


import atexit as _atexit
import copyreg as _copyreg

# A specialization still compiling when the interpreter exits would use
# LLVM's static objects while C++ destroys them: stop the background thread
# first (the compile under way finishes, the queued ones are dropped).
_atexit.register(_native._stop_background)


def _kernel_repr(kernel):
    # What the kernel was compiled for, as the call to compile() that makes
    # it again, then what it gives and the code that runs it now.
    spec = kernel._spec
    if not spec:
        made = kernel.op
    elif spec[0] == "descriptor":
        made = f"{_json.loads(spec[1]).get('operator', kernel.op)} descriptor"
    else:
        op, data, indices, axis, mode, epilogue = spec
        def layout(shape, dtype, *strides):
            return "(" + ", ".join([repr(tuple(shape)), repr(str(_np.dtype(dtype)))] +
                                   [repr(tuple(s)) for s in strides if s is not None]) + ")"
        made = (f"{op!r}, data={layout(*data)}, indices={layout(*indices)}, "
                f"{'batch_dims' if op == 'gather_nd' else 'axis'}={axis}, mode={mode!r}")
        if epilogue is not None:
            made += f", epilogue={epilogue!r}"
    return (f"<gatherjit.Kernel {made}: output {tuple(kernel.output_shape)} "
            f"{kernel.output_dtype}, tier {kernel.tier}>")


Kernel.__repr__ = _kernel_repr
_copyreg.pickle(Kernel, _reduce)
# dask names a task by its arguments: a kernel by its spec.
Kernel.__dask_tokenize__ = lambda self: ("gatherjit.Kernel",) + tuple(
    repr(e._as_tuple() if isinstance(e, Epilogue) else e) for e in self._spec)
