# PyTorch on a CUDA device, timed on the benchmark cases for `gatherjit bench
# --device cuda`: gather(out=) for GatherElements, index_select(out=) for
# Gather, advanced indexing for GatherND; each output compared bit for bit
# with numpy's on the same data before any timing; medians of CUDA-event
# times, of a whole call to the end of its synchronize (host clock), and of
# take() at as many uniformly random positions of the input (the floor of
# reads that share no cache line). With a third argument, the shape walk
# it describes ({"rows": [L, ...], "row", "ids", "calls"}): gather(out=) of
# float32 [L, row] by int64 [L, ids] on axis 1, calls per shape, each call
# synchronized. Prints one JSON object: {"version": ..., "device": ...,
# "cases": {case: {"torch_us", "call_us", "random_reads_us": ..., "same":
# bool}}, "walk": {"total_ms", "first_call_p99_us", "first_call_max_us"}},
# or {"missing": why}.
import json
import sys
import time


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def event_us(torch, run, repeat):
    run()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    return median(times)


def call_us(torch, run, repeat):
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    return median(times)


def walk(torch, spec):
    dev = torch.device("cuda")
    longest = max(spec["rows"])
    d = torch.arange(longest * spec["row"], dtype=torch.float32, device=dev).reshape(longest, -1)
    i = (torch.arange(longest * spec["ids"], device=dev) * 2654435761 % spec["row"]).reshape(longest, -1)
    o = torch.empty(longest, spec["ids"], dtype=torch.float32, device=dev)
    torch.gather(d[:8], 1, i[:8], out=o[:8])  # CUDA's own first-use costs, outside the walk.
    torch.cuda.synchronize()
    first = []
    start = time.perf_counter()
    for rows in spec["rows"]:
        shape_start = time.perf_counter()
        for call in range(spec["calls"]):
            torch.gather(d[:rows], 1, i[:rows], out=o[:rows])
            torch.cuda.synchronize()
            if call == 0:
                first.append((time.perf_counter() - shape_start) * 1e6)
    total = (time.perf_counter() - start) * 1e3
    first.sort()
    return {"total_ms": total, "first_call_p99_us": first[len(first) * 99 // 100],
            "first_call_max_us": first[-1]}


def main():
    cases = json.loads(sys.argv[1])
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(json.dumps({"missing": f"no torch ({e})"}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"missing": "torch has no CUDA device"}))
        return
    dev = torch.device("cuda")
    dtypes = {"FLOAT32": np.float32, "FLOAT16": np.float16, "UINT8": np.uint8,
              "INT32": np.int32, "INT64": np.int64}
    out = {"version": torch.__version__, "device": torch.cuda.get_device_name(0), "cases": {}}
    for c in cases:
        rng = np.random.default_rng(12345)
        data = rng.integers(0, 100, size=c["data_shape"]).astype(dtypes[c["data_type"]])
        if c["op"] == "GatherND":
            sizes = np.array(c["data_shape"][c["axis"]:c["axis"] + c["index_shape"][-1]])
            idx = (rng.random(size=c["index_shape"]) * sizes).astype(np.int64)
            want = data[tuple(np.moveaxis(idx, -1, 0))] if c["axis"] == 0 else None
        else:
            idx = rng.integers(0, c["data_shape"][c["axis"]], size=c["index_shape"])
            want = (np.take_along_axis(data, idx, c["axis"]) if c["op"] == "GatherElements"
                    else np.take(data, idx, axis=c["axis"]))
        if want is None:
            continue
        d = torch.from_numpy(data).to(dev)
        i = torch.from_numpy(idx.astype(np.int64)).to(dev)
        o = torch.empty(want.shape, dtype=d.dtype, device=dev)
        if c["op"] == "GatherElements":
            run = lambda: torch.gather(d, c["axis"], i, out=o)
        elif c["op"] == "Gather":
            flat = i.reshape(-1)
            shaped = o.view(*want.shape[:c["axis"]], flat.numel(), *want.shape[c["axis"] + idx.ndim:])
            run = lambda: torch.index_select(d, c["axis"], flat, out=shaped)
        else:
            cols = tuple(i[..., k] for k in range(idx.shape[-1]))
            run = lambda: o.copy_(d[cols])
        run()
        torch.cuda.synchronize()
        same = o.cpu().numpy().tobytes() == want.tobytes()
        spots = torch.randint(0, d.numel(), (max(1, o.numel()),), device=dev,
                              generator=torch.Generator(device=dev).manual_seed(7))
        reads = lambda: torch.take(d, spots)  # take reads d as if flattened.
        out["cases"][c["case"]] = {"torch_us": event_us(torch, run, repeat),
                                   "random_reads_us": event_us(torch, reads, repeat),
                                   "call_us": call_us(torch, run, repeat),
                                   "same": same}
    if len(sys.argv) > 3:
        out["walk"] = walk(torch, json.loads(sys.argv[3]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
