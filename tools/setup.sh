#!/usr/bin/env bash
# Installs the Debian packages gatherjit needs (only those missing; the
# static LLVM components need zlib's and zstd's development files),
# configures with CMake and Ninja, and builds. Used by tools/demo.sh,
# tools/test.sh and .ci/run.
#   BUILD_DIR   build directory (default: build)
#   CMAKE_ARGS  extra configure arguments
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ ccache pkg-config clang-format
  llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev
  libclang-19-dev libclang-cpp19-dev
  zlib1g-dev libzstd-dev libprotobuf-dev libonnx-dev libonnx-testdata
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libtbb-dev gnuplot-nox lld
  pybind11-dev python3-dev python3-numpy python3-pytest python3-dask python3-distributed
  python3-venv python3-build
  python3-torch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir"
