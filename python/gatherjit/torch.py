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
are dispatcher operators, callable from torch.jit.script, traced into a
torch.compile graph, and they pass torch.library.opcheck. Within
torch.compile (PyTorch 2.5 and later) this module's functions trace as the
operators. The functions gather_elements, gather and
gather_nd of this module are differentiable: with a data tensor that
requires grad they are torch.autograd.Functions whose backward is a
scatter-add of the output's gradient (repeated indices add up). Within
torch.func's transforms (PyTorch 2.0 and later) they are such Functions
too, with a forward-mode derivative and a vmap rule, so grad, jacrev,
jacfwd, jvp, hessian and vmap (nested too) apply to them; meta and fake
tensors give their result's shape. The operators have the same backward
formulas where PyTorch can register them (torch.library.register_autograd,
2.4 and later); before that they have none.
"""

import importlib.abc
import importlib.util
import math
import operator
import sys
import threading

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

def _scalar_gather(data, indices):
    """torch.gather's rule for 0-d operands: gathered as 1-d ones of one
    element, the result of the indices' shape."""
    return (data.dim() == 0 or indices.dim() == 0) and data.dim() <= 1 and indices.dim() <= 1


def _gather_elements_kernel(data: torch.Tensor, indices: torch.Tensor, axis: int,
                            mode: str = "raise") -> torch.Tensor:
    if _scalar_gather(data, indices):
        return _gather_elements_kernel(data.reshape(-1), indices.reshape(-1), axis,
                                       mode).reshape(indices.shape)
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
    if _scalar_gather(data, indices):  # reshaped here, where autograd sees it
        return gather_elements(data.reshape(-1), indices.reshape(-1), axis,
                               mode).reshape(indices.shape)
    return _call("gather_elements", data, indices, axis, mode)


@gatherjit._native_function
def gather(data: torch.Tensor, indices: torch.Tensor, axis: int = 0,
           mode: str = "raise") -> torch.Tensor:
    """numpy.take(data, indices, axis) (ONNX Gather) by a gatherjit kernel."""
    _expect_tensors("gather", data, indices)
    return _call("gather", data, indices, operator.index(axis), mode)


@gatherjit._native_function
def gather_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int = 0,
              mode: str = "raise") -> torch.Tensor:
    """ONNX GatherND by a gatherjit kernel."""
    _expect_tensors("gather_nd", data, indices)
    return _call("gather_nd", data, indices, operator.index(batch_dims), mode)


_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def _shapes_only(t):
    """Whether `t` has a shape and no values: a meta tensor, or a subclass
    that dispatches its own operations (torch.compile's FakeTensor)."""
    return t.is_meta or (type(t) is not torch.Tensor
                         and type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__)


def _call(name, data, indices, axis, mode):
    """One call of the function `name`: within a torch.func transform (vmap,
    grad, jvp) through the autograd.Function whose rules those follow; with
    data that requires grad while autograd records, through the one that
    records it; with operands that have shapes and no values through the
    operator's fake implementation (where PyTorch has one); else straight
    to the kernel."""
    kernel, recorded, transformed = _FUNCTIONS[name]
    if transformed is not None and _transforms_active():
        return transformed.apply(data, indices, axis, mode)
    if _differentiable(data):
        return recorded.apply(data, indices, axis, mode)
    if hasattr(torch.library, "register_fake") and (_shapes_only(data) or _shapes_only(indices)):
        register()
        return getattr(torch.ops.gatherjit, name)(data, indices, axis, mode)
    return kernel(data, indices, axis, mode)


# Backward passes: the gradient of a gather is a scatter-add of the output's
# gradient into zeros of the data's shape (repeated indices add up), by
# torch's own scatter_add_ / index_add_, deterministic on the CPU. The
# indices are first made what the kernel read under `mode`. Forward-mode
# derivatives (torch.func.jvp, jacfwd) gather the data's tangent at those
# positions, by torch's own gathers so that they batch under vmap.

