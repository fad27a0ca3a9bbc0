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
    the rows are put back in the ids' order in one last task (gather_nd's
    plan, for 1-tuples). numpy ids are checked now (a bad id raises at
    once); a dask array of ids stays a graph until computed. A row
    `epilogue` (a gatherjit.Epilogue: a quantized table's dequantization)
    runs where the rows are gathered, so only its output travels.

take(x, indices, axis=0)
    numpy.take. Along axis 0 of an `x` chunked along it: gather_nd's plan
    for 1-tuples, as embedding_lookup's (`x` moves nowhere whole).
    Otherwise `x` is rechunked to one chunk along `axis` (if it is not
    already), and each block of `indices` gathers from each block of `x`'s
    other dimensions.

gather_nd(x, indices, batch_dims=0)
    ONNX GatherND. Without batch dimensions, on an `x` chunked along its
    first dimension (rows): each block of tuples is routed by the row its
    first component names, each chunk of rows gathers the tuples that fall
    in it where it lies, and one task per block of tuples puts the values
    in order: `x` moves nowhere whole. Otherwise `x` is rechunked to one
    chunk along the dimensions the tuples address, `indices` to one chunk
    along its last dimension, and the batch dimensions to the same chunks in
    both.

Every function takes gatherjit's modes ("raise", "clip", "clamp", "wrap")
with gatherjit.take's meanings, and names an out-of-range index by its position
in the whole `indices` array. Indices whose chunks have unknown sizes (made by
a filter) serve every plan; take_along_axis pairs them with x's block by
block where x's are unknown too, in as many blocks. x's sizes along the
dimensions that indices address must be known.

Kernels compile once per process and block shape (the worker's own cache);
the GIL is released while they run. In a distributed worker a kernel runs
on the worker's thread alone (gatherjit.set_threads(1) before its first
kernel): the workers' threads already take every core.
"""

import itertools
import math
import operator

import numpy as np
import dask.array as da
from dask.array.core import unify_chunks
from dask.base import tokenize
from dask.blockwise import BlockwiseDepDict, blockwise
from dask.highlevelgraph import HighLevelGraph

import gatherjit

__all__ = ["take_along_axis", "take", "gather_nd", "embedding_lookup"]

_MODES = ("raise", "clip", "clamp", "wrap")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode = {mode!r} is not 'raise' (an error naming the first "
                         "out-of-range index), 'clip' (numpy's), 'clamp' (DirectML's) or "
                         "'wrap' (numpy's: indices modulo the size)")


def _operand(a):
    """`a` as a dask array without chunks of size 0 (a filter or a
    from_array leaves them): dask's rechunks drop some and keep others, and
    a blockwise graph needs its operands' blocks to be the result's."""
    a = da.asarray(a)
    chunks = tuple(tuple(c for c in cs if c) or cs[:1] for cs in a.chunks)
    return a if chunks == a.chunks else a.rechunk(chunks)


def _check_known(function, x, dims, name="x"):
    """ValueError unless x's sizes along `dims` (the dimensions that indices
    address) are known: a filter's chunks are not, until computed."""
    for d in dims:
        if math.isnan(x.shape[d]):
            raise ValueError(f"{function}: {name}'s chunks along dimension {d}, which the "
                             f"indices address, have unknown sizes (a filter's); "
                             f"{name}.compute_chunk_sizes() finds them")


def _check_ids(name, dtype):
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"{name} must be integers, not {dtype}")


def _block_starts(x, dims):
    """Each block's first position in `x` along its first `dims` dimensions,
    by block index, as an argument of a blockwise task. Where the chunks'
    sizes are known: constants (no task of their own: nothing for a
    scheduler to place, and the task still fuses with its neighbours).
    Where some are unknown (a filter's): an array of one tuple per block,
    summed from tasks that read the blocks' shapes along those dimensions."""
    chunks = x.chunks[:dims]
    unknown = [any(math.isnan(c) for c in cs) for cs in chunks]
    starts = [list(itertools.accumulate(c[:-1], initial=0)) for c in chunks]
    blocks = list(itertools.product(*(range(len(c)) for c in chunks)))
    if not any(unknown):
        return BlockwiseDepDict({b: tuple(s[i] for s, i in zip(starts, b)) for b in blocks},
                                numblocks=tuple(len(c) for c in chunks))
    name = "gatherjit-block-starts-" + tokenize(x, dims)
    dsk = {}
    for d in (d for d in range(dims) if unknown[d]):
        for i in range(len(chunks[d])):
            first = tuple(i if e == d else 0 for e in range(x.ndim))
            dsk[(f"{name}-size-{d}", i)] = (operator.getitem, (np.shape, (x.name,) + first), d)
    for b in blocks:
        dsk[(name,) + b] = (tuple, [(sum, [(f"{name}-size-{d}", j) for j in range(i)])
                                    if unknown[d] else starts[d][i] for d, i in enumerate(b)])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, tuple((1,) * len(c) for c in chunks),
                    meta=np.empty((0,) * dims, dtype=object))


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


