#!/usr/bin/env bash
# Installs gatherjit from the build tree into a scratch prefix, configures
# examples/ as a separate CMake project against it (find_package), builds it
# and runs every example. The AOT program's output must equal the in-tree
# build's, which ExamplesTest checks against the interpreter.
#   installed.sh BUILD_DIR SOURCE_DIR IN_TREE_AOT_EXAMPLE
set -euo pipefail
build=$1 source=$2 in_tree_aot=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/gatherjit/gatherjit.h"
test -f "$work/prefix/lib/cmake/gatherjit/gatherjitConfig.cmake"
# The library carries its own LLVM (unless built with the shared one):
# nothing of LLVM among its dependencies, none of LLVM's symbols exported.
lib=$(find "$work/prefix" -name 'libgatherjit.so.*.*.*' | head -n 1)
if [ "${GATHERJIT_SHARED_LLVM:-OFF}" = OFF ]; then
  if ldd "$lib" | grep -q LLVM; then
    echo "$lib needs a shared LLVM:" >&2; ldd "$lib" >&2
    exit 1
  fi
  if nm -DC --defined-only "$lib" | grep -E ' [A-Za-z] (llvm::|LLVM)' >&2; then
    echo "$lib exports LLVM's symbols" >&2
    exit 1
  fi
fi

# The functions the installed headers declare at namespace scope (a line
# that starts with its type).
declared=$(grep -hoE '^[A-Za-z_][A-Za-z0-9_:<>, *&]* [*&]?[a-z][A-Za-z0-9_]*\(' \
    "$work"/prefix/include/gatherjit/*.h |
  grep -vE '^(constexpr|static|template|typedef|return|inline|using) ' |
  sed -E 's/.*[ *&]([a-z][A-Za-z0-9_]*)\($/\1/' | grep -v '^gj_' | sort -u)
if [ "$(wc -w <<<"$declared")" -lt 40 ]; then
  echo "found only these functions in the installed headers: $declared" >&2
  exit 1
fi
# Only the C API and include/gatherjit/'s C++ API are exported: every
# defined dynamic symbol is gj_*, a public class's member or a declared
# function, and there are as many as that API has (about 150), not
# thousands.
public="^(gj_[a-z_]+|gatherjit::(Runtime|Kernel|Status|ValidDesc|AnyDesc|OnnxDesc)::|gatherjit::($(tr '\n' '|' <<<"$declared" | sed 's/|$//'))[[(])"
exported=$(nm -DC --defined-only "$lib" | sed -E 's/^[0-9a-f]* [A-Za-z] //')
if grep -Ev "$public" <<<"$exported" >&2; then
  echo "$lib exports the names above, which are not gatherjit's public API" >&2
  exit 1
fi
count=$(wc -l <<<"$exported")
if [ "$count" -lt 90 ] || [ "$count" -gt 170 ]; then
  echo "$lib exports $count symbols; its API has about 150" >&2
  exit 1
fi
# And every declared function is exported: a program that calls one links
# against the library.
for name in $declared; do
  if ! grep -qE "^gatherjit::$name(\[abi:[a-z0-9]+\])?\(" <<<"$exported"; then
    echo "$lib does not export gatherjit::$name, which include/gatherjit/ declares" >&2
    exit 1
  fi
done

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/examples" -B "$work/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null

# Where the package compiles epilogues, the CUDA example fuses one too.
if grep -q '^set(gatherjit_EPILOGUES ON)' "$work/prefix/lib/cmake/gatherjit/gatherjitConfig.cmake"; then
  grep -q 'cvt.f32.f16' "$work/build/cuda/fused.ptx"
fi
"$work/build/embed/embed_cpp"
"$work/build/embed/embed_c"
"$work/build/aot/aot_example" > "$work/aot.txt"
"$in_tree_aot" > "$work/aot-in-tree.txt"
cmp "$work/aot.txt" "$work/aot-in-tree.txt"
# The AOT program needs nothing of gatherjit or LLVM at run time.
if ldd "$work/build/aot/aot_example" | grep -Eq 'gatherjit|LLVM'; then
  echo "aot_example links gatherjit or LLVM" >&2
  exit 1
fi
# A build without CMake: the C example through pkg-config alone.
pc=(env PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config)
test "$("${pc[@]}" --modversion gatherjit)" = "$(sed -n 's/^project(gatherjit VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")"
# shellcheck disable=SC2046
cc "$source/examples/embed/embed.c" -o "$work/embed_pkg_config" $("${pc[@]}" --cflags --libs gatherjit)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/embed_pkg_config" > "$work/embed-pkg-config.txt"
"$work/build/embed/embed_c" > "$work/embed-cmake.txt"
cmp "$work/embed-pkg-config.txt" "$work/embed-cmake.txt"
echo "installed package: examples built and ran"
