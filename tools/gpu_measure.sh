#!/usr/bin/env bash
# The GPU measurement in two steps, for a GPU machine that has a driver and
# PyTorch with CUDA but neither LLVM nor oneTBB nor a package archive:
#
#   tools/gpu_measure.sh pack [DIR]   here: a Release build (build-gpu/),
#       its command line stripped and copied with the shared libraries the
#       GPU machine lacks into DIR (default gpu-pack/, ignored by git),
#       checked to be under 64 MiB and, where the test suite's fake driver
#       is built, smoke-tested through it; with a GatherElements whose
#       index is out of range and the CPU's error for it, examples/cuda's
#       program and PTX (with an epilogue fused) where build/ has them,
#       and, unless GATHERJIT_EPILOGUES=OFF (which leaves clang's libraries
#       out), three gathers with element epilogues, one with a row epilogue
#       (FBGEMM's rowwise dequantization) and the programs
#       xz-compressed (a 44 MiB pack; `run` unpacks them).
#   tools/gpu_measure.sh run [DIR]    there, from the repository root:
#       `gatherjit bench --device cuda` with the packed programs (PyTorch
#       CUDA columns from that machine's python3), writing
#       bench/results/<date>-cuda.json and .md; then the bad index on the
#       device (its error must be the CPU's), the ahead-of-time example
#       (a lookup, and one with an element epilogue, against plain loops)
#       and, where packed, the gathers with epilogues fused on the device
#       against the interpreter (`--engine interp`), byte for byte (one of
#       them checked), a checked epilogue's fault (its error must be the
#       CPU's), and the row epilogue's kernel time beside a device copy of
#       its output.
#
# The Python package on the GPU machine's Python (whose version this
# machine's Debian does not have), in three steps:
#
#   tools/gpu_measure.sh headers OUTDIR   there: that Python's headers and
#       PyTorch's pybind11 headers, packed into OUTDIR/headers.tgz.
#   tools/gpu_measure.sh pack-python HEADERS.tgz [DIR]   here: the native
#       module compiled against them (a Release build of the library
#       without epilogues, build-py/), stripped, with the package's Python
#       files and oneTBB into DIR (default gpu-pack/py).
#   tools/gpu_measure.sh run-python [DIR]   there: python/tests/test_cuda.py
#       and test_torch.py with the packed package.
set -euo pipefail
mode=${1:-}
dir=${2:-gpu-pack}
root=$(cd "$(dirname "$0")/.." && pwd)

case "$mode" in
pack)
  epilogues=${GATHERJIT_EPILOGUES:-ON}
  cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGATHERJIT_EPILOGUES="$epilogues" -DGATHERJIT_BUILD_TESTS=OFF -DGATHERJIT_BUILD_BENCH=OFF \
    -DGATHERJIT_BUILD_EXAMPLES=OFF -DGATHERJIT_PYTHON=OFF >/dev/null
  programs=(gatherjit gatherjit-llvm)
  targets=(gatherjit_cli gatherjit_cli_llvm)
  if [ "$epilogues" = ON ]; then
    programs+=(gatherjit-clang gatherjit-epilogue)
    targets+=(gatherjit_cli_clang gatherjit_epilogue)
  fi
  cmake --build "$root/build-gpu" --target "${targets[@]}"
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib"
  for program in "${programs[@]}"; do
    strip -o "$dir/bin/$program" "$root/build-gpu/$program"
  done
  # oneTBB is not on the GPU machine; glibc, libstdc++, zlib and zstd are.
  ldd "$root/build-gpu/gatherjit-llvm" | awk '/libtbb/ {print $3}' | while read -r lib; do
    cp -L "$lib" "$dir/lib/"
  done
  # A bad index: the device must name it as the CPU does. With epilogues,
  # gathers with element epilogues: each run on the device must give the
  # interpreter's bytes (the epilogue compiled for the host by clang).
  mkdir -p "$dir/oob" "$dir/epi"
  python3 - "$dir" "$epilogues" <<'PY'
