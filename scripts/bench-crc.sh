#!/usr/bin/env bash
# Benchmark: CRC-32 in wasm (Node), the interleaved slicing-by-16 tables of src/tensor/crc.rs
# against crc32fast's wasm code, over 64 MiB (benches/crc_wasm.rs). Prints both medians and
# crc32fast's time over ours: the tables stay only while that is above 1.
# Usage: scripts/bench-crc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --quiet --target wasm32-unknown-unknown --bench crc_wasm -- --nocapture 2>&1 \
  | grep -E 'crc32 of|test result|FAILED|panicked'
