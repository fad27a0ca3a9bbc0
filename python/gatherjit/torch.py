"""gatherjit's kernels as PyTorch operators.

    import gatherjit.torch
    gatherjit.torch.register()
    out = torch.ops.gatherjit.gather_elements(data, index, 1)         # torch.gather
    rows = torch.ops.gatherjit.gather(table, ids, 0)                  # torch.index_select
    out = torch.ops.gatherjit.gather_elements(data, index, 1, "clip")
    rows = torch.ops.gatherjit.gather_nd(pages, tuples, 0)            # ONNX GatherND

They take CPU or CUDA tensors of any strides (read where they lie, no
copy; CUDA tensors gathered on their device) and return a new tensor.
`axis` may be negative; indices may be negative (counted from the end, as
numpy's are) and of any integer type; `mode` is "raise" (an out-of-range
index raises IndexError naming it), "clip" (numpy's) or "clamp"
(DirectML's). gather_elements follows torch.gather's shape rule: the
indices may be smaller than the data on the other dimensions. gather is
numpy.take along `axis` (ONNX Gather): the result's shape is
data.shape[:axis] + indices.shape + data.shape[axis+1:].

The operators are defined with torch.library.Library, with fake
implementations that give torch.compile and meta tensors their shapes
where PyTorch has them (torch.library.register_fake, 2.4 and later); they
are dispatcher operators, callable from torch.jit.script, and traced into
a torch.compile graph (where this module's functions break it). The
functions gather_elements, gather and gather_nd of this module are
differentiable: with a data tensor that
requires grad they are torch.autograd.Functions whose backward is a
scatter-add of the output's gradient (repeated indices add up). The
operators have the same formulas where PyTorch can register them
(torch.library.register_autograd, 2.4 and later); before that they have
none.
"""

import math
import operator

import numpy as np
import torch

import gatherjit

__all__ = ["register", "gather_elements", "gather", "gather_nd"]

_SCHEMAS = {
    "gather_elements": "gather_elements(Tensor data, Tensor indices, int axis, "
                       "str mode='raise') -> Tensor",
    "gather": "gather(Tensor data, Tensor indices, int axis=0, str mode='raise') -> Tensor",
    "gather_nd": "gather_nd(Tensor data, Tensor indices, int batch_dims=0, "
                 "str mode='raise') -> Tensor",
}
_registered = None


def _differentiable(data):
    return torch.is_grad_enabled() and isinstance(data, torch.Tensor) and data.requires_grad