# Plain .npy files (no numpy needed).
import random, struct, sys
def save(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
d = sys.argv[1]
rng = random.Random(1)
# FLOAT32 [4096, 64] by INT64 [4096, 64] with one out of range at [3000, 17].
index = [rng.randrange(64) for _ in range(4096 * 64)]
index[3000 * 64 + 17] = 64
save(d + "/oob/d.npy", "<f4", (4096, 64), "f", [float(v) for v in range(4096 * 64)])
save(d + "/oob/i.npy", "<i8", (4096, 64), "q", index)
if sys.argv[2] == "ON":
    # FLOAT16 [512, 256] by INT64 [512, 64] on axis 1, negative indices too.
    save(d + "/epi/h.npy", "<f2", (512, 256), "e", [rng.uniform(-6e4, 6e4) for _ in range(512 * 256)])
    save(d + "/epi/hi.npy", "<i8", (512, 64), "q", [rng.randrange(-256, 256) for _ in range(512 * 64)])
    # FLOAT32 [1000, 64] rows by INT32 [300] on axis 0.
    save(d + "/epi/f.npy", "<f4", (1000, 64), "f", [rng.uniform(-1e6, 1e6) for _ in range(64000)])
    save(d + "/epi/fi.npy", "<i4", (300,), "i", [rng.randrange(-1000, 1000) for _ in range(300)])
    # INT8 [40, 30, 20] by INT64 [25, 2] tuples (GatherND).
    save(d + "/epi/b.npy", "|i1", (40, 30, 20), "b", [rng.randrange(-128, 128) for _ in range(24000)])
    save(d + "/epi/bi.npy", "<i8", (25, 2), "q",
         [v for _ in range(25) for v in (rng.randrange(40), rng.randrange(-30, 30))])
    # UINT8 [5000, 136] rows in FBGEMM's rowwise layout (128 bytes, then a
    # FLOAT32 scale and bias, a power of two and a small integer: exact
    # however the multiply-add rounds) by INT64 [4096] ids, for a row
    # epilogue.
    rows = []
    for _ in range(5000):
        rows += [rng.randrange(256) for _ in range(128)]
        rows += struct.pack("<ff", 2.0 ** rng.randrange(-3, 3), float(rng.randrange(-2, 3)))
    save(d + "/epi/q.npy", "|u1", (5000, 136), "B", rows)
    save(d + "/epi/qi.npy", "<i8", (4096,), "q", [rng.randrange(-5000, 5000) for _ in range(4096)])
PY
  if [ "$epilogues" = ON ]; then
    cp "$root/examples/cuda/dequantize.c" "$dir/epi/"
    printf '%s\n' '/* Division, a branch and a contracted multiply-add. */' \
      'float scale(float x) { return x > 0.0f ? x / 3.0f + 0.5f : -x * 1.25f - 7.0f; }' \
      >"$dir/epi/scale.c"
    printf '%s\n' '/* INT8 into INT32. */' 'int32_t square(int8_t x) { return x * x - 7; }' \
      >"$dir/epi/square.c"
    printf '%s\n' '/* A row: 128 bytes, then a FLOAT32 scale and bias. */' \
      'void dequant(const uint8_t *row, float *out) {' \
      '  float scale = gj_load_f32(row + 128), bias = gj_load_f32(row + 132);' \
      '  for (int j = 0; j < 128; ++j) out[j] = row[j] * scale + bias;' '}' >"$dir/epi/rowwise.c"
    printf '%s\n' '/* Reads past its row: a fault, checked. */' \
      'void past(const uint8_t *row, float *out) {' \
      '  for (int j = 0; j < 128; ++j) out[j] = row[2 * j];' '}' >"$dir/epi/past.c"
  fi
  LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" gather-elements --data "$dir/oob/d.npy" \
    --indices "$dir/oob/i.npy" --axis 1 -o "$dir/oob/o.npy" 2>"$dir/oob/expected.txt" && {
    echo "error: the CPU accepted the bad index" >&2
    exit 1
  }
  if [ -x "$root/build/examples/cuda/cuda_example" ]; then
    # With fused.ptx where build/ has epilogues: the lookup with an epilogue.
    cp "$root/build/examples/cuda/cuda_example" "$root/build/examples/cuda/kernels.ptx" "$dir/bin/"
    cp "$root/build/examples/cuda/fused.ptx" "$dir/bin/" 2>/dev/null || true
  fi
  fake="$root/build/tests/libgatherjit_fake_cuda.so"
  if [ -f "$fake" ]; then
    GATHERJIT_CUDA_DRIVER=$fake LD_LIBRARY_PATH="$dir/lib" \
      "$dir/bin/gatherjit" bench --device cuda --cases G4 --quiet --results "$dir/smoke" >/dev/null
    if [ "$epilogues" = ON ]; then
      GATHERJIT_CUDA_DRIVER=$fake LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" gather \
        --data "$dir/epi/f.npy" --indices "$dir/epi/fi.npy" --axis 0 --epilogue "$dir/epi/scale.c" \
        --epilogue-fn scale --device cuda --no-cache -o "$dir/smoke/o.npy"
      GATHERJIT_CUDA_DRIVER=$fake LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" gather \
        --data "$dir/epi/q.npy" --indices "$dir/epi/qi.npy" --axis 0 --epilogue "$dir/epi/rowwise.c" \
        --epilogue-fn dequant --epilogue-row-out 128 --device cuda --no-cache -o "$dir/smoke/o.npy"
    fi
    echo "smoke test through the fake driver: ok"
    rm -rf "$dir/smoke"
  fi
  if [ "$epilogues" = ON ]; then
    # With clang's libraries the programs are about 130 MB: compressed,
    # and `run` unpacks them.
    tar cf - -C "$dir" bin | xz -T0 -6 >"$dir/bin.tar.xz"
    rm -r "$dir/bin"
  fi
  bytes=$(du -sb "$dir" | cut -f1)
  echo "packed $dir: $((bytes / 1048576)) MiB"
  if [ "$bytes" -ge $((64 << 20)) ]; then
    echo "error: $dir is over 64 MiB" >&2
    exit 1
  fi
  ;;
