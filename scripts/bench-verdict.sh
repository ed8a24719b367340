#!/usr/bin/env bash
# The verdict's labelled benchmark (docs/verdict-benchmark.md): builds the release binary if
# missing; generates the corpus (bench/verdict/generate.py) when torch is importable and the
# corpus is missing; then scores the corpus and prints the tables and, last, the `verdict:` line.
# Writes the scores as JSON to bench-out/verdict/score.json. Exits non-zero only when building,
# generating or scoring fails, never on the score itself.
# Usage: scripts/bench-verdict.sh [--jobs N]   (SOMATIZE_VENV: a venv with torch)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=1
if [ "${1:-}" = "--jobs" ]; then jobs=${2:?--jobs N}; fi
bin=${CARGO_TARGET_DIR:-target}/release/somatize
if [ ! -x "$bin" ]; then
  echo "building $bin"
  cargo build --release --bin somatize
fi
corpus=bench/verdict/corpus
if [ ! -d "$corpus/runs" ]; then
  venv=${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}
  py=""
  for candidate in "$venv/bin/python" python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import torch, numpy' 2>/dev/null; then
      py=$candidate
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "bench-verdict: no corpus at $corpus and no python with torch to generate it" >&2
    exit 1
  fi
  echo "generating the corpus with $py (a few minutes)"
  "$py" bench/verdict/generate.py --bin "$bin" --jobs "$jobs"
fi
mkdir -p bench-out/verdict
python3 bench/verdict/score.py --bin "$bin" --store "$corpus" --json bench-out/verdict/score.json
