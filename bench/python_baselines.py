# What users would pick instead of gatherjit, timed on the benchmark cases,
# one thread each, output preallocated where the API allows it:
#   numpy          take_along_axis / take / advanced indexing
#   torch          gather / index_select / advanced indexing (eager)
#   torch.compile  the same through torch.compile(dynamic=True) (PyTorch 2)
#   onnxruntime    a one-node model of the ONNX operator, I/O bound to
#                  preallocated buffers (run_with_iobinding)
#   jax            jax.jit of take_along_axis / take / advanced indexing
# Every peer's output is compared with numpy's, bit for bit, before it is
# timed (a peer that differs is left out of that case); compile times are
# kept apart from the steady runs. bench/install_peers.sh makes a venv with
# the peers Debian does not package.
#
# Input (argv[1]): a JSON list of {"case", "op", "data_type", "data_shape",
# "index_type", "index_shape", "axis"} ("axis" is GatherND's batch_dims).
# Output (stdout): a JSON object {library: {case: median_ns}} holding the
# libraries that are installed, and "_versions": {library: version},
# "_compile_ms": {library: {case: ms}}, "_missing": [library, ...].
# `gatherjit bench` runs this with $GATHERJIT_BENCH_PYTHON, else the python3
# on PATH, else /usr/bin/python3.
import json
import os
import sys
import time

# XLA on one thread, as every other engine (before jax is imported).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

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


def case_arrays(c):
    """The case's data and valid indices (numpy), and numpy's result: the
    reference every peer must equal."""
    import numpy as np
    rng = np.random.default_rng(12345)
    data = rng.integers(0, 100, size=c["data_shape"]).astype(DTYPES[c["data_type"]])
    idx = random_indices(rng, c).astype(DTYPES[c["index_type"]])
    if c["op"] == "GatherND":
        want = gather_nd_reference(data, idx, c["axis"])
    elif c["op"] == "GatherElements":
        want = np.take_along_axis(data, idx, c["axis"])
    else:
        want = np.take(data, idx, axis=c["axis"])
    return data, idx, want


def gather_nd_reference(data, idx, batch_dims):
    import numpy as np
    if batch_dims == 0:
        return data[tuple(np.moveaxis(idx, -1, 0))]
    return np.stack([gather_nd_reference(d, i, batch_dims - 1) for d, i in zip(data, idx)])


def same(got, want):
    import numpy as np
    got = np.asarray(got)
    return got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()


def torch_compiled(cases, timed):
    """PyTorch 2's torch.compile(dynamic=True): Inductor's C++ for symbolic
    sizes; the first call of each case (its compile) is timed apart."""
    import numpy as np
    import torch
    if not hasattr(torch, "compile"):
        raise ImportError("torch.compile needs PyTorch 2")
    torch.set_num_threads(1)
    times, compiles = {}, {}
    for c in cases:
        data, idx, want = case_arrays(c)
        d, i = torch.from_numpy(data), torch.from_numpy(idx.astype(np.int64))
        a = c["axis"]
        if c["op"] == "GatherElements":
            fn = torch.compile(lambda x, y: torch.gather(x, a, y), dynamic=True)
        elif c["op"] == "Gather":
            fn = torch.compile(lambda x, y: torch.index_select(x, a, y.reshape(-1)).reshape(
                x.shape[:a] + y.shape + x.shape[a + 1:]), dynamic=True)
        elif a == 0:
            fn = torch.compile(lambda x, y: x[tuple(y.movedim(-1, 0))], dynamic=True)
        else:
            continue
        try:
            start = time.perf_counter()
            got = fn(d, i)
            compiles[c["case"]] = (time.perf_counter() - start) * 1e3
        except Exception:  # Inductor cannot build here (no compiler...): no column.
            continue
        if same(got.numpy(), want):
            times[c["case"]] = timed(lambda: fn(d, i))
    return torch.__version__, times, compiles


def onnxruntime_peer(cases, timed):
    """ONNX Runtime's own GatherElements / Gather / GatherND kernels: a
    one-node model, one thread, inputs and output bound to preallocated
    buffers so the timing is the kernel and its dispatch."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper
    types = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
             "uint8": TensorProto.UINT8, "int64": TensorProto.INT64, "int32": TensorProto.INT32}
    times = {}
    for c in cases:
        data, idx, want = case_arrays(c)
        if c["op"] == "GatherND":  # ONNX's GatherND takes int64 indices only
            idx = idx.astype(np.int64)
        attr = {"batch_dims": c["axis"]} if c["op"] == "GatherND" else {"axis": c["axis"]}
        node = helper.make_node(c["op"], ["data", "indices"], ["out"], **attr)
        graph = helper.make_graph(
            [node], "g",
            [helper.make_tensor_value_info("data", types[str(data.dtype)], data.shape),
             helper.make_tensor_value_info("indices", types[str(idx.dtype)], idx.shape)],
            [helper.make_tensor_value_info("out", types[str(want.dtype)], want.shape)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        out = np.empty_like(want)
        binding = session.io_binding()
        binding.bind_cpu_input("data", data)
        binding.bind_cpu_input("indices", idx)
        binding.bind_output("out", "cpu", 0, out.dtype, out.shape, out.ctypes.data)
        session.run_with_iobinding(binding)
        if same(out, want):
            times[c["case"]] = timed(lambda: session.run_with_iobinding(binding))
    return ort.__version__, times, {}


def jax_peer(cases, timed):
    """XLA through jax.jit, compiled per shape (its compile timed apart),
    results waited for with block_until_ready."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)  # int64 indices stay int64
    # XLA's CPU runtime runs its own thread pool whatever XLA_FLAGS say
    # (1.7 cores busy on GE3): its threads, made when the backend starts,
    # inherit this thread's one-core affinity.
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        return _jax_cases(jax, jnp, cases, timed)
    finally:
        os.sched_setaffinity(0, cores)


def _jax_cases(jax, jnp, cases, timed):
    times, compiles = {}, {}
    for c in cases:
        data, idx, want = case_arrays(c)
        a = c["axis"]
        if c["op"] == "GatherElements":
            fn = jax.jit(lambda x, y: jnp.take_along_axis(x, y, axis=a, mode="clip"))
        elif c["op"] == "Gather":
            fn = jax.jit(lambda x, y: jnp.take(x, y, axis=a, mode="clip"))
        elif a == 0:
            fn = jax.jit(lambda x, y: x[tuple(jnp.moveaxis(y, -1, 0))])
        else:
            continue
        d, i = jax.device_put(data), jax.device_put(idx)
        start = time.perf_counter()
        compiled = fn.lower(d, i).compile()
        compiles[c["case"]] = (time.perf_counter() - start) * 1e3
        if same(compiled(d, i).block_until_ready(), want):
            times[c["case"]] = timed(lambda: compiled(d, i).block_until_ready())
    return jax.__version__, times, compiles


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
    versions, compile_ms, missing = {}, {}, []
    for name, run in (("torch.compile", torch_compiled), ("onnxruntime", onnxruntime_peer),
                      ("jax", jax_peer)):
        try:
            version, times, compiles = run(cases, timed)
        except ImportError:
            missing.append(name)
            continue
        except Exception as e:  # A peer that fails says so on stderr, the others go on.
            print(f"python_baselines: {name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        versions[name] = version
        if times:
            results[name] = times
        if compiles:
            compile_ms[name] = compiles
    for name in ("numpy", "torch"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            missing.append(name)
    results["_versions"] = versions
    results["_compile_ms"] = compile_ms
    results["_missing"] = missing
    json.dump(results, sys.stdout)


main()
