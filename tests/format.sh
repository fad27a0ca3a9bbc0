#!/bin/bash
# The tree follows .clang-format: every tracked C and C++ file is as
# clang-format 14 (Debian bookworm's) leaves it; another version breaks
# lines otherwise. Skips (77) without it, or outside a git checkout.
cd "$1" || exit 1
if ! command -v clang-format >/dev/null; then
  echo "no clang-format: skipped"
  exit 77
fi
version=$(clang-format --version | grep -o 'version [0-9]*' | cut -d' ' -f2)
if [ "$version" != 14 ]; then
  echo "clang-format $version, not 14: skipped"
  exit 77
fi
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "not a git checkout: skipped"
  exit 77
fi
git ls-files -z '*.cpp' '*.h' '*.c' | xargs -0 clang-format --dry-run --Werror --style=file