run)
  if [ -f "$dir/bin.tar.xz" ] && [ ! -d "$dir/bin" ]; then
    # xz, or Python's lzma where the machine has no xz.
    tar xJf "$dir/bin.tar.xz" -C "$dir" 2>/dev/null ||
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$dir/bin.tar.xz" "$dir"
  fi
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$dir/bin/gatherjit" bench --device cuda --results "$root/bench/results"
  set +e
  LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" gather-elements --device cuda \
    --data "$dir/oob/d.npy" --indices "$dir/oob/i.npy" --axis 1 -o "$dir/oob/o.npy" \
    2>"$dir/oob/device.txt"
  code=$?
  if [ "$code" = 2 ] && cmp -s "$dir/oob/expected.txt" "$dir/oob/device.txt"; then
    echo "bad index on the device: exit 2, the CPU's message: $(cat "$dir/oob/device.txt")"
  else
    echo "bad index on the device: exit $code, $(cat "$dir/oob/device.txt") (CPU: $(cat "$dir/oob/expected.txt"))"
  fi
  if [ -x "$dir/bin/cuda_example" ]; then
    "$dir/bin/cuda_example" "$dir/bin/kernels.ptx" "$dir/bin/fused.ptx"
  fi
  if [ -f "$dir/epi/dequantize.c" ]; then
    e="$dir/epi"
    rowwise="gather --data $e/q.npy --indices $e/qi.npy --axis 0 --epilogue $e/rowwise.c --epilogue-fn dequant --epilogue-row-out 128"
    matched=0
    for run in \
      "gather-elements --data $e/h.npy --indices $e/hi.npy --axis 1 --epilogue $e/dequantize.c --epilogue-fn dequantize" \
      "gather --data $e/f.npy --indices $e/fi.npy --axis 0 --epilogue $e/scale.c --epilogue-fn scale" \
      "gather-nd --data $e/b.npy --indices $e/bi.npy --epilogue $e/square.c --epilogue-fn square" \
      "$rowwise" \
      "gather --data $e/f.npy --indices $e/fi.npy --axis 0 --epilogue $e/scale.c --epilogue-fn scale --epilogue-checked"; do
      # shellcheck disable=SC2086 # a run is its words
      LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" $run --engine interp --no-cache -o "$e/want.npy" &&
        LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" $run --device cuda --no-cache -o "$e/got.npy" &&
        cmp "$e/want.npy" "$e/got.npy" && matched=$((matched + 1))
    done
    echo "epilogues fused on the device: $matched of 5 gathers matched the interpreter"
    # A checked epilogue that faults: the device's error must be the CPU's.
    past="gather --data $e/q.npy --indices $e/qi.npy --axis 0 --epilogue $e/past.c --epilogue-fn past --epilogue-row-out 128 --epilogue-checked --no-cache -o $e/o.npy"
    # shellcheck disable=SC2086 # a run is its words
    LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" $past 2>"$e/fault-cpu.txt"
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" $past --device cuda 2>"$e/fault-device.txt"
    code=$?
    if [ "$code" = 2 ] && cmp -s "$e/fault-cpu.txt" "$e/fault-device.txt"; then
      echo "checked epilogue's fault on the device: exit 2, the CPU's message"
    else
      echo "checked epilogue's fault on the device: exit $code, $(cat "$e/fault-device.txt") (CPU: $(cat "$e/fault-cpu.txt"))"
    fi
    # The row epilogue's kernel (a thread to each row) beside a device copy
    # of its output's bytes, medians of 50 runs.
    # shellcheck disable=SC2086 # a run is its words
    LD_LIBRARY_PATH="$dir/lib" "$dir/bin/gatherjit" $rowwise --device cuda --no-cache --stats \
      --repeat 50 -o "$e/got.npy" 2>&1 | sed 's/^/rowwise dequantization on the device: /'
    # PyTorch's same lookup and arithmetic, where python3 has it with CUDA.
    python3 - "$e" "$root/bench" <<'PY' || true
