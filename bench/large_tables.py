"""Gathers from tables larger than a core's caches, from Python, on warm
repeated calls: gatherjit's function forms (after their first calls and
wait_background(), the specialized kernel) against torch (eager) and numpy,
every engine on the same arrays with its output preallocated.

    PYTHONPATH=build/python python3 bench/large_tables.py [--threads 1]
        [--rounds 3] [--cases take,rows]
    PYTHONPATH=build/python .venv-peers/bin/python bench/large_tables.py

take   1-D take of 1M random ids: FLOAT32 by INT64 and FLOAT64 by INT32,
       tables of 4 to 128 MiB (torch.index_select, numpy.take)
rows   take_along_axis along rows of FLOAT32 by INT64 ids of their own, one
       and four ids a 64-byte line, rows of 1, 4 and 16 MiB (torch.gather,
       numpy.take_along_axis)

Each round runs every engine once, in turn, so the shared machine's load
weighs on all alike; a cell is the median over the rounds of each round's
median of 21 calls. Outputs are checked against numpy's before timing. An
engine that is not installed is reported and left out. torch and
gatherjit run on --threads threads (numpy runs on one).
"""

import argparse
import statistics
import sys
import time

import numpy as np

MiB = 1 << 20


def take_cases():
    for dtype, itype in (("float32", "int64"), ("float64", "int32")):
        for mib in (4, 8, 16, 32, 128):
            n = mib * MiB // np.dtype(dtype).itemsize
            yield (f"take {dtype} [{mib} MiB] by {itype} [1M]", "take",
                   dict(dtype=dtype, itype=itype, shape=(n,), ids=(1 << 20,)))


def row_cases():
    for mib, rows in ((1, 16), (4, 4), (16, 4)):
        cols = mib * MiB // 4
        for per_line in (1, 4):
            k = cols // 16 * per_line
            yield (f"rows float32 {rows} x [{mib} MiB] by int64, {per_line} id(s) a line",
                   "rows", dict(dtype="float32", itype="int64", shape=(rows, cols),
                                ids=(rows, k)))


def median_ms(call, calls=21):
    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def engines(kind, data, ids, out, threads):
    """(name, call) for every installed engine, and the missing names."""
    got, missing = [], []
    try:
        import gatherjit as gj
        gj.set_threads(threads)
        if kind == "take":
            got.append(("gatherjit", lambda: gj.take(data, ids, out=out)))
        else:
            got.append(("gatherjit", lambda: gj.take_along_axis(data, ids, 1, out=out)))
    except ImportError:
        missing.append("gatherjit")
    try:
        import torch
        torch.set_num_threads(threads)
        td, to = torch.from_numpy(data), torch.from_numpy(out)
        ti = torch.from_numpy(ids.astype(np.int64))
        if kind == "take":
            got.append(("torch", lambda: torch.index_select(td, 0, ti, out=to)))
        else:
            got.append(("torch", lambda: torch.gather(td, 1, ti, out=to)))
    except ImportError:
        missing.append("torch")
    if kind == "take":
        got.append(("numpy", lambda: np.take(data, ids, out=out)))
    else:
        got.append(("numpy", lambda: np.copyto(out, np.take_along_axis(data, ids, 1))))
    return got, missing


def run_case(kind, spec, rounds, threads, rng):
    data = rng.random(spec["shape"]).astype(spec["dtype"])
    hi = spec["shape"][-1]
    ids = rng.integers(0, hi, spec["ids"]).astype(spec["itype"])
    out = np.empty(spec["ids"], spec["dtype"])
    want = np.take(data, ids) if kind == "take" else np.take_along_axis(data, ids, 1)
    calls, missing = engines(kind, data, ids, out, threads)
    for name, call in calls:
        out.fill(0)
        call()
        if not np.array_equal(out, want):
            sys.exit(f"{name} differs from numpy on {spec}")
    try:
        import gatherjit as gj
        for _ in range(3):
            calls[0][1]()
        gj.wait_background()
    except ImportError:
        pass
    times = {name: [] for name, _ in calls}
    for _ in range(rounds):
        for name, call in calls:
            times[name].append(median_ms(call))
    return {name: statistics.median(t) for name, t in times.items()}, missing


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", default="take,rows")
    a = p.parse_args()
    chosen = set(a.cases.split(","))
    cases = ([c for c in take_cases() if "take" in chosen] +
             [c for c in row_cases() if "rows" in chosen])
    rng = np.random.default_rng(0)
    print(f"{a.threads} thread(s), median over {a.rounds} rounds of medians of 21 calls (ms)\n")
    print("| case | gatherjit | torch | numpy | gatherjit over the best peer |")
    print("|---|---|---|---|---|")
    all_missing = set()
    for title, kind, spec in cases:
        ms, missing = run_case(kind, spec, a.rounds, a.threads, rng)
        all_missing.update(missing)
        peers = [v for k, v in ms.items() if k != "gatherjit"]
        ratio = f"{min(peers) / ms['gatherjit']:.2f}x" if "gatherjit" in ms and peers else "-"
        cells = [f"{ms[e]:.2f}" if e in ms else "-" for e in ("gatherjit", "torch", "numpy")]
        print(f"| {title} | " + " | ".join(cells) + f" | {ratio} |", flush=True)
    if all_missing:
        print(f"\nnot installed, left out: {', '.join(sorted(all_missing))}")


if __name__ == "__main__":
    main()
