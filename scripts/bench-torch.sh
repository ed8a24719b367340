#!/usr/bin/env bash
# What recording costs a PyTorch training step (issue 18): a 4.2M-parameter transformer LM
# (4 pre-norm layers, d=256, batch 16x64 tokens, CPU, one thread) trained three ways side by
# side in one process, one step of each in turn: no recording, `watch` at its default
# schedule, and every summary every step (acts_every=1). Prints median and mean step times,
# their ratios to no recording, and store bytes per step.
# Usage: scripts/bench-torch.sh [STEPS]   (default 40; the venv: $SOMATIZE_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
STEPS="${1:-40}"
exec "$VENV/bin/python" bench/torch_lm.py --steps "$STEPS"