def _long(indices):
    """`indices` as int64; themselves where they are (`long()` would return
    its input, which torch.library.opcheck's schema check refuses below
    autograd)."""
    return indices if indices.dtype == torch.long else indices.long()


def _read(indices, size, mode):
    """The positions a kernel read for `indices` along an axis of `size`."""
    idx = _long(indices)
    if mode == "clip":  # numpy's: no wrap-around
        return idx.clamp(0, max(size - 1, 0))
    if mode == "wrap":
        return idx.remainder(max(size, 1))
    idx = torch.where(idx < 0, idx + size, idx)
    return idx.clamp(0, max(size - 1, 0))  # in range under raise already


# Each operator's autograd formula is a pair: what the forward keeps
# (_setup_*(ctx, inputs), from the call's inputs: the positions it read,
# returned to be saved) and the gradients of the inputs from the output's
# (_grad_*(ctx, grad)). The autograd.Functions below and the dispatcher
# operators (register()) share them; _tangent_*(ctx, data's tangent) is the
# forward-mode derivative, and _batched_* (vmap's rule) runs a batch of
# calls as one.

def _setup_along_axis(ctx, inputs):
    """GatherElements' and Gather's: the data's shape, the axis and the
    positions read along it."""
    data, indices, axis, mode = inputs
    ctx.shape, ctx.axis = data.shape, _normal_axis(axis, data.dim())
    return _read(indices, data.shape[ctx.axis] if data.dim() else 1, mode)


def _grad_gather_elements(ctx, grad):
    (idx,) = ctx.saved_tensors
    out = grad.new_zeros(ctx.shape)
    if not ctx.shape:  # 0-d data: every index read its one element
        return out + grad.sum(), None, None, None
    if ctx.shape[ctx.axis] == 0:
        return out, None, None, None
    return out.scatter_add(ctx.axis, idx, grad), None, None, None


def _tangent_gather_elements(ctx, tangent):
    (idx,) = ctx.saved_tensors
    return torch.gather(tangent, ctx.axis, idx)


def _grad_gather(ctx, grad):
    (idx,) = ctx.saved_tensors
    idx = idx.reshape(-1)
    shape, axis = ctx.shape, ctx.axis
    out = grad.new_zeros(shape)
    if shape[axis] == 0:
        return out, None, None, None
    rows = grad.reshape(shape[:axis] + (idx.numel(),) + shape[axis + 1:])
    return out.index_add(axis, idx, rows), None, None, None


def _tangent_gather(ctx, tangent):
    (idx,) = ctx.saved_tensors
    shape, axis = ctx.shape, ctx.axis
    return tangent.index_select(axis, idx.reshape(-1)).reshape(
        shape[:axis] + idx.shape + shape[axis + 1:])


def _setup_gather_nd(ctx, inputs):
    data, indices, batch_dims, mode = inputs
    ids = _long(indices)
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
    return flat.reshape(ids.shape[:-1])


def _grad_gather_nd(ctx, grad):
    (flat,) = ctx.saved_tensors
    flat = flat.reshape(-1)
    rest = ctx.shape[ctx.lead:]
    out = grad.new_zeros((math.prod(ctx.shape[:ctx.lead]),) + rest)
    if out.shape[0] != 0:
        out = out.index_add(0, flat, grad.reshape((flat.numel(),) + rest))
    return out.reshape(ctx.shape), None, None, None


def _tangent_gather_nd(ctx, tangent):
    (flat,) = ctx.saved_tensors
    rest = ctx.shape[ctx.lead:]
    rows = tangent.reshape((math.prod(ctx.shape[:ctx.lead]),) + rest)
    return rows.index_select(0, flat.reshape(-1)).reshape(flat.shape + rest)


def _batch_first(x, dim, size):
    """`x` with vmap's batch dimension first: moved there, or where it has
    none, `size` copies of it that share its memory (stride 0)."""
    return x.expand((size,) + x.shape) if dim is None else x.movedim(dim, 0)