import sys
import numpy as np
import torch
e = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from cuda_baselines import event_us
q = torch.from_numpy(np.load(e + "/q.npy")).cuda()
ids = torch.from_numpy(np.load(e + "/qi.npy")).cuda() % q.shape[0]
def run():
    rows = q.index_select(0, ids)
    tail = rows[:, 128:].contiguous().view(torch.float32)
    return rows[:, :128].float() * tail[:, :1] + tail[:, 1:]
same = run().cpu().numpy().tobytes() == np.load(e + "/got.npy").tobytes()
print("rowwise dequantization, PyTorch %s: %.1f us (median of 50), same output: %s"
      % (torch.__version__, event_us(torch, run, 50), same))
PY
  fi
  ;;
headers)
  out=${2:?usage: tools/gpu_measure.sh headers OUTDIR}
  python3 - "$out" <<'PY'
import os, sys, sysconfig, tarfile, torch
inc = sysconfig.get_paths()["include"]
multiarch = os.path.join("/usr/include", sysconfig.get_config_var("MULTIARCH") or "",
                         os.path.basename(inc))
os.makedirs(sys.argv[1], exist_ok=True)
with tarfile.open(os.path.join(sys.argv[1], "headers.tgz"), "w:gz") as t:
    t.add(inc, "python")
    if os.path.isdir(multiarch):  # Debian's and Ubuntu's pyconfig.h includes it
        t.add(multiarch, os.path.join(sysconfig.get_config_var("MULTIARCH"), os.path.basename(inc)))
    t.add(os.path.join(os.path.dirname(torch.__file__), "include", "pybind11"), "pybind11")
    suffix = sysconfig.get_config_var("EXT_SUFFIX").encode()
    info = tarfile.TarInfo("ext_suffix")
    info.size = len(suffix)
    import io
    t.addfile(info, io.BytesIO(suffix))
PY
  ;;
pack-python)
  headers=${2:?usage: tools/gpu_measure.sh pack-python HEADERS.tgz [DIR]}
  dir=${3:-gpu-pack/py}
  build="$root/build-py"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGATHERJIT_EPILOGUES=OFF \
    -DGATHERJIT_BUILD_TESTS=OFF -DGATHERJIT_BUILD_BENCH=OFF -DGATHERJIT_BUILD_EXAMPLES=OFF \
    -DGATHERJIT_PYTHON=ON >/dev/null
  cmake --build "$build" --target gatherjit_python
  rm -rf "$build/other" && mkdir -p "$build/other/include"
  tar xzf "$headers" -C "$build/other/include"
  suffix=$(cat "$build/other/include/ext_suffix")
  # This build's compile and link lines for the module, with the other
  # Python's headers (and pybind11) first and its objects and name.
  commands=$(ninja -C "$build" -t commands gatherjit_python)
  link=$(grep -e ' -shared ' <<<"$commands" | tail -1)
  link=${link#: && }
  link=${link% && :}
  for src in "$root"/python/src/*.cpp; do
    obj="$build/other/$(basename "$src" .cpp).o"
    compile=$(grep -e " -c $src\$" <<<"$commands" | tail -1)
    compile=${compile/-isystem /-isystem $build/other/include/python -isystem $build/other/include -isystem }
    (cd "$build" && eval "${compile% -o *} -o $obj -c $src")
    link=$(echo "$link" | sed "s#python/CMakeFiles/gatherjit_python.dir/src/$(basename "$src").o#$obj#")
  done
  link=$(echo "$link" | sed "s#-o python/gatherjit/_native[^ ]*#-o $build/other/_native$suffix#")
  (cd "$build" && eval "$link")
  rm -rf "$dir"
  mkdir -p "$dir/gatherjit" "$dir/lib"
  cp "$root"/python/gatherjit/*.py "$root/python/gatherjit/py.typed" "$dir/gatherjit/"
  strip -o "$dir/gatherjit/_native$suffix" "$build/other/_native$suffix"
  ldd "$build/other/_native$suffix" | awk '/libtbb/ {print $3}' | while read -r lib; do
    cp -L "$lib" "$dir/lib/"
  done
  echo "packed $dir: $(($(du -sb "$dir" | cut -f1) / 1048576)) MiB"
  ;;
run-python)
  dir=${2:-gpu-pack/py}
  PYTHONPATH="$dir" LD_LIBRARY_PATH="$dir/lib" GATHERJIT_CACHE_DIR="$(mktemp -d)" \
    python3 -m pytest -q -p no:cacheprovider "$root/python/tests/test_cuda.py" \
    "$root/python/tests/test_torch.py"
  ;;
*)
  echo "usage: tools/gpu_measure.sh pack|run [DIR] | headers OUTDIR | pack-python HEADERS.tgz [DIR] | run-python [DIR]" >&2
  exit 2
  ;;
esac
