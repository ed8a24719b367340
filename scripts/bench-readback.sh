#!/usr/bin/env bash
# Readback benchmark: runs/forwards/summarised curve over a 1,000,000-forward run vs Python's
# json.loads over the same index lines, and nodes(last=100); natively (benches/readback_scan.rs),
# then the same reads in the wasm build through the npm package in Node
# (scripts/bench-readback-node.mjs), which prints the wasm/native ratios against the native table.
# Usage: scripts/bench-readback.sh [BENCH_DIR]   (BENCH_LINES=1000000, BENCH_ROUNDS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then export BENCH_DIR="$1"; fi
native=$(mktemp)
trap 'rm -f "$native"' EXIT
cargo bench --bench readback_scan | tee "$native"
echo
if [ -f pkg/wasm/somatize_bg.wasm ]; then
  node scripts/bench-readback-node.mjs --native "$native"
else
  echo "wasm readback not measured: pkg/wasm/ is not built (scripts/build-wasm.sh)"
fi
