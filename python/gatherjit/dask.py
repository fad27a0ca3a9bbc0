"""Gathers over dask arrays, block by block, each block through a gatherjit
kernel on the worker that holds it.

take_along_axis(x, indices, axis)
    dask has none (its issue 3663). Blocks of `indices` gather from the
    blocks of `x` beside them. The gathered axis must lie in one chunk of
    `x`: where it does not, `x` is rechunked to one chunk along it first
    (memory per block: the whole axis times the other chunk sizes). The
    other plan, gathering per chunk of the axis and keeping each element
    from the chunk its index falls in, reads every chunk once per block of
    indices and is not taken.

embedding_lookup(table, ids)
    A table chunked by rows (as sharded embedding tables are), looked up
    by a 1-D array of row numbers: the ids are bucketed by the chunk that
    holds their row, each bucket is gathered on that chunk's worker, and
    the rows are put back in the ids' order in one last task. A row
    `epilogue` (a gatherjit.Epilogue: a quantized table's dequantization)
    runs where the rows are gathered, so only its output travels.

Kernels compile once per process and block shape (the worker's own cache);
the GIL is released while they run. In a distributed worker a kernel runs
on the worker's thread alone (gatherjit.set_threads(1) before its first
kernel): the workers' threads already take every core.
"""

import numpy as np
import dask.array as da

import gatherjit

__all__ = ["take_along_axis", "embedding_lookup"]


_threads_chosen = False


def _one_thread_in_workers():
    global _threads_chosen
    if _threads_chosen:
        return
    _threads_chosen = True
    try:
        from distributed import get_worker
        get_worker()
    except (ImportError, ValueError):  # not in a distributed worker
        return
    gatherjit.set_threads(1)


def _take_along_axis_block(x, idx, axis, mode):
    _one_thread_in_workers()
    return gatherjit.take_along_axis(x, idx, axis, mode=mode)


def take_along_axis(x, indices, axis, mode="raise"):
    """numpy.take_along_axis on dask arrays of one rank, whose sizes agree
    on every dimension but `axis`."""
    x = da.asarray(x)
    indices = da.asarray(indices)
    if x.ndim != indices.ndim:
        raise ValueError(f"take_along_axis: x has {x.ndim} dimensions, indices {indices.ndim}")
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        raise ValueError(f"take_along_axis: axis {axis} is out of range for {x.ndim} dimensions")
    for d in range(x.ndim):
        if d != axis and x.shape[d] != indices.shape[d]:
            raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} "
                             f"differ at dimension {d}")
    if len(x.chunks[axis]) > 1:
        x = x.rechunk({axis: -1})
    # Indices take x's chunks on the other dimensions, and one chunk along
    # the axis per chunk of x there (which is one).
    indices = indices.rechunk(tuple(-1 if d == axis else x.chunks[d] for d in range(x.ndim)))
    return da.map_blocks(_take_along_axis_block, x, indices, axis, mode, dtype=x.dtype,
                         chunks=indices.chunks)


def _rows(block, local, epilogue):
    _one_thread_in_workers()
    return gatherjit.take(block, local, 0, epilogue=epilogue)


def _restore(block, inverse):
    _one_thread_in_workers()
    return gatherjit.take(block, inverse, 0)


def embedding_lookup(table, ids, mode="raise", epilogue=None):
    """table[ids] for a 2-D dask array chunked by rows and a 1-D array of
    row numbers (negative ones count from the end), each row passed through
    `epilogue` (a gatherjit.Epilogue) if one is given."""
    table = da.asarray(table)
    if table.ndim != 2:
        raise ValueError(f"embedding_lookup: the table has {table.ndim} dimensions, not 2")
    ids = np.asarray(ids.compute() if hasattr(ids, "compute") else ids)
    if ids.ndim != 1:
        raise ValueError("embedding_lookup: ids must be one-dimensional")
    rows = table.shape[0]
    ids = ids.astype(np.int64)
    if mode == "raise":
        bad = np.flatnonzero((ids < -rows) | (ids >= rows))
        if bad.size:
            raise IndexError(f"embedding_lookup: ids[{bad[0]}] = {ids[bad[0]]} is out of range "
                             f"for a table of {rows} rows")
        ids = np.where(ids < 0, ids + rows, ids)
    else:
        ids = np.clip(np.where(ids < 0, ids + rows, ids), 0, rows - 1)
    if table.chunks[1] and len(table.chunks[1]) > 1:
        table = table.rechunk({1: -1})
    # The result's dtype and row length: the epilogue's, found by compiling
    # it here for one row (a bad epilogue fails now, not on a worker).
    probe = gatherjit.take(np.zeros((1, table.shape[1]), table.dtype), np.zeros(1, np.int64),
                           0, epilogue=epilogue)
    dtype, width = probe.dtype, probe.shape[1]
    starts = np.concatenate([[0], np.cumsum(table.chunks[0])])
    chunk_of = np.searchsorted(starts, ids, side="right") - 1
    order = np.argsort(chunk_of, kind="stable")
    pieces = []
    for c in np.unique(chunk_of):
        mine = order[chunk_of[order] == c]
        local = ids[mine] - starts[c]
        pieces.append(table.blocks[int(c), 0].map_blocks(
            _rows, local, epilogue, dtype=dtype, chunks=((len(local),), (width,))))
    if not pieces:
        return da.zeros((0, width), dtype=dtype)
    gathered = da.concatenate(pieces).rechunk({0: -1})
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return gathered.map_blocks(_restore, inverse, dtype=dtype)
