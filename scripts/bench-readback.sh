#!/usr/bin/env bash
# Readback benchmark: runs/forwards/summarised curve over a 1,000,000-forward run vs Python's
# json.loads over the same index lines, and nodes(last=100).
# Usage: scripts/bench-readback.sh [BENCH_DIR]   (BENCH_LINES=1000000, BENCH_ROUNDS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then export BENCH_DIR="$1"; fi
exec cargo bench --bench readback_scan
