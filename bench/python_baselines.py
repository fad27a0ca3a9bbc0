# What users would pick instead of gatherjit, timed on the benchmark cases:
# numpy.take_along_axis / numpy.take / advanced indexing and torch.gather /
# torch.index_select / advanced indexing, single-threaded, output
# preallocated where the API allows it.
#
# Input (argv[1]): a JSON list of {"case", "op", "data_type", "data_shape",
# "index_type", "index_shape", "axis"} ("axis" is GatherND's batch_dims).
# Output (stdout): a JSON object
# {"numpy": {case: median_ns}, "torch": {case: median_ns}} holding the
# libraries that are installed. `gatherjit bench` runs this when python3 is
# available.
import json
import sys
import time

DTYPES = {"FLOAT32": "float32", "FLOAT16": "float16", "UINT8": "uint8",
          "INT64": "int64", "INT32": "int32"}


def median_ns(call, evict):
    """As the suite times its engines (bench/Suite.cpp): batches of at least
    a millisecond, each after `evict` (untimed) has cleared the caches."""
    call()
    start = time.perf_counter()
    call()
    one = time.perf_counter() - start
    batch = 1 if one >= 1e-3 else int(1e-3 / max(one, 1e-9)) + 1
    samples, begin = [], time.perf_counter()
    while len(samples) < (3 if one > 0.1 else 7) or (
            time.perf_counter() - begin < 0.25 and len(samples) < 200):
        evict()
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - t0) * 1e9 / batch)
    samples.sort()
    n = len(samples)
    return samples[n // 2] if n % 2 else (samples[n // 2 - 1] + samples[n // 2]) / 2


def evictor():
    """A 256 MiB copy, as the suite's between its batches."""
    import numpy as np
    src = np.ones(256 << 20, dtype=np.uint8)
    dst = np.empty_like(src)
    return lambda: np.copyto(dst, src)


def random_indices(rng, c):
    """Valid indices: along the axis, or per GatherND tuple component."""
    import numpy as np
    if c["op"] != "GatherND":
        return rng.integers(0, c["data_shape"][c["axis"]], size=c["index_shape"])
    sizes = np.array(c["data_shape"][c["axis"]:c["axis"] + c["index_shape"][-1]])
    return (rng.random(size=c["index_shape"]) * sizes).astype(np.int64)


def main():
    cases = json.loads(sys.argv[1])
    results = {}
    try:
        evict = evictor()
    except ImportError:  # Neither library runs without numpy.
        json.dump(results, sys.stdout)
        return

    def timed(call):
        return median_ns(call, evict)

    try:
        import numpy as np
        rng = np.random.default_rng(12345)
        out = {}
        for c in cases:
            data = rng.integers(0, 100, size=c["data_shape"]).astype(DTYPES[c["data_type"]])
            idx = random_indices(rng, c).astype(DTYPES[c["index_type"]])
            if c["op"] == "GatherND":
                if c["axis"] != 0:
                    continue
                # data[tuple(idx.T)]: advanced indexing, one array per component.
                parts = tuple(np.moveaxis(idx, -1, 0))
                out[c["case"]] = timed(lambda: data[parts])
            elif c["op"] == "GatherElements":
                out[c["case"]] = timed(lambda: np.take_along_axis(data, idx, c["axis"]))
            else:
                shape = (c["data_shape"][:c["axis"]] + c["index_shape"] +
                         c["data_shape"][c["axis"] + 1:])
                dst = np.empty(shape, dtype=data.dtype)
                out[c["case"]] = timed(
                    lambda: np.take(data, idx, axis=c["axis"], out=dst, mode="raise"))
        results["numpy"] = out
    except ImportError:
        pass
    try:
        import numpy as np
        import torch
        torch.set_num_threads(1)
        out = {}
        for c in cases:
            dtype = getattr(torch, DTYPES[c["data_type"]])
            data = torch.randint(0, 100, c["data_shape"]).to(dtype)
            idx = torch.from_numpy(random_indices(np.random.default_rng(12345), c))
            if c["op"] == "GatherND":
                if c["axis"] != 0:
                    continue
                parts = tuple(idx.movedim(-1, 0))
                out[c["case"]] = timed(lambda: data[parts])
            elif c["op"] == "GatherElements":
                dst = torch.empty(c["index_shape"], dtype=dtype)
                out[c["case"]] = timed(lambda: torch.gather(data, c["axis"], idx, out=dst))
            elif len(c["index_shape"]) == 1:
                shape = (c["data_shape"][:c["axis"]] + c["index_shape"] +
                         c["data_shape"][c["axis"] + 1:])
                dst = torch.empty(shape, dtype=dtype)
                out[c["case"]] = timed(
                    lambda: torch.index_select(data, c["axis"], idx, out=dst))
            else:
                flat = idx.reshape(-1)
                out[c["case"]] = timed(lambda: torch.index_select(data, c["axis"], flat))
        results["torch"] = out
    except ImportError:
        pass
    json.dump(results, sys.stdout)


main()
