"""gatherjit.dask.take_along_axis against dask's own best way, numpy's
take_along_axis block by block (dask has no take_along_axis), on a
LocalCluster: a FLOAT32 array of --gib GiB in blocks of --block-mib MiB
(whole rows, the gathered axis in one chunk), INT32 indices half as wide,
each row gathered at random positions. Both are computed on the workers,
timed (median of --reps after one untimed pass) and compared element for
element.

    PYTHONPATH=build/python python3 bench/dask_take_along_axis.py --gib 4 --block-mib 64
"""

import argparse
import statistics
import time

import numpy as np
import dask.array as da
import distributed

import gatherjit.dask as gjd


def _corner(block):
    # A copy: a view would keep the whole block alive until the run ends.
    return block[:1, :1].copy()


def _scheduler_tasks(dask_scheduler):
    return len(dask_scheduler.tasks)


def timed(client, make, reps):
    """Median seconds to compute make()'s blocks on the workers, each
    reduced to one element there (what comes back is a few bytes). Before
    each run the scheduler has forgotten the last one's tasks (it would
    otherwise reuse results that are still held). One pass more than timed:
    the first compiles each worker's kernel (gatherjit) and warms the
    workers' memory (both)."""
    settled = client.run_on_scheduler(_scheduler_tasks)
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        make().map_blocks(_corner, chunks=(1, 1)).compute()
        times.append(time.perf_counter() - start)
        deadline = time.perf_counter() + 30
        while client.run_on_scheduler(_scheduler_tasks) > settled:
            if time.perf_counter() > deadline:
                raise RuntimeError("the scheduler kept the last run's tasks")
            time.sleep(0.01)
    print("  runs (s):", " ".join(f"{t:.3f}" for t in times))
    return statistics.median(times[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=4.0)
    p.add_argument("--block-mib", type=float, default=64.0)
    p.add_argument("--row", type=int, default=32768, help="elements per row (the axis)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()

    rows = int(a.gib * 2**30 / 4 / a.row)
    block_rows = max(1, int(a.block_mib * 2**20 / 4 / a.row))
    cluster = distributed.LocalCluster(n_workers=a.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
    with distributed.Client(cluster) as client:
        x = da.random.random((rows, a.row), chunks=(block_rows, a.row)).astype(np.float32)
        idx = da.random.randint(0, a.row, size=(rows, a.row // 2),
                                chunks=(block_rows, a.row // 2)).astype(np.int32)
        x, idx = client.persist([x, idx])
        distributed.wait([x, idx])
        print(f"x {x.shape} float32 = {x.nbytes / 2**30:.2f} GiB in {x.numblocks[0]} blocks of "
              f"{block_rows * a.row * 4 / 2**20:.0f} MiB; indices {idx.shape} int32; "
              f"{a.workers} workers, 1 thread each")
        def by_gatherjit():
            return gjd.take_along_axis(x, idx, 1)

        def by_numpy():
            return da.map_blocks(np.take_along_axis, x, idx, 1, dtype=x.dtype, chunks=idx.chunks)

        t_gj = timed(client, by_gatherjit, a.reps)
        t_np = timed(client, by_numpy, a.reps)
        same = bool((by_gatherjit() == by_numpy()).all().compute())
        print("method | median s | vs gatherjit")
        print(f"gatherjit.dask.take_along_axis | {t_gj:.3f} | 1.00x")
        print(f"dask map_blocks(numpy.take_along_axis) | {t_np:.3f} | {t_np / t_gj:.2f}x")
        print(f"results identical: {same}")
    cluster.close()


if __name__ == "__main__":
    main()
