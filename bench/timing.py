"""Timing shared by the Python scripts in bench/ (python_baselines.py, which
`gatherjit bench` embeds, keeps its own)."""

import time


def median_ms(call, reps):
    """Median milliseconds of `reps` calls of `call`, after one untimed call."""
    call()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]
