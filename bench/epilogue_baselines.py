# numpy's (and, where it is installed, PyTorch's) unfused ways of the
# fused-epilogue benchmarks of bench/EpilogueBench.cpp, single-threaded, on
# data of the same shapes: prints one JSON object of medians in ms.
#   python3 bench/epilogue_baselines.py [--reps N]
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np

from timing import median_ms


def main():
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 15
    rng = np.random.default_rng(1)
    rows, dim, ids = 1_000_000, 128, 8192
    table = rng.integers(0, 256, (rows, dim + 8), dtype=np.uint8)
    scale = (0.01 * (1 + np.arange(rows) % 7)).astype(np.float32)
    bias = (-1.0 + 0.001 * (np.arange(rows) % 13)).astype(np.float32)
    table[:, dim:dim + 4] = scale.view(np.uint8).reshape(rows, 4)
    table[:, dim + 4:] = bias.view(np.uint8).reshape(rows, 4)
    idx = rng.integers(0, rows, ids)

    def np_rowwise():
        r = table[idx]
        s = r[:, dim:dim + 4].copy().view(np.float32)
        b = r[:, dim + 4:].copy().view(np.float32)
        return r[:, :dim].astype(np.float32) * s + b

    n = 4096
    half = rng.standard_normal((n, n)).astype(np.float16)
    ge_idx = rng.integers(0, n, (n, n))
    out = {"numpy_rowwise_ms": median_ms(np_rowwise, reps),
           "numpy_ge1_f16_to_f32_ms": median_ms(
               lambda: np.take_along_axis(half, ge_idx, 1).astype(np.float32), reps)}
    try:
        import torch
        torch.set_num_threads(1)
        t_table, t_idx = torch.from_numpy(table), torch.from_numpy(idx)

        def torch_rowwise():
            r = torch.index_select(t_table, 0, t_idx)
            s = r[:, dim:dim + 4].contiguous().view(torch.float32)
            b = r[:, dim + 4:].contiguous().view(torch.float32)
            return r[:, :dim].to(torch.float32) * s + b
        t_half, t_ge = torch.from_numpy(half), torch.from_numpy(ge_idx)
        out["torch_rowwise_ms"] = median_ms(torch_rowwise, reps)
        out["torch_ge1_f16_to_f32_ms"] = median_ms(
            lambda: torch.gather(t_half, 1, t_ge).to(torch.float32), reps)
    except ImportError:
        out["torch"] = "not installed"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
