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
"""

import json as _json

import numpy as _np

from . import _native
from ._native import Kernel

__all__ = ["take_along_axis", "take", "gather_nd", "compile", "Kernel", "stats"]


def _array(x):
    return x if isinstance(x, _np.ndarray) else _np.asarray(x)


def take_along_axis(data, indices, axis, out=None, mode="raise"):
    """numpy.take_along_axis: out[i, j] = data[i, indices[i, j]] along `axis`.

    Dimensions other than `axis` broadcast as numpy's do.
    """
    if axis is None:
        data, axis = _array(data).ravel(), 0
    return _native.gather_arrays("gather_elements", _array(data), _array(indices), int(axis),
                                 out, mode)


def take(data, indices, axis=0, out=None, mode="raise"):
    """numpy.take: the slices of `data` along `axis` that `indices` pick.

    `axis=None` takes from the flattened data, as numpy does.
    """
    data = _array(data)
    if axis is None:
        data, axis = data.ravel(), 0
    return _native.gather_arrays("gather", data, _array(indices), int(axis), out, mode)


def gather_nd(data, indices, batch_dims=0, out=None, mode="raise"):
    """ONNX GatherND: the slices of `data` that the tuples in the last
    dimension of `indices` address, after `batch_dims` leading batches."""
    return _native.gather_arrays("gather_nd", _array(data), _array(indices), int(batch_dims),
                                 out, mode)


def compile(op, data=None, indices=None, axis=0, mode="raise", batch_dims=None):
    """A kernel for one layout: `op` is "gather_elements", "gather" or
    "gather_nd"; `data` and `indices` are (shape, dtype) or (shape, dtype,
    strides in elements). For "gather_nd", `batch_dims` replaces `axis`.
    `op` may instead be a descriptor dict in the format of `gatherjit run`
    ({"operator": "GATHER_ND1", "input": {...}, ...}, DirectML's tensors).
    Call it as k(data, indices, out=None); k.ir() and k.asm() show its code,
    k.save_object(path, name, header) compiles it ahead of time."""
    if isinstance(op, dict):
        text = _json.dumps(op)
        kernel = _native.compile_descriptor(text)
        kernel._spec = ("descriptor", text)
        return kernel
    if data is None or indices is None:
        raise ValueError("compile: give data and indices layouts, or a descriptor dict")
    if batch_dims is not None:
        axis = batch_dims
    spec = (tuple(data), tuple(indices))
    kernel = _native.compile(op, _layout(data), _layout(indices), int(axis), mode)
    kernel._spec = (op, spec[0], spec[1], int(axis), mode)
    return kernel


def _layout(spec):
    spec = tuple(spec)
    if len(spec) not in (2, 3):
        raise ValueError("a layout is (shape, dtype) or (shape, dtype, strides)")
    out = (tuple(int(s) for s in spec[0]), _np.dtype(spec[1]))
    if len(spec) == 3 and spec[2] is not None:
        out += (tuple(int(s) for s in spec[2]),)
    return out


def _rebuild(spec):
    if spec[0] == "descriptor":
        return compile(_json.loads(spec[1]))
    op, data, indices, axis, mode = spec
    return compile(op, data, indices, axis, mode)


def _reduce(kernel):
    # A kernel pickles as its spec and compiles again (through the cache)
    # where it is loaded.
    return (_rebuild, (kernel._spec,))


def stats():
    """The process's kernel cache: hits, misses, entries, compile_ms."""
    return _native.stats()


import copyreg as _copyreg

_copyreg.pickle(Kernel, _reduce)
# dask names a task by its arguments: a kernel by its spec.
Kernel.__dask_tokenize__ = lambda self: ("gatherjit.Kernel",) + tuple(map(repr, self._spec))
