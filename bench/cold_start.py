"""Whole `gatherjit gather-elements` processes on a 64x100 FLOAT32 tensor:
medians of 15 runs with an empty kernel cache (a new directory each run:
compile and store), compiling the kernel (--no-cache), loading it from a
cache directory another run filled, and with the interpreter, for each
executable given, in alternating rounds.

    python3 bench/cold_start.py build/gatherjit [other/gatherjit ...]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def median_ms(args, env, n=15):
    """`env` is a dict, or a function making each run's."""
    times = []
    for _ in range(n):
        run_env = env() if callable(env) else env
        t0 = time.perf_counter()
        subprocess.run(args, check=True, env=run_env, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    exes = sys.argv[1:] or ["build/gatherjit"]
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        data, idx, out = (os.path.join(tmp, n) for n in ("d.npy", "i.npy", "o.npy"))
        np.save(data, rng.random((64, 100)).astype(np.float32))
        np.save(idx, rng.integers(0, 64, (64, 100)))
        for r in range(3):
            for exe in exes:
                cache = tempfile.mkdtemp(dir=tmp)
                env = dict(os.environ, GATHERJIT_CACHE_DIR=cache)
                args = [exe, "gather-elements", "--data", data, "--indices", idx, "--axis", "0",
                        "-o", out]
                def empty():
                    return dict(os.environ, GATHERJIT_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                print(f"round {r + 1} {exe}: empty cache {median_ms(args, empty):.1f} ms"
                      f", no-cache {median_ms(args + ['--no-cache'], env):.1f} ms"
                      f", cached {median_ms(args, env):.1f} ms"
                      f", interp {median_ms(args + ['--engine', 'interp'], env):.1f} ms")


if __name__ == "__main__":
    main()
