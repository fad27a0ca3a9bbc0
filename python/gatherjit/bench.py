"""python3 -m gatherjit.bench: gatherjit from Python against numpy (and
PyTorch where installed), in one process, medians of interleaved rounds.

Per-call overhead on the tiny GE5 case (a compiled kernel called with out=,
and the function form with its cache lookup), then the suite's large cases
through take_along_axis(out=) and take(out=) beside numpy's and PyTorch's
own functions with out= where they have it.

    python3 -m gatherjit.bench [--cases GE5,G1] [--seconds S]
"""

import argparse
import sys
import time

import numpy as np

import gatherjit as gj

CASES = [  # name, op, dtype, data shape, index dtype, index shape, axis
    ("GE5", "gather_elements", "float32", (3, 3), "int64", (2, 3), 0),
    ("GE1", "gather_elements", "float32", (4096, 4096), "int64", (4096, 4096), 1),
    ("GE2", "gather_elements", "float32", (4096, 4096), "int64", (4096, 4096), 0),
    ("G1", "gather", "float32", (50000, 768), "int64", (8192,), 0),
    ("G2", "gather", "float32", (1024, 4096), "int32", (1024,), 1),
]


def medians(calls, seconds=0.3):
    """Median seconds per call of each callable, timed in interleaved rounds."""
    for c in calls:
        c()
    per = []
    for c in calls:
        t0 = time.perf_counter()
        c()
        per.append(time.perf_counter() - t0)
    batch = [max(1, int(2e-3 / max(p, 1e-9))) for p in per]
    samples = [[] for _ in calls]
    start = time.perf_counter()
    while len(samples[0]) < 7 or (time.perf_counter() - start < seconds * len(calls)
                                  and len(samples[0]) < 200):
        for i, c in enumerate(calls):
            t0 = time.perf_counter()
            for _ in range(batch[i]):
                c()
            samples[i].append((time.perf_counter() - t0) / batch[i])
    return [sorted(s)[len(s) // 2] for s in samples]


def case_arrays(case):
    name, op, dtype, shape, itype, ishape, axis = case
    rng = np.random.default_rng(12345)
    data = rng.standard_normal(shape).astype(dtype)
    idx = rng.integers(0, shape[axis], size=ishape).astype(itype)
    return data, idx


def parse_args(argv):
    names = [c[0] for c in CASES]
    p = argparse.ArgumentParser(
        prog="python3 -m gatherjit.bench",
        description="gatherjit from Python against numpy (and PyTorch where installed), "
                    "in one process: medians of interleaved rounds")
    p.add_argument("--cases", default=",".join(names),
                   help=f"comma-separated cases (default: all of {', '.join(names)})")
    p.add_argument("--seconds", type=float, default=0.3,
                   help="time spent per engine and case, at least 7 rounds (default 0.3)")
    args = p.parse_args(argv)
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in args.cases if c not in names]
    if unknown or not args.cases:
        p.error(f"--cases {','.join(unknown) or repr('')}: not a case; "
                f"the cases are {', '.join(names)}")
    if not args.seconds > 0:
        p.error(f"--seconds {args.seconds}: must be above 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        torch.set_num_threads(1)
        torch.from_numpy(np.zeros(1))
    except ImportError:
        torch = None
    except RuntimeError as e:  # a torch built for another numpy than this one
        print(f"torch: skipped ({e})", file=sys.stderr)
        torch = None
    print("case | calls | median | vs gatherjit")
    for case in CASES:
        name, op, dtype, shape, itype, ishape, axis = case
        if name not in args.cases:
            continue
        data, idx = case_arrays(case)
        if op == "gather_elements":
            out = np.empty(ishape, dtype=dtype)
            calls = {
                "gatherjit.take_along_axis(out=)":
                    lambda: gj.take_along_axis(data, idx, axis, out=out),
                "numpy.take_along_axis": lambda: np.take_along_axis(data, idx, axis),
            }
            kernel = gj.compile(op, (shape, dtype), (ishape, itype), axis)
            calls["compiled kernel(out=)"] = lambda: kernel(data, idx, out=out)
            if torch is not None:
                td, ti, to = (torch.from_numpy(data), torch.from_numpy(idx.astype(np.int64)),
                              torch.from_numpy(out))
                calls["torch.gather(out=)"] = lambda: torch.gather(td, axis, ti, out=to)
        else:
            oshape = shape[:axis] + ishape + shape[axis + 1:]
            out = np.empty(oshape, dtype=dtype)
            calls = {
                "gatherjit.take(out=)": lambda: gj.take(data, idx, axis, out=out),
                "numpy.take(out=)": lambda: np.take(data, idx, axis, out=out),
            }
            if torch is not None:
                td, ti, to = (torch.from_numpy(data), torch.from_numpy(idx.astype(np.int64)),
                              torch.from_numpy(out))
                calls["torch.index_select(out=)"] = lambda: torch.index_select(td, axis, ti,
                                                                             out=to)
        names = list(calls)
        times = medians([calls[n] for n in names], args.seconds)
        for n, t in zip(names, times):
            unit = f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"
            print(f"{name} | {n} | {unit} | {t / times[0]:.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
