"""Walks over shapes that change, from Python: gatherjit's function forms
against torch (eager, one thread), numpy and, where installed
(bench/install_peers.sh), torch.compile(dynamic=True), ONNX Runtime (one
session with symbolic dimensions) and JAX (jax.jit, compiled per shape) on
the same arrays, each walk
run in a fresh process (every shape new, empty caches: gatherjit's in a
cache directory of its own) and then again in
that process after gatherjit.wait_background() (the hot shapes
specialized); beside them the generic loop alone and every shape
specialized ahead. Results are checked against numpy after the timed walks.

    PYTHONPATH=build/python python3 bench/shape_walks.py [--walks abc] [--rounds 3]
        [--engines torch,numpy,gatherjit]
    PYTHONPATH=build/python .venv-peers/bin/python bench/shape_walks.py

Each round runs every engine once, in turn, so the shared machine's load
weighs on all alike; the table gives each engine's median over the rounds.

(a) take_along_axis FLOAT32 [L, 64] by INT64 [L, 16], axis 1, L = 8..1007
(b) take (embedding rows) of FLOAT32 [50000, 256] by B INT64 ids, B = 1..1000
(c) take_along_axis FLOAT32 [L, 1024] by INT64 [L, 1024], axis 1,
    L = 64..4096 step 64
"""

import argparse
import json
import statistics
import subprocess
import sys

ENGINES = ("torch", "numpy", "torch.compile", "onnxruntime", "jax", "gatherjit",
           "gatherjit-generic", "gatherjit-ahead")
PEERS = ("torch", "numpy", "torch.compile", "onnxruntime", "jax")

WALKS = {
    "a": dict(kind="ge", cols=64, idx_cols=16, lengths=list(range(8, 1008)), calls=10),
    "b": dict(kind="emb", rows=50000, width=256, lengths=list(range(1, 1001)), calls=10),
    "c": dict(kind="ge", cols=1024, idx_cols=1024, lengths=list(range(64, 4097, 64)), calls=3),
}

CHILD = r"""
import json, os, sys, time
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
walk, engine = json.loads(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(1)
top = walk["lengths"][-1]
if walk["kind"] == "ge":
    data = rng.standard_normal((top, walk["cols"])).astype(np.float32)
    idx = rng.integers(0, walk["cols"], size=(top, walk["idx_cols"]))
    args = [(data[:L], idx[:L]) for L in walk["lengths"]]
else:
    data = rng.standard_normal((walk["rows"], walk["width"])).astype(np.float32)
    idx = rng.integers(0, walk["rows"], size=top)
    args = [(data, idx[:B]) for B in walk["lengths"]]
ge = walk["kind"] == "ge"
if engine.startswith("gatherjit"):
    import tempfile
    import gatherjit as gj
    gj.set_threads(1)
    # A fresh, empty cache directory: no kernel of an earlier process.
    cache = tempfile.TemporaryDirectory(prefix="gatherjit-walk-")
    gj.set_cache_dir(cache.name)
    # gatherjit: the default (adaptive) mode; gatherjit-generic: the
    # generic loop alone; gatherjit-ahead: every shape compiled before the
    # first walk (not timed).
    gj.set_specialize({"gatherjit": "adaptive", "gatherjit-generic": "never",
                       "gatherjit-ahead": "compile"}[engine])
    fn = (lambda d, i: gj.take_along_axis(d, i, 1)) if ge else (lambda d, i: gj.take(d, i, 0))
elif engine == "torch":
    import torch
    torch.set_num_threads(1)
    args = [(torch.from_numpy(d), torch.from_numpy(i)) for d, i in args]
    fn = (lambda d, i: torch.gather(d, 1, i)) if ge else (lambda d, i: torch.index_select(d, 0, i))
elif engine == "torch.compile":  # PyTorch 2: Inductor's code for symbolic sizes
    import torch
    torch.set_num_threads(1)
    args = [(torch.from_numpy(d), torch.from_numpy(i)) for d, i in args]
    fn = torch.compile((lambda d, i: torch.gather(d, 1, i)) if ge else
                       (lambda d, i: torch.index_select(d, 0, i)), dynamic=True)
elif engine == "onnxruntime":  # one session, symbolic dimensions, every shape
    import onnxruntime as ort
    from onnx import TensorProto, helper
    F, I = TensorProto.FLOAT, TensorProto.INT64
    if ge:
        node = helper.make_node("GatherElements", ["data", "indices"], ["out"], axis=1)
        ios = ([("data", F, ["L", walk["cols"]]), ("indices", I, ["L", walk["idx_cols"]])],
               [("out", F, ["L", walk["idx_cols"]])])
    else:
        node = helper.make_node("Gather", ["data", "indices"], ["out"], axis=0)
        ios = ([("data", F, [walk["rows"], walk["width"]]), ("indices", I, ["B"])],
               [("out", F, ["B", walk["width"]])])
    info = lambda io: [helper.make_tensor_value_info(n, t, s) for n, t, s in io]
    model = helper.make_model(helper.make_graph([node], "g", info(ios[0]), info(ios[1])),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    fn = lambda d, i: session.run(None, {"data": d, "indices": i})[0]
elif engine == "jax":  # XLA: compiled per shape, as its users run it
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = jax.jit((lambda d, i: jnp.take_along_axis(d, i, axis=1, mode="clip")) if ge else
                (lambda d, i: jnp.take(d, i, axis=0, mode="clip")))
    put = {}  # walk (b) shares one table: one device copy of it
    def device(d):
        if id(d) not in put:
            put[id(d)] = jax.device_put(d)
        return put[id(d)]
    args = [(device(d), jax.device_put(i)) for d, i in args]
    fn = lambda d, i: f(d, i).block_until_ready()
else:
    fn = (lambda d, i: np.take_along_axis(d, i, 1)) if ge else (lambda d, i: np.take(d, i, 0))
# Every call of the walk; a few shapes' results are checked against
# numpy's after the timed walks.
def walk_once():
    t0 = time.perf_counter()
    for d, i in args:
        for _ in range(walk["calls"]):
            fn(d, i)
    return (time.perf_counter() - t0) * 1e3
if engine == "gatherjit-ahead":
    walk_once()
    gj.wait_background()  # the quick tier's upgrades too: every shape at O2
first = walk_once()
if engine.startswith("gatherjit"):
    gj.wait_background()
second = walk_once()
for d, i in args[:: max(1, len(args) // 7)]:
    got = np.asarray(fn(d, i))
    d, i = np.asarray(d), np.asarray(i)
    want = np.take_along_axis(d, i, 1) if ge else np.take(d, i, 0)
    assert np.array_equal(got, want), "wrong result"
out = {"first_ms": first, "second_ms": second}
module = {"torch.compile": "torch", "gatherjit-generic": "gatherjit",
          "gatherjit-ahead": "gatherjit"}.get(engine, engine)
out["version"] = getattr(sys.modules.get(module), "__version__", "")
if engine.startswith("gatherjit"):
    s = gj.stats()
    out.update(specializations=s["specializations"], misses=s["misses"],
               evictions=s["evictions"], generic_entries=s["generic_entries"])
print(json.dumps(out))
"""


