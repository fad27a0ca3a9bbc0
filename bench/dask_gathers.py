"""gatherjit.dask's take_along_axis, take and gather_nd against dask's own
ways on a FLOAT32 array of --gib GiB in blocks of --block-mib MiB (whole
rows), on dask's threaded scheduler and on a LocalCluster of --workers
one-thread processes:

- take_along_axis, INT32 indices half as wide as a row, at random
  positions: dask has none; its best way is numpy's block by block
  (map_blocks(np.take_along_axis)).
- take of --columns random columns (axis 1), as an int64 numpy array:
  da.take (what x[:, ids] is) and map_blocks(np.take).
- take of --rows random rows (axis 0, across x's chunks), as an int64
  numpy array: da.take (what x[ids] is); no block-by-block way exists.
- gather_nd of --points random (row, column) pairs, a dask array of
  INT64 tuples: x.vindex[rows, columns], dask's point reads.
- the memory line: each block of x read once (its rows' maxima), what any
  way that reads all of x (take of columns) cannot beat.

Every way is computed, each block reduced to a copy of one element where
it lies (what comes back is a few bytes, and the block's memory is free
at once), timed (median of --reps after one untimed pass, which compiles
gatherjit's kernels and warms memory) and checked equal to gatherjit's
result element for element.

    PYTHONPATH=build/python python3 bench/dask_gathers.py --gib 2
"""

import argparse
import statistics
import time

import numpy as np
import dask
import dask.array as da
import distributed

import gatherjit.dask as gjd


def _corner(block):
    # A copy: a view would keep the whole block alive until the run ends.
    return (block[:1, :1] if block.ndim == 2 else block[:1]).copy()


def _scheduler_tasks(dask_scheduler):
    return len(dask_scheduler.tasks)


def timed(client, make, reps):
    """Median seconds to compute make()'s blocks, each reduced to a corner.
    On a cluster, before each run the scheduler has forgotten the last
    run's tasks (it would otherwise reuse results still held)."""
    settled = client.run_on_scheduler(_scheduler_tasks) if client else 0
    times = []
    for _ in range(reps + 1):
        result = make()
        chunks = tuple((1,) * len(c) for c in result.chunks)
        start = time.perf_counter()
        result.map_blocks(_corner, chunks=chunks).compute()
        times.append(time.perf_counter() - start)
        deadline = time.perf_counter() + 30
        while client and client.run_on_scheduler(_scheduler_tasks) > settled:
            if time.perf_counter() > deadline:
                raise RuntimeError("the scheduler kept the last run's tasks")
            time.sleep(0.01)
    return statistics.median(times[1:])


def same(a, b):
    return bool((a == b).all().compute())


def workloads(x, idx, rng, a):
    """Each operation's ways, gatherjit's first: (label, a function making
    the lazy result)."""
    rows, row = x.shape
    cols = rng.integers(0, row, a.columns)
    picked = rng.integers(0, rows, a.rows)
    r = rng.integers(0, rows, a.points)
    c = rng.integers(0, row, a.points)
    tuples = da.from_array(np.stack([r, c], axis=1), chunks=(a.points // 8, 2))
    return {
        "take_along_axis": [
            ("gatherjit.dask.take_along_axis", lambda: gjd.take_along_axis(x, idx, 1)),
            ("map_blocks(np.take_along_axis)",
             lambda: da.map_blocks(np.take_along_axis, x, idx, 1, dtype=x.dtype,
                                   chunks=idx.chunks)),
        ],
        "take": [
            ("gatherjit.dask.take", lambda: gjd.take(x, cols, 1)),
            ("da.take (x[:, ids])", lambda: da.take(x, cols, axis=1)),
            ("map_blocks(np.take)",
             lambda: x.map_blocks(np.take, cols, axis=1, dtype=x.dtype,
                                  chunks=(x.chunks[0], (a.columns,)))),
        ],
        "take rows": [
            ("gatherjit.dask.take", lambda: gjd.take(x, picked, 0)),
            ("da.take (x[ids])", lambda: da.take(x, picked, axis=0)),
        ],
        "gather_nd": [
            ("gatherjit.dask.gather_nd", lambda: gjd.gather_nd(x, tuples)),
            ("x.vindex[rows, columns]", lambda: x.vindex[r, c]),
        ],
        "memory line": [
            ("x.max(axis=1) block by block",
             lambda: x.map_blocks(np.max, axis=1, keepdims=True, dtype=x.dtype,
                                  chunks=(x.chunks[0], (1,)))),
        ],
    }


def run(name, client, x, rng, a, lines):
    rows, row = x.shape
    # take_along_axis's indices are made and held first, as x is.
    idx = da.random.randint(0, row, size=(rows, row // 2),
                            chunks=(x.chunks[0], row // 2)).astype(np.int32)
    if client:
        idx = client.persist(idx)
        distributed.wait(idx)
    else:
        idx = idx.persist()
    for op, ways in workloads(x, idx, rng, a).items():
        times = [(label, timed(client, make, a.reps)) for label, make in ways]
        if not ways[0][0].startswith("gatherjit"):  # The memory line: nothing to compare.
            lines += [f"| {name} | {op} | {label} | {t:.3f} | - | - |" for label, t in times]
            print(lines[-1], flush=True)
            continue
        ours = ways[0][1]()
        for (label, t), (_, make) in zip(times, ways):
            equal = True if label == ways[0][0] else same(ours, make())
            lines.append(f"| {name} | {op} | {label} | {t:.3f} | {t / times[0][1]:.2f}x | "
                         f"{'yes' if equal else 'NO'} |")
            print(lines[-1], flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--block-mib", type=float, default=64.0)
    p.add_argument("--row", type=int, default=32768, help="elements per row")
    p.add_argument("--columns", type=int, default=8192, help="columns take picks")
    p.add_argument("--rows", type=int, default=4096, help="rows take picks")
    p.add_argument("--points", type=int, default=1 << 22, help="gather_nd's point reads")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    rows = int(a.gib * 2**30 / 4 / a.row)
    block_rows = max(1, int(a.block_mib * 2**20 / 4 / a.row))
    lines = ["| scheduler | operation | way | median s | vs gatherjit | same result |",
             "|---|---|---|---|---|---|"]
    print(f"x ({rows}, {a.row}) float32 = {rows * a.row * 4 / 2**30:.2f} GiB in blocks of "
          f"{block_rows * a.row * 4 / 2**20:.0f} MiB; take: {a.columns} columns, {a.rows} rows; "
          f"gather_nd: {a.points} points")
    print("\n".join(lines), flush=True)

    with dask.config.set(scheduler="threads", num_workers=a.workers):
        x = da.random.random((rows, a.row), chunks=(block_rows, a.row)).astype(np.float32)
        x = x.persist()
        run(f"threads ({a.workers})", None, x, np.random.default_rng(1), a, lines)
        del x

    cluster = distributed.LocalCluster(n_workers=a.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
    with distributed.Client(cluster) as client:
        x = da.random.random((rows, a.row), chunks=(block_rows, a.row)).astype(np.float32)
        x = client.persist(x)
        distributed.wait(x)
        run(f"{a.workers} workers", client, x, np.random.default_rng(1), a, lines)
    cluster.close()


if __name__ == "__main__":
    main()