def _first_bad(idx, size):
    bad = np.argwhere((idx < -size) | (idx >= size))
    return tuple(bad[0]) if bad.size else None


_FUNCTIONS = {"gather_elements": gatherjit.take_along_axis, "gather": gatherjit.take,
              "gather_nd": gatherjit.gather_nd}


def _gather_block(x, idx, starts, op, axis, mode):
    """gatherjit's gather `op` of one block of indices, whose first position
    in the whole array of indices is `starts`: an out-of-range index is named
    by its position there. (Blocks of dimensions the output lacks come as
    lists of one; see _only.)"""
    _one_thread_in_workers()
    x, idx = _only(x), _only(idx)
    try:
        return _FUNCTIONS[op](x, idx, axis, mode=mode)
    except IndexError as e:
        if getattr(e, "position", None) is None:
            raise
        raise IndexError(gatherjit._out_of_range(op, x, idx, axis, e.position, starts)) from None


def _blockwise(op, out, x, xi, indices, ii, axis, mode):
    """da.blockwise of _gather_block in its index notation: x (indexed by
    `xi`) and indices (by `ii`) have one chunk along the dimensions the
    output lacks, and those of indices come last."""
    _, (x, indices) = unify_chunks(x, xi, indices, ii)
    chunkss = dict(zip(xi + ii, x.chunks + indices.chunks))
    name = f"gatherjit-{op.replace('_', '-')}-" + tokenize(x, indices, xi, ii, out, axis, mode)
    kept = tuple(i for i in ii if i in out)
    starts = _block_starts(indices, len(kept))
    numblocks = {x.name: x.numblocks, indices.name: indices.numblocks}
    dependencies = [x, indices]
    if isinstance(starts, da.Array):
        numblocks[starts.name] = starts.numblocks
        dependencies.append(starts)
    graph = blockwise(_gather_block, name, out, x.name, xi, indices.name, ii,
                      starts.name if isinstance(starts, da.Array) else starts, kept,
                      numblocks=numblocks, op=op, axis=axis, mode=mode)
    graph = HighLevelGraph.from_collections(name, graph, dependencies=dependencies)
    return da.Array(graph, name, tuple(chunkss[i] for i in out), dtype=x.dtype)


def take_along_axis(x, indices, axis, mode="raise"):
    """numpy.take_along_axis on dask arrays of one rank, whose sizes agree
    on every dimension but `axis`."""
    _check_mode(mode)
    x = _operand(x)
    indices = _operand(indices)
    _check_ids("indices", indices.dtype)
    if x.ndim != indices.ndim:
        raise ValueError(f"take_along_axis: x has {x.ndim} dimensions, indices {indices.ndim}")
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        raise ValueError(f"take_along_axis: axis {axis} is out of range for {x.ndim} dimensions")
    _check_known("take_along_axis", x, [axis])
    # A dimension whose sizes a filter left unknown (in both: rows of x and
    # the indices made from them) pairs block by block, as dask's
    # elementwise operations pair them; each block's kernel checks the
    # sizes it gets.
    unknown = set()
    for d in range(x.ndim):
        if d == axis:
            continue
        x_nan, i_nan = math.isnan(x.shape[d]), math.isnan(indices.shape[d])
        if x_nan or i_nan:
            if not (x_nan and i_nan and len(x.chunks[d]) == len(indices.chunks[d])):
                name, owner = ("x", "x's") if x_nan else ("indices", "the indices'")
                raise ValueError(f"take_along_axis: {owner} chunks along dimension {d} have "
                                 f"unknown sizes (a filter's) that the other's "
                                 f"{(indices if x_nan else x).chunks[d]} cannot be paired "
                                 f"with; {name}.compute_chunk_sizes() finds them")
            unknown.add(d)
        elif x.shape[d] != indices.shape[d]:
            raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} "
                             f"differ at dimension {d}")
    if len(x.chunks[axis]) > 1:
        x = x.rechunk({axis: -1})
    # Indices take x's chunks on the other dimensions and keep their own
    # along the axis: each of their blocks there reads x's one block.
    indices = indices.rechunk(tuple(indices.chunks[d] if d == axis or d in unknown
                                    else x.chunks[d] for d in range(x.ndim)))
    ind = _letters(x.ndim, ord("a"))
    # x's axis under a letter of its own: its size is not the indices'.
    return _blockwise("gather_elements", ind, x, ind[:axis] + ("Z",) + ind[axis + 1:], indices,
                      ind, axis, mode)