def run(walk, engine):
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(walk), engine],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr else "failed"
    return json.loads(out.stdout), None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--walks", default="abc")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--engines", default=",".join(ENGINES),
                   help="comma-separated, of " + ", ".join(ENGINES) + " (default: all)")
    args = p.parse_args()
    engines = args.engines.split(",")
    if unknown := [e for e in engines if e not in ENGINES]:
        p.error(f"--engines: {', '.join(unknown)} not among {', '.join(ENGINES)}")
    print("| walk | engine | first walk | second walk | gatherjit first / best peer | "
          "gatherjit second / best peer |")
    print("|---|---|---|---|---|---|")
    versions = {}
    for name in args.walks:
        walk = WALKS[name]
        runs, missing = {}, {}
        for _ in range(args.rounds):
            for engine in engines:
                if engine in missing:
                    continue
                r, err = run(walk, engine)
                if r is None:
                    missing[engine] = err
                    continue
                runs.setdefault(engine, []).append(r)
        for engine, err in missing.items():
            print(f"| ({name}) | {engine} | missing: {err} | | | |")
        rows = {e: {k: statistics.median(r[k] for r in rs) for k in ("first_ms", "second_ms")}
                for e, rs in runs.items() if e not in missing}
        peers = [rows[e] for e in PEERS if e in rows]
        versions.update({e: rs[0].get("version", "") for e, rs in runs.items()})
        for engine, r in rows.items():
            ratio1 = ratio2 = ""
            if engine.startswith("gatherjit") and peers:
                best1 = min(p["first_ms"] for p in peers)
                best2 = min(p["second_ms"] for p in peers)
                ratio1 = f"{best1 / r['first_ms']:.2f}x"
                ratio2 = f"{best2 / r['second_ms']:.2f}x"
            print(f"| ({name}) {len(walk['lengths'])} shapes x {walk['calls']} | {engine} | "
                  f"{r['first_ms']:.1f} ms | {r['second_ms']:.1f} ms | {ratio1} | {ratio2} |")
        sys.stdout.flush()
    print("\nVersions: " + "; ".join(f"{e} {v}" for e, v in sorted(versions.items()) if v))
    print(f"\nMedians of {args.rounds} rounds. Ratios above 1 mean gatherjit is faster than the "
          "best peer (torch eager, numpy, torch.compile(dynamic=True), ONNX Runtime with "
          "symbolic dimensions, jax.jit; those installed and run). Each engine runs in a "
          "fresh process (gatherjit's with an empty cache directory of its own); the second "
          "walk is the same walk again (gatherjit's after wait_background()). gatherjit: the "
          "default mode; "
          "gatherjit-generic: the generic loop alone (set_specialize('never')); "
          "gatherjit-ahead: every shape compiled before the first walk, which is not timed.")


if __name__ == "__main__":
    main()
