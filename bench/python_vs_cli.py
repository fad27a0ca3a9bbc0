"""A gatherjit kernel called from Python (compiled kernel and function form,
out= given) against the command line's in-process kernel time
(`--stats` run_ms_median over --repeat 31) on identical arrays, GE1 and G1,
in alternating rounds.

    PYTHONPATH=build/python python3 bench/python_vs_cli.py build/gatherjit
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

import gatherjit as gj
from timing import median_ms

CASES = [  # name, command, op, data shape, indices shape, axis
    ("GE1", "gather-elements", "gather_elements", (4096, 4096), (4096, 4096), 1),
    ("G1", "gather", "gather", (50000, 768), (8192,), 0),
]


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else "build/gatherjit"
    rounds = 5
    rng = np.random.default_rng(12345)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, n) for n in ("data.npy", "indices.npy", "out.npy")]
        for name, command, op, shape, ishape, axis in CASES:
            data = rng.standard_normal(shape).astype(np.float32)
            idx = rng.integers(0, shape[axis], size=ishape).astype(np.int64)
            np.save(paths[0], data)
            np.save(paths[1], idx)
            k = gj.compile(op, data=(data.shape, data.dtype), indices=(idx.shape, idx.dtype),
                           axis=axis)
            out = np.empty(k.output_shape, np.float32)
            function = gj.take_along_axis if op == "gather_elements" else gj.take
            cli, kernel, form = [], [], []
            for _ in range(rounds):
                run = subprocess.run([exe, command, "--data", paths[0], "--indices", paths[1],
                                      "--axis", str(axis), "-o", paths[2], "--repeat", "31",
                                      "--stats", "--no-cache"],
                                     capture_output=True, text=True, check=True)
                cli.append(json.loads(run.stderr.strip().splitlines()[-1])["run_ms_median"])
                kernel.append(median_ms(lambda: k(data, idx, out=out), 31))
                form.append(median_ms(lambda: function(data, idx, axis, out=out), 31))
            c, p, f = (statistics.median(v) for v in (cli, kernel, form))
            print(f"{name}: command line {c:.3f} ms, compiled kernel from Python {p:.3f} ms "
                  f"({p / c:.3f}x), function form {f:.3f} ms ({f / c:.3f}x)")


if __name__ == "__main__":
    main()