def _only(block):
    """The one block of a dimension the output lacks, which blockwise
    passes (concatenate=False) as a list of one: the arrays keep one chunk
    along such dimensions, and concatenate=True would copy the block."""
    while isinstance(block, list):
        (block,) = block
    return block


def _letters(n, start):
    return tuple(chr(start + i) for i in range(n))


def take(x, indices, axis=0, mode="raise"):
    """numpy.take on a dask array by an array of indices (numpy or dask, any
    shape): the result has x's dimensions with `axis` replaced by the
    indices' dimensions."""
    _check_mode(mode)
    x = _operand(x)
    indices = _operand(indices)
    _check_ids("indices", indices.dtype)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        raise ValueError(f"take: axis {axis} is out of range for {x.ndim} dimensions")
    _check_known("take", x, [axis])
    if axis == 0 and x.numblocks[0] > 1 and x.shape[0] > 0:
        return _gather_nd_by_rows(x, indices[..., None], mode, "take")
    if len(x.chunks[axis]) > 1:
        x = x.rechunk({axis: -1})
    xi = _letters(x.ndim, ord("a"))
    ii = _letters(indices.ndim, ord("A"))
    out = xi[:axis] + ii + xi[axis + 1:]
    return _blockwise("gather", out, x, xi, indices, ii, axis, mode)


def _first_rows(first, rows, mode):
    """The rows the tuples' first components name under `mode` (-1 where
    an index is out of range under "raise")."""
    first = first.astype(np.int64)
    if mode == "clip":  # numpy's: no wrap-around
        return np.clip(first, 0, rows - 1)
    if mode == "wrap":
        return np.mod(first, rows)
    wrapped = np.where(first < 0, first + rows, first)
    if mode == "clamp":
        return np.clip(wrapped, 0, rows - 1)
    return np.where((wrapped >= 0) & (wrapped < rows), wrapped, -1)


def _tuple_error(idx, i, offsets, shape, style):
    """The IndexError naming the first out-of-range component of tuple `i`
    (flat) of the block of tuples `idx` into x of `shape`, by its position
    in the whole array, as the function the tuples came from (`style`)
    names it: "gather_nd" a tuple's component and "take" an index
    (1-tuples), as gatherjit's own do; "embedding_lookup" an id."""
    if style == "embedding_lookup":
        size = shape[0]
        valid = f"valid ids are {-size}..{size - 1}" if size else "the table is empty"
        return IndexError(f"embedding_lookup: ids[{i + offsets[0]}] = {int(idx[i, 0])} "
                          f"is out of range for a table of {size} rows; {valid}")
    if style == "take":
        return IndexError(gatherjit._out_of_range("gather", shape, idx[..., 0], 0, i, offsets))
    return IndexError(gatherjit._out_of_range("gather_nd", shape, idx, 0, i * idx.shape[-1],
                                              offsets))


