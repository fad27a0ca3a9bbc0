#!/usr/bin/env bash
# The whole test suite: set up, build, run every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2 --timeout 900