def _expect_tensors(function, data, indices):
    """TypeError, in torch's words, unless data and indices are tensors."""
    for name, value in (("data", data), ("indices", indices)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{function}(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")


_AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError


def _normal_axis(axis, rank):
    """`axis` of a tensor of `rank` (a 0-d tensor's is 0 or -1, as in torch),
    counted from 0; numpy's AxisError (an IndexError and a ValueError), as
    the kernels raise, outside that range."""
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise _AxisError(axis, rank)
    return axis + rank if axis < 0 else axis


def _device(data):
    """Where a gather of `data` runs: None for the CPU, else its CUDA device
    ("cuda:0"), where the operands lie."""
    if data.device.type == "cpu":
        return None
    if data.device.type == "cuda":
        return str(data.device)
    raise ValueError(f"data is on {data.device}; gatherjit runs on the CPU and CUDA devices")


# The kernels alone, without autograd: what the operators run below
# PyTorch's autograd (their annotations are the operators' schemas).

def _gather_elements_kernel(data: torch.Tensor, indices: torch.Tensor, axis: int,
                            mode: str = "raise") -> torch.Tensor:
    empty = (0,) * data.dim()
    if indices.numel() == 0 and indices.shape != empty and data.dim() > 0:
        # torch.gather checks no sizes against empty indices: the result has
        # their shape whatever their rank. The kernel of empty indices of the
        # data's rank checks the rest (axis, mode, index type).
        return _gather_elements_kernel(data, indices.new_empty(empty), axis,
                                       mode).reshape(indices.shape)
    return gatherjit._gather("gather_elements", data, indices, axis, None, mode, None,
                             broadcast=False, device=_device(data))


def _gather_kernel(data: torch.Tensor, indices: torch.Tensor, axis: int = 0,
                   mode: str = "raise") -> torch.Tensor:
    return gatherjit._gather("gather", data, indices, axis, None, mode, None,
                             device=_device(data))


def _gather_nd_kernel(data: torch.Tensor, indices: torch.Tensor, batch_dims: int = 0,
                      mode: str = "raise") -> torch.Tensor:
    return gatherjit._gather("gather_nd", data, indices, batch_dims, None, mode, None,
                             device=_device(data))


# The public functions are built-in functions of the native layer, which
# serves plain CPU tensors of one dimension or more outside autograd's
# recording from the call itself and hands every other call to these
# Python functions (gatherjit._native_function): on a call of a few
# elements, each Python frame on the way costs about a tenth of the call.

@gatherjit._native_function
def gather_elements(data: torch.Tensor, indices: torch.Tensor, axis: int,
                    mode: str = "raise") -> torch.Tensor:
    """torch.gather(data, axis, indices) by a gatherjit kernel."""
    _expect_tensors("gather_elements", data, indices)
    axis = operator.index(axis)
    if (data.dim() == 0 or indices.dim() == 0) and data.dim() <= 1 and indices.dim() <= 1:
        # torch's rule: a 0-d tensor is gathered as a 1-d one of one element.
        return gather_elements(data.reshape(-1), indices.reshape(-1), axis,
                               mode).reshape(indices.shape)
    if _differentiable(data):
        return _GatherElements.apply(data, indices, axis, mode)
    return _gather_elements_kernel(data, indices, axis, mode)


@gatherjit._native_function
def gather(data: torch.Tensor, indices: torch.Tensor, axis: int = 0,
           mode: str = "raise") -> torch.Tensor:
    """numpy.take(data, indices, axis) (ONNX Gather) by a gatherjit kernel."""
    _expect_tensors("gather", data, indices)
    axis = operator.index(axis)
    if _differentiable(data):
        return _Gather.apply(data, indices, axis, mode)
    return _gather_kernel(data, indices, axis, mode)


@gatherjit._native_function
def gather_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int = 0,
              mode: str = "raise") -> torch.Tensor:
    """ONNX GatherND by a gatherjit kernel."""
    _expect_tensors("gather_nd", data, indices)
    batch_dims = operator.index(batch_dims)
    if _differentiable(data):
        return _GatherND.apply(data, indices, batch_dims, mode)
    return _gather_nd_kernel(data, indices, batch_dims, mode)


# Backward passes: the gradient of a gather is a scatter-add of the output's
# gradient into zeros of the data's shape (repeated indices add up), by
# torch's own scatter_add_ / index_add_, deterministic on the CPU. The
# indices are first made what the kernel read under `mode`.

def _read(indices, size, mode):
    """The positions a kernel read for `indices` along an axis of `size`."""
    idx = torch.as_tensor(indices).long()
    if mode == "clip":  # numpy's: no wrap-around
        return idx.clamp(0, max(size - 1, 0))
    if mode == "wrap":
        return idx.remainder(max(size, 1))
    idx = torch.where(idx < 0, idx + size, idx)
    return idx.clamp(0, max(size - 1, 0))  # in range under raise already


# Each operator's autograd formula is a pair: what the forward keeps
# (_setup_*(ctx, inputs), from the call's inputs) and the gradients of the
# inputs from the output's (_grad_*(ctx, grad)). The autograd.Functions
# below and the dispatcher operators (register()) share them.

def _setup_gather_elements(ctx, inputs):
    data, indices, axis, mode = inputs
    ctx.shape, ctx.axis = data.shape, _normal_axis(axis, data.dim())
    ctx.save_for_backward(_read(indices, data.shape[ctx.axis], mode))


def _grad_gather_elements(ctx, grad):
    (idx,) = ctx.saved_tensors
    out = grad.new_zeros(ctx.shape)
    if ctx.shape[ctx.axis] == 0:
        return out, None, None, None
    return out.scatter_add(ctx.axis, idx, grad), None, None, None


def _setup_gather(ctx, inputs):
    data, indices, axis, mode = inputs
    ctx.shape, ctx.axis = data.shape, _normal_axis(axis, data.dim())
    ctx.save_for_backward(_read(indices, data.shape[ctx.axis], mode).reshape(-1))


def _grad_gather(ctx, grad):
    (idx,) = ctx.saved_tensors
    shape, axis = ctx.shape, ctx.axis
    out = grad.new_zeros(shape)
    if shape[axis] == 0:
        return out, None, None, None
    rows = grad.reshape(shape[:axis] + (idx.numel(),) + shape[axis + 1:])
    return out.index_add(axis, idx, rows), None, None, None


class _GatherElements(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, indices, axis, mode):
        out = _gather_elements_kernel(data, indices, axis, mode)  # It checks the operands.
        _setup_gather_elements(ctx, (data, indices, axis, mode))
        return out

    backward = staticmethod(_grad_gather_elements)


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, indices, axis, mode):
        out = _gather_kernel(data, indices, axis, mode)  # It checks the operands.
        _setup_gather(ctx, (data, indices, axis, mode))
        return out

    backward = staticmethod(_grad_gather)


