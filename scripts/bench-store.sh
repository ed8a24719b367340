#!/usr/bin/env bash
# Store benchmark: ingest vs cp (and cp + sync), per-forward bookkeeping as a share of a forward
# carrying 1 MiB of tensors, the companion end to end, index scan; medians of BENCH_RUNS runs.
# Usage: scripts/bench-store.sh [BENCH_DIR]
#   BENCH_FORWARDS=200 forwards per measurement, BENCH_RUNS=5 runs per median,
#   BENCH_DEPTH=16384 forwards in flight for the pipelined writer (the companion's default),
#   BENCH_EMPTY_FORWARDS=50000 forwards without tensors per pipelined bookkeeping measurement,
#   BENCH_ONLY=ingest,companion,bookkeeping,scan to run some parts only.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then export BENCH_DIR="$1"; fi
exec cargo bench --bench store_write