def _logical_rank(x, dim):
    return x.dim() - (dim is not None)


def _batched_gather_elements(info, in_dims, data, indices, axis, mode):
    axis = _normal_axis(axis, _logical_rank(data, in_dims[0]))
    data = _batch_first(data, in_dims[0], info.batch_size)
    indices = _batch_first(indices, in_dims[1], info.batch_size)
    return gather_elements(data, indices, axis + 1, mode), 0


def _batched_gather(info, in_dims, data, indices, axis, mode):
    axis = _normal_axis(axis, _logical_rank(data, in_dims[0]))
    if in_dims[1] is None:  # one set of indices for every element of the batch
        return gather(data.movedim(in_dims[0], 0), indices, axis + 1, mode), 0
    indices = indices.movedim(in_dims[1], 0)
    if in_dims[0] is None:  # one data: the batch is a dimension of the indices
        return gather(data, indices, axis, mode), axis
    # Each element of the batch its own data and indices: GatherND's batch
    # dimension, with the axis moved after it and the result's dimensions
    # moved back where Gather has them.
    data = data.movedim(in_dims[0], 0).movedim(axis + 1, 1)
    out = gather_nd(data, indices.unsqueeze(-1), 1, mode)
    before, count = axis, indices.dim() - 1
    order = ([0] + list(range(1 + count, 1 + count + before)) + list(range(1, 1 + count))
             + list(range(1 + count + before, out.dim())))
    return out.permute(order), 0


def _batched_gather_nd(info, in_dims, data, indices, batch_dims, mode):
    data = _batch_first(data, in_dims[0], info.batch_size)
    indices = _batch_first(indices, in_dims[1], info.batch_size)
    return gather_nd(data, indices, batch_dims + 1, mode), 0


def _autograd_functions(name, kernel, setup, grad, tangent, batched):
    """The autograd.Functions of one gather from its formulas above: one
    that autograd records, and one in the form that torch.func's transforms
    take (None before PyTorch 2.0). Outside the transforms the first serves:
    a call through the second binds its arguments by inspect.signature,
    19.0 us against 7.8 for a function of a 5-row gather (PyTorch 2.5)."""
    def forward(ctx, data, indices, axis, mode):
        out = kernel(data, indices, axis, mode)  # It checks the operands.
        ctx.save_for_backward(setup(ctx, (data, indices, axis, mode)))
        return out

    recorded = type(name, (torch.autograd.Function,),
                    {"forward": staticmethod(forward), "backward": staticmethod(grad)})
    if not hasattr(torch.autograd.Function, "setup_context"):
        return kernel, recorded, None

    def setup_context(ctx, inputs, output):
        positions = setup(ctx, inputs)
        ctx.save_for_backward(positions)
        ctx.save_for_forward(positions)

    def jvp(ctx, data_tangent, *_):
        return tangent(ctx, data_tangent)

    return kernel, recorded, type(name + "Transformed", (torch.autograd.Function,), {
        "forward": staticmethod(kernel),  # It checks the operands.
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(grad),
        "jvp": staticmethod(jvp),
        "vmap": staticmethod(batched)})


def _gather_elements_shape(data, indices, axis, mode="raise"):
    return data.new_empty(indices.shape)


def _gather_shape(data, indices, axis=0, mode="raise"):
    axis = _normal_axis(axis, data.dim())
    return data.new_empty(data.shape[:axis] + indices.shape + data.shape[axis + 1:])


def _gather_nd_shape(data, indices, batch_dims=0, mode="raise"):
    k = indices.shape[-1]
    return data.new_empty(indices.shape[:-1] + data.shape[batch_dims + k:])


