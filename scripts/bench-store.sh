#!/usr/bin/env bash
# Store benchmark: ingest vs cp, per-forward bookkeeping, companion end to end, index scan.
# Usage: scripts/bench-store.sh [BENCH_DIR]   (BENCH_FORWARDS=200 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then export BENCH_DIR="$1"; fi
exec cargo bench --bench store_write