def _nd_route(idx, starts, shape, offsets, mode, style):
    """Block `idx` of tuples bucketed by the chunk of rows (of x's `shape`,
    chunks starting at `starts`) their first component names: per chunk,
    the tuples' flat positions and the tuples with that component made the
    chunk's own row. Under "raise", the first tuple with a component out of
    range raises, named in the whole array."""
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    if flat.dtype == np.uint64:
        # Values past 2**63 - 1 made int64 as the numbers they are: wrapped,
        # or past the end as they were.
        sizes = np.array(shape[:k], np.uint64)
        flat = flat % np.maximum(sizes, 1) if mode == "wrap" else np.minimum(flat, sizes)
        flat = flat.astype(np.int64)
    first = _first_rows(flat[:, 0], shape[0], mode)
    if mode == "raise":
        bad = np.stack([first < 0] + [(flat[:, c] < -shape[c]) | (flat[:, c] >= shape[c])
                                      for c in range(1, k)], axis=1)
        if bad.any():
            raise _tuple_error(idx, int(np.argmax(bad.any(axis=1))), offsets, shape, style)
    chunk = np.searchsorted(starts, first, side="right") - 1
    order = np.argsort(chunk, kind="stable")
    bounds = np.searchsorted(chunk[order], np.arange(len(starts)))
    buckets = []
    for c in range(len(starts) - 1):
        sel = order[bounds[c]:bounds[c + 1]]
        local = flat[sel].astype(np.int64)
        local[:, 0] = first[sel] - starts[c]
        buckets.append((sel, local))
    return buckets


def _nd_part(bucket, chunk, mode, epilogue):
    """A bucket's tuples gathered from `chunk`, its chunk of rows (1-tuples:
    whole rows, through `epilogue` if one is given), with their positions."""
    _one_thread_in_workers()
    sel, local = bucket
    if sel.size == 0:
        return sel, None
    if epilogue is not None:
        return sel, gatherjit.take(chunk, local[:, 0], 0, epilogue=epilogue)
    return sel, gatherjit.gather_nd(chunk, local, 0, mode=mode)


def _nd_combine(parts, lead, rest, dtype):
    """A block of tuples' values in order, from its parts (one per chunk of
    rows, which between them hold every tuple), in a buffer from gatherjit's
    pool of dead results' memory (every byte is written here)."""
    out = gatherjit._native.empty(np.dtype(dtype), (math.prod(lead),) + rest)
    for sel, values in parts:
        if values is not None:
            out[sel] = values
    return out.reshape(lead + rest)


def _gather_nd_by_rows(x, indices, mode, style="gather_nd", epilogue=None, out=None):
    """gather_nd without batch dimensions on an x chunked by rows (see the
    module's comment): per block of tuples, one task buckets them by chunk
    of rows, one per chunk gathers its bucket where the chunk lies, one puts
    the values in order. Errors are named as `style` names them (see
    _tuple_error). embedding_lookup's form: 1-tuples (ids) through
    `epilogue`, the rows' `out` = (dtype, width)."""
    k = indices.shape[-1]
    x = x.rechunk({d: -1 for d in range(1, x.ndim)})
    indices = indices.rechunk({indices.ndim - 1: -1})
    dtype, rest = (x.dtype, tuple(x.shape[k:])) if out is None else (out[0], (out[1],))
    starts = [int(s) for s in np.concatenate([[0], np.cumsum(x.chunks[0])])]
    token = tokenize(x, indices, mode, style, epilogue, out)
    route, bucket, part, sizes = (f"gatherjit-gather-nd-{step}-{token}"
                                  for step in ("route", "bucket", "part", "sizes"))
    name = "gatherjit-gather-nd-" + token
    dsk = {}
    unknown = any(math.isnan(s) for c in indices.chunks for s in c)
    for block in itertools.product(*(range(n) for n in indices.numblocks[:-1])):
        # Where the blocks' sizes are unknown (indices made by a filter),
        # the tasks that need them get them from tasks that read the
        # blocks' shapes.
        if unknown:
            dsk[(sizes,) + block] = (np.shape, (indices.name,) + block + (0,))
        offsets = [(sum, [(operator.getitem, (sizes,) + block[:d] + (j,) + block[d + 1:], d)
                          for j in range(b)]) if unknown else int(sum(indices.chunks[d][:b]))
                   for d, b in enumerate(block)]
        dsk[(route,) + block] = (_nd_route, (indices.name,) + block + (0,), starts,
                                 tuple(x.shape), offsets, mode, style)
        keys = []
        for c in range(x.numblocks[0]):
            # Each chunk's task is sent its own bucket alone.
            dsk[(bucket,) + block + (c,)] = (operator.getitem, (route,) + block, c)
            keys.append((part,) + block + (c,))
            dsk[keys[-1]] = (_nd_part, (bucket,) + block + (c,),
                             (x.name, c) + (0,) * (x.ndim - 1), mode, epilogue)
        lead = ((operator.getitem, (sizes,) + block, slice(None, -1)) if unknown
                else tuple(indices.chunks[d][b] for d, b in enumerate(block)))
        dsk[(name,) + block + (0,) * len(rest)] = (_nd_combine, keys, lead, rest, dtype)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x, indices])
    chunks = indices.chunks[:-1] + tuple((s,) for s in rest)
    return da.Array(graph, name, chunks, dtype=dtype)


