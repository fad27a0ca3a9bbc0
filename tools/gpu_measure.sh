#!/usr/bin/env bash
# The GPU measurement in two steps, for a GPU machine that has a driver and
# PyTorch with CUDA but neither LLVM nor oneTBB nor a package archive:
#
#   tools/gpu_measure.sh pack [DIR]   here: a Release build without clang's
#       libraries (build-gpu/), its command line stripped and copied with
#       the shared libraries the GPU machine lacks into DIR (default
#       gpu-pack/, ignored by git), checked to be under 64 MiB and, where
#       the test suite's fake driver is built, smoke-tested through it;
#       with a GatherElements whose index is out of range and the CPU's
#       error for it, and examples/cuda's program and PTX (with an
#       epilogue fused) where build/ has them.
#   tools/gpu_measure.sh run [DIR]    there, from the repository root:
#       `gatherjit bench --device cuda` with the packed programs (PyTorch
#       CUDA columns from that machine's python3), writing
#       bench/results/<date>-cuda.json and .md; then the bad index on the
#       device (its error must be the CPU's) and the ahead-of-time example
#       (a lookup, and one with an element epilogue, against plain loops).
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
  cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGATHERJIT_EPILOGUES=OFF -DGATHERJIT_BUILD_TESTS=OFF -DGATHERJIT_BUILD_BENCH=OFF \
    -DGATHERJIT_BUILD_EXAMPLES=OFF -DGATHERJIT_PYTHON=OFF >/dev/null
  cmake --build "$root/build-gpu" --target gatherjit_cli gatherjit_cli_llvm
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib"
  for program in gatherjit gatherjit-llvm; do
    strip -o "$dir/bin/$program" "$root/build-gpu/$program"
  done
  # oneTBB is not on the GPU machine; glibc, libstdc++, zlib and zstd are.
  ldd "$root/build-gpu/gatherjit-llvm" | awk '/libtbb/ {print $3}' | while read -r lib; do
    cp -L "$lib" "$dir/lib/"
  done
  # A bad index: the device must name it as the CPU does.
  mkdir -p "$dir/oob"
  python3 - "$dir/oob" <<'PY'
# Plain .npy files (no numpy needed): data 4096 x 64 FLOAT32, indices
# 4096 x 64 INT64 with one out of range at [3000, 17].
import random, struct, sys
def save(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
rng = random.Random(1)
index = [rng.randrange(64) for _ in range(4096 * 64)]
index[3000 * 64 + 17] = 64
save(sys.argv[1] + "/d.npy", "<f4", (4096, 64), "f", [float(v) for v in range(4096 * 64)])
save(sys.argv[1] + "/i.npy", "<i8", (4096, 64), "q", index)
PY
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
  bytes=$(du -sb "$dir" | cut -f1)
  echo "packed $dir: $((bytes / 1048576)) MiB"
  if [ "$bytes" -ge $((64 << 20)) ]; then
    echo "error: $dir is over 64 MiB" >&2
    exit 1
  fi
  fake="$root/build/tests/libgatherjit_fake_cuda.so"
  if [ -f "$fake" ]; then
    GATHERJIT_CUDA_DRIVER=$fake LD_LIBRARY_PATH="$dir/lib" \
      "$dir/bin/gatherjit" bench --device cuda --cases G4 --quiet --results "$dir/smoke" >/dev/null
    echo "smoke test through the fake driver: ok"
    rm -rf "$dir/smoke"
  fi
  ;;
run)
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
