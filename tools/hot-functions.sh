#!/usr/bin/env bash
# Regenerates tools/gatherjit/hot-functions.txt: the functions the command
# line's compilers run on typical calls (start-up, each operator compiled at
# O0-O3, an epilogue, an AOT object, --help), one mangled name a line, as
# valgrind's callgrind saw them. The build hands the list to lld's
# --symbol-ordering-file (cmake/GatherjitOrder.cmake), which lays those
# functions out together: a compiling run then touches a few MB of code
# instead of pages scattered over 23 MB of LLVM.
#
# A maintainer's tool, not a build step: it needs valgrind and numpy, and a
# build of the programs (tools/setup.sh). Rerun it after an LLVM upgrade or
# a change to what a compile runs; a name the list has and the programs do
# not is skipped by the linker, so a stale list costs speed, never a build.
#   tools/hot-functions.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
out=tools/gatherjit/hot-functions.txt
command -v valgrind >/dev/null || { echo "hot-functions: needs valgrind" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
np.save(f"{d}/f32.npy", rng.random((64, 100)).astype(np.float32))
np.save(f"{d}/i64.npy", rng.integers(0, 64, (64, 100)))
np.save(f"{d}/f16.npy", rng.random((50, 8)).astype(np.float16))
np.save(f"{d}/i32.npy", rng.integers(-50, 50, (7, 3)).astype(np.int32))
np.save(f"{d}/u8.npy", rng.integers(0, 255, (9, 6, 5)).astype(np.uint8))
np.save(f"{d}/nd.npy", rng.integers(0, 5, (4, 2)))
EOF
cat >"$work/widen.c" <<'EOF'
float widen(float16_t x) { return (float)x; }
EOF

export GATHERJIT_NO_CACHE=1
n=0
profile() {
  n=$((n + 1))
  valgrind -q --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
    --callgrind-out-file="$work/cg.$n" "$@" >/dev/null
}
llvm=$build/gatherjit-llvm
clang=$build/gatherjit-clang
cd "$work"
# Most common first (see the list's order below).
profile "$llvm" gather-elements --data f32.npy --indices i64.npy -o o.npy
profile "$llvm" --help
profile "$llvm" gather --data u8.npy --indices i32.npy --axis 1 -o o.npy --oob clip
profile "$llvm" gather-nd --data u8.npy --indices nd.npy -o o.npy
profile "$llvm" gather-elements --data f32.npy --indices i64.npy -o o.npy --opt O1 --oob clamp
profile "$llvm" gather --data f16.npy --indices i32.npy --axis 0 -o o.npy --opt O0
profile "$llvm" aot --data-shape 64,100 --indices-shape 64,100 -o k.o --header k.h
profile "$clang" --help
profile "$clang" gather-elements --data f32.npy --indices i64.npy -o o.npy --opt O3
profile "$clang" gather --data f16.npy --indices i32.npy --axis 0 -o o.npy \
  --epilogue widen.c --epilogue-fn widen
cd "$OLDPWD"
# Every function a run entered, by name (callgrind's placeholders for code
# without a symbol, "0x..." and "(below main)", are not names): each run's
# new ones after the previous runs', so that start-up, then the default
# compile (O2), then the other paths are each packed together.
for i in $(seq "$n"); do
  sed -n 's/^fn=//p' "$work/cg.$i" | grep -v -e '^0x' -e '^(' | LC_ALL=C sort -u
  # The first run's code ends here: tools/gatherjit/Prefault.cpp reads it
  # ahead of the first compile.
  if [ "$i" = 1 ]; then echo gatherjit_first_run_end; fi
done | awk '!seen[$0]++' >"$out.tmp"
mv "$out.tmp" "$out"
echo "hot-functions: $(wc -l <"$out") functions in $out"