# Each gather's pieces: its kernel, its result from shapes alone (the
# operators' fake implementation) and its formulas above, from which its
# autograd.Functions (_FUNCTIONS: the kernel, the Function autograd records
# and the one for torch.func's transforms) and its operator are made.
_PIECES = {
    "gather_elements": (_gather_elements_kernel, _gather_elements_shape, _setup_along_axis,
                        _grad_gather_elements, _tangent_gather_elements,
                        _batched_gather_elements),
    "gather": (_gather_kernel, _gather_shape, _setup_along_axis, _grad_gather, _tangent_gather,
               _batched_gather),
    "gather_nd": (_gather_nd_kernel, _gather_nd_shape, _setup_gather_nd, _grad_gather_nd,
                  _tangent_gather_nd, _batched_gather_nd),
}
_FUNCTIONS = {name: _autograd_functions(f"_{name}", kernel, setup, grad, tangent, batched)
              for name, (kernel, _, setup, grad, tangent, batched) in _PIECES.items()}

_register_lock = threading.Lock()


def register():
    """Defines torch.ops.gatherjit.gather_elements, torch.ops.gatherjit.gather and
    torch.ops.gatherjit.gather_nd (once per process; later calls do nothing)."""
    global _registered
    if _registered is not None:
        return
    # The functions register on their first meta or fake tensor, which may
    # come from any thread; a namespace is defined only once.
    with _register_lock:
        if _registered is None:
            _registered = _define_operators()


def _define_operators():
    lib = torch.library.Library("gatherjit", "DEF")
    for name, (fn, shape, setup, grad, _, _) in _PIECES.items():
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
                setup_context=lambda ctx, inputs, output, setup=setup: ctx.save_for_backward(
                    setup(ctx, inputs)))
    return lib


# torch.compile (PyTorch 2.5 and later) traces this module's functions as
# the operators. They are built-in functions of the native layer, which
# dynamo cannot look into: each call would break the graph (an error under
# fullgraph=True). The substitutes are installed once torch._dynamo is
# imported, by torch.compile's first call: importing it here would cost
# this module's import 0.7 s.

def _gather_elements_traced(data, indices, axis, mode="raise"):
    _operators_defined()
    return torch.ops.gatherjit.gather_elements(data, indices, axis, mode)


def _gather_traced(data, indices, axis=0, mode="raise"):
    _operators_defined()
    return torch.ops.gatherjit.gather(data, indices, axis, mode)


def _gather_nd_traced(data, indices, batch_dims=0, mode="raise"):
    _operators_defined()
    return torch.ops.gatherjit.gather_nd(data, indices, batch_dims, mode)


def _operators_defined():
    register()
    return True


def _substitute_in_graph():
    """Has dynamo trace each function as its operator. Where a release's
    dynamo refuses a substitute, that function breaks the graph."""
    global _operators_defined
    try:
        # Run while dynamo traces, not traced: it takes a lock.
        _operators_defined = torch.compiler.assume_constant_result(_operators_defined)
        for function, traced in ((gather_elements, _gather_elements_traced),
                                 (gather, _gather_traced), (gather_nd, _gather_nd_traced)):
            torch.compiler.substitute_in_graph(function, skip_signature_check=True)(traced)
    except Exception:  # The hook runs inside torch._dynamo's import: never fail it.
        pass


class _LoadThen(importlib.abc.Loader):
    """`loader`, calling `then` after the module it loads has run."""

    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then()

    def __getattr__(self, name):  # get_source, is_package, ...
        return getattr(self._loader, name)


class _AfterImportOf(importlib.abc.MetaPathFinder):
    """Calls `then` once the module `name` has been imported."""

    def __init__(self, name, then):
        self._name, self._then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self._name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # by the finders after this one
        if spec is not None and spec.loader is not None:
            spec.loader = _LoadThen(spec.loader, self._then)
        return spec


if hasattr(torch, "compiler") and hasattr(torch.compiler, "substitute_in_graph"):
    if "torch._dynamo" in sys.modules:
        _substitute_in_graph()
    else:
        sys.meta_path.insert(0, _AfterImportOf("torch._dynamo", _substitute_in_graph))
