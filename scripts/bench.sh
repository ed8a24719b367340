#!/usr/bin/env bash
# Every benchmark, each printing medians and ratios against a baseline measured in the same run
# (numpy, cp, json.loads, a memory copy). Run on a quiet machine; numbers go to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy
scripts/build-wasm.sh >/dev/null
for b in tensor reductions store readback verdict; do
  [ -x "scripts/bench-$b.sh" ] || continue
  printf '\n==> bench %s\n' "$b"
  "scripts/bench-$b.sh"
done
printf '\n==> bench page\n'
node scripts/bench-page.mjs