def gather_nd(x, indices, batch_dims=0, mode="raise"):
    """ONNX GatherND on a dask array: the last dimension of `indices` holds
    tuples addressing x's dimensions after `batch_dims` leading ones that x
    and indices share."""
    _check_mode(mode)
    x = _operand(x)
    indices = _operand(indices)
    _check_ids("indices", indices.dtype)
    if indices.ndim < 1 or batch_dims < 0 or batch_dims >= min(x.ndim, indices.ndim):
        raise ValueError(f"gather_nd: batch_dims = {batch_dims} must be below both ranks "
                         f"(x {x.ndim}, indices {indices.ndim})")
    k = indices.shape[-1]
    if batch_dims + k > x.ndim:
        raise ValueError(f"gather_nd: tuples of {k} after {batch_dims} batch dimensions "
                         f"address more than x's {x.ndim} dimensions")
    _check_known("gather_nd", x, range(batch_dims, batch_dims + k))
    if batch_dims == 0 and x.numblocks[0] > 1 and x.shape[0] > 0:
        return _gather_nd_by_rows(x, indices, mode)
    # The tuples' dimensions in one chunk; the batch dimensions chunked alike.
    x = x.rechunk({d: -1 for d in range(batch_dims, batch_dims + k)})
    indices = indices.rechunk({indices.ndim - 1: -1})
    batch = _letters(batch_dims, ord("a"))
    addressed = _letters(k, ord("a") + batch_dims)
    rest = _letters(x.ndim - batch_dims - k, ord("a") + batch_dims + k)
    middle = _letters(indices.ndim - batch_dims - 1, ord("A"))
    out = batch + middle + rest
    return _blockwise("gather_nd", out, x, batch + addressed + rest, indices,
                      batch + middle + ("Z",), batch_dims, mode)


def embedding_lookup(table, ids, mode="raise", epilogue=None):
    """table[ids] for a 2-D dask array chunked by rows and a 1-D array of
    row numbers (negative ones count from the end), each row passed through
    `epilogue` (a gatherjit.Epilogue) if one is given."""
    _check_mode(mode)
    table = _operand(table)
    if table.ndim != 2:
        raise ValueError(f"embedding_lookup: the table has {table.ndim} dimensions, not 2")
    lazy = isinstance(ids, da.Array)
    ids = _operand(ids) if lazy else np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError("embedding_lookup: ids must be one-dimensional")
    _check_ids("embedding_lookup: ids", ids.dtype)
    _check_known("embedding_lookup", table, [0], "table")
    rows = table.shape[0]
    if table.chunks[1] and len(table.chunks[1]) > 1:
        table = table.rechunk({1: -1})
    # The result's dtype and row length: the epilogue's, found by compiling
    # it here for one row (a bad epilogue fails now, not on a worker).
    probe = gatherjit.take(np.zeros((1, table.shape[1]), table.dtype), np.zeros(1, np.int64),
                           0, epilogue=epilogue)
    dtype, width = probe.dtype, probe.shape[1]
    if lazy and rows > 0:
        # A dask array of ids stays a graph: routed to the table's chunks
        # as gather_nd routes 1-tuples, when computed.
        return _gather_nd_by_rows(table, ids[:, None], mode, "embedding_lookup", epilogue,
                                  (dtype, width))
    if lazy:
        ids = ids.compute()
    bad = _first_bad(ids, rows) if mode == "raise" else None
    if bad is not None:  # Named as the routed plan names it.
        raise _tuple_error(ids[:, None], int(bad[0]), [0], (rows,), "embedding_lookup")
    if rows == 0:  # Nothing to read: gatherjit.take's result or error for no rows.
        return da.from_array(gatherjit.take(np.empty((0, table.shape[1]), table.dtype), ids, 0,
                                            mode=mode, epilogue=epilogue), chunks=-1)
    # In range (under raise): bucketed as dask ids are, from one block.
    return _gather_nd_by_rows(table, da.from_array(ids[:, None], chunks=-1), mode,
                              "embedding_lookup", epilogue, (dtype, width))
