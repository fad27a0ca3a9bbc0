"""gatherjit's kernels as PyTorch operators.

    import gatherjit.torch
    gatherjit.torch.register()
    out = torch.ops.gatherjit.gather_elements(data, index, 1)         # torch.gather
    rows = torch.ops.gatherjit.gather(table, ids, 0)                  # torch.index_select
    out = torch.ops.gatherjit.gather_elements(data, index, 1, "clip")

Both take CPU tensors of any strides (read where they lie, no copy) and
return a new tensor. `axis` may be negative; indices may be negative
(counted from the end, as numpy's are) and of any integer type; `mode` is
"raise" (an out-of-range index raises IndexError naming it), "clip"
(numpy's) or "clamp" (DirectML's). gather_elements follows torch.gather's
shape rule: the indices may be smaller than the data on the other
dimensions. gather is numpy.take along `axis` (ONNX Gather): the result's
shape is data.shape[:axis] + indices.shape + data.shape[axis+1:].

The operators are defined with torch.library.custom_op where PyTorch has
it (2.4 and later, with fake implementations that give torch.compile and
meta tensors their shapes) and with torch.library.Library before that (a
CPU kernel alone); either way they are dispatcher operators, callable from
torch.jit.script. They have no autograd formula.
"""

import torch

import gatherjit

__all__ = ["register", "gather_elements", "gather"]

_SCHEMAS = {
    "gather_elements": "gather_elements(Tensor data, Tensor indices, int axis, "
                       "str mode='raise') -> Tensor",
    "gather": "gather(Tensor data, Tensor indices, int axis=0, str mode='raise') -> Tensor",
}
_registered = None


def gather_elements(data: torch.Tensor, indices: torch.Tensor, axis: int,
                    mode: str = "raise") -> torch.Tensor:
    """torch.gather(data, axis, indices) by a gatherjit kernel."""
    return gatherjit._gather("gather_elements", data, indices, axis, None, mode, None,
                             broadcast=False)


def gather(data: torch.Tensor, indices: torch.Tensor, axis: int = 0,
           mode: str = "raise") -> torch.Tensor:
    """numpy.take(data, indices, axis) (ONNX Gather) by a gatherjit kernel."""
    return gatherjit._gather("gather", data, indices, axis, None, mode, None)


def _gather_elements_shape(data, indices, axis, mode="raise"):
    return data.new_empty(indices.shape)


def _gather_shape(data, indices, axis=0, mode="raise"):
    axis = axis + data.dim() if axis < 0 else axis
    return data.new_empty(data.shape[:axis] + indices.shape + data.shape[axis + 1:])


def register():
    """Defines torch.ops.gatherjit.gather_elements and torch.ops.gatherjit.gather
    (once per process; later calls do nothing)."""
    global _registered
    if _registered is not None:
        return
    functions = {"gather_elements": (gather_elements, _gather_elements_shape),
                 "gather": (gather, _gather_shape)}
    if hasattr(torch.library, "custom_op"):
        ops = []
        for name, (fn, shape) in functions.items():
            # The schema is inferred from the annotations (the same as _SCHEMAS).
            op = torch.library.custom_op(f"gatherjit::{name}", mutates_args=(),
                                         device_types="cpu")(fn)
            op.register_fake(shape)
            ops.append(op)
        _registered = ops
    else:
        lib = torch.library.Library("gatherjit", "DEF")
        for name, (fn, shape) in functions.items():
            lib.define(_SCHEMAS[name])
            lib.impl(name, fn, "CPU")
        _registered = lib
