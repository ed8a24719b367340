#!/usr/bin/env bash
# What recording costs a data-parallel training step (issue 20): `torchrun --standalone
# --nproc_per_node N` (default 4; gloo, CPU, one thread a rank), each rank training the
# 4.2M-parameter LM of scripts/bench-torch.sh twice in turns, wrapped in DDP, once recorded by
# `somatize.torch.watch` at its default schedule (every rank a writer of one run) and once not.
# Prints each rank's median and mean step times and their ratios (bench/torch_ddp.py).
# Usage: scripts/bench-torchrun.sh [STEPS [RANKS]]   (default 20 and 4; venv: $SOMATIZE_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
cargo build --release -q
export SOMATIZE_BIN="$PWD/target/release/somatize"
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
"$VENV/bin/python" -m torch.distributed.run --standalone --nproc_per_node "${2:-4}" \
  bench/torch_ddp.py --steps "${1:-20}" --store "$store"
echo "the record (somatize fleet):"
"$SOMATIZE_BIN" fleet "$store" --run ddp-bench
