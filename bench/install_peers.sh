#!/usr/bin/env bash
# Installs the engines a user would pick instead of gatherjit that Debian
# does not package (ONNX Runtime and the onnx package, a current PyTorch,
# JAX with XLA for the CPU) into a venv beside Debian's numpy, for the
# benchmarks only: nothing in the build or the tests needs them.
#   bash bench/install_peers.sh [VENV]     (default: .venv-peers)
#   GATHERJIT_BENCH_PYTHON=.venv-peers/bin/python build/gatherjit bench
#   .venv-peers/bin/python bench/shape_walks.py
# Versions are pinned; Debian's numpy is kept (pip may not replace it).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv-peers}
/usr/bin/python3 -m venv --system-site-packages "$venv"
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
/usr/bin/python3 -c 'import numpy; print("numpy==" + numpy.__version__)' >"$constraints"
# PyTorch's wheels on the package index carry its CUDA libraries, which its
# import loads even on a machine without a GPU: they are installed too.
"$venv/bin/pip" install -q --disable-pip-version-check -c "$constraints" \
  onnxruntime==1.20.1 onnx==1.17.0 'jax[cpu]==0.4.35' torch==2.5.1
"$venv/bin/python" - <<'PY'
import importlib
for name in ("numpy", "onnxruntime", "onnx", "torch", "jax", "jaxlib"):
    module = importlib.import_module(name)
    print(f"{name} {module.__version__}")
PY
