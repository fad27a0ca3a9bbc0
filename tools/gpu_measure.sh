#!/usr/bin/env bash
# The GPU measurement in two steps, for a GPU machine that has a driver and
# PyTorch with CUDA but neither LLVM nor oneTBB nor a package archive:
#
#   tools/gpu_measure.sh pack [DIR]   here: a Release build without clang's
#       libraries (build-gpu/), its command line stripped and copied with
#       the shared libraries the GPU machine lacks into DIR (default
#       gpu-pack/, ignored by git), checked to be under 64 MiB and, where
#       the test suite's fake driver is built, smoke-tested through it.
#   tools/gpu_measure.sh run [DIR]    there, from the repository root:
#       `gatherjit bench --device cuda` with the packed programs (PyTorch
#       CUDA columns from that machine's python3), writing
#       bench/results/<date>-cuda.json and .md.
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
  ;;
*)
  echo "usage: tools/gpu_measure.sh pack|run [DIR]" >&2
  exit 2
  ;;
esac