def _setup_gather_nd(ctx, inputs):
    data, indices, batch_dims, mode = inputs
    ids = torch.as_tensor(indices).long()
    k = ids.shape[-1]
    sizes = data.shape[batch_dims:batch_dims + k]
    # Each tuple as one position in the data's first batch_dims + k
    # dimensions, flattened.
    flat = torch.zeros(ids.shape[:-1], dtype=torch.long, device=ids.device)
    for j, size in enumerate(sizes):
        flat = flat * size + _read(ids[..., j], size, mode)
    batches = math.prod(data.shape[:batch_dims])
    per_batch = math.prod(sizes)
    flat = (flat.reshape(batches, -1)
            + torch.arange(batches, device=ids.device).unsqueeze(1) * per_batch)
    ctx.shape, ctx.lead = data.shape, batch_dims + k
    ctx.save_for_backward(flat.reshape(-1))


def _grad_gather_nd(ctx, grad):
    (flat,) = ctx.saved_tensors
    rest = ctx.shape[ctx.lead:]
    out = grad.new_zeros((math.prod(ctx.shape[:ctx.lead]),) + rest)
    if out.shape[0] != 0:
        out = out.index_add(0, flat, grad.reshape((flat.numel(),) + rest))
    return out.reshape(ctx.shape), None, None, None


class _GatherND(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, indices, batch_dims, mode):
        out = _gather_nd_kernel(data, indices, batch_dims, mode)  # It checks the operands.
        _setup_gather_nd(ctx, (data, indices, batch_dims, mode))
        return out

    backward = staticmethod(_grad_gather_nd)


def _gather_elements_shape(data, indices, axis, mode="raise"):
    return data.new_empty(indices.shape)


def _gather_shape(data, indices, axis=0, mode="raise"):
    axis = _normal_axis(axis, data.dim())
    return data.new_empty(data.shape[:axis] + indices.shape + data.shape[axis + 1:])


def _gather_nd_shape(data, indices, batch_dims=0, mode="raise"):
    k = indices.shape[-1]
    return data.new_empty(indices.shape[:-1] + data.shape[batch_dims + k:])


def register():
    """Defines torch.ops.gatherjit.gather_elements, torch.ops.gatherjit.gather and
    torch.ops.gatherjit.gather_nd (once per process; later calls do nothing)."""
    global _registered
    if _registered is not None:
        return
    functions = {"gather_elements": (_gather_elements_kernel, _gather_elements_shape,
                                     _setup_gather_elements, _grad_gather_elements),
                 "gather": (_gather_kernel, _gather_shape, _setup_gather, _grad_gather),
                 "gather_nd": (_gather_nd_kernel, _gather_nd_shape, _setup_gather_nd,
                               _grad_gather_nd)}
    lib = torch.library.Library("gatherjit", "DEF")
    for name, (fn, shape, setup, grad) in functions.items():
        lib.define(_SCHEMAS[name])
        lib.impl(name, fn, "CPU")
        lib.impl(name, fn, "CUDA")
        if hasattr(torch.library, "register_autograd"):
            # Shapes for torch.compile and meta tensors, and the gradient
            # (PyTorch 2.4 and later), on the Library's operator: through
            # torch.library.custom_op's wrappers a call cost 20.3 us against
            # 12.7 (a [64, 32] gather_elements, PyTorch 2.5, one thread;
            # 3.6 us the kernel alone).
            torch.library.register_fake(f"gatherjit::{name}", shape, lib=lib)
            torch.library.register_autograd(
                f"gatherjit::{name}", grad, lib=lib,
                setup_context=lambda ctx, inputs, output, setup=setup: setup(ctx, inputs))
    _registered = lib
