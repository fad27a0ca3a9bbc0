#!/usr/bin/env bash
# The main job: set up, build, then run the seed documents' examples through
# the JIT (checked against the document and the interpreter) and time one
# large case on both engines.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
exec build/gatherjit demo
