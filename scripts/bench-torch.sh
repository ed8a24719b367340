#!/usr/bin/env bash
# What recording costs a PyTorch training step (issue 18), side by side in one process, one
# step of each mode in turn: no recording, `watch` at its default schedule, every summary
# every step (every=1), and TensorBoard histograms of every parameter and gradient. On a
# 4.2M-parameter transformer LM (4 pre-norm layers, d=256, batch 16x64 tokens) and a
# 124M-parameter GPT-2-sized one (12 layers, d=768, tied embedding) for a few steps at two
# batches, 1x128 tokens and one whole sequence of GPT-2's context (1x1024); CPU, one thread,
# AdamW. Prints median and mean step times and the training process's
# CPU time per step with their ratios to no recording, the companion's CPU as a share of one
# core, and store bytes per step.
# Usage: scripts/bench-torch.sh [LM_STEPS [GPT2_STEPS]]   (default 40 and 3; venv: $SOMATIZE_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
"$VENV/bin/python" -c 'import tensorboard' 2>/dev/null || "$VENV/bin/pip" install -q tensorboard
# This checkout's companion and package, whatever the venv has installed.
cargo build --release -q
scripts/build-kernels.sh
export SOMATIZE_BIN="$PWD/target/release/somatize"
exec "$VENV/bin/python" bench/torch_lm.py --steps "${1:-40}" --big-steps "${2:-3}"
