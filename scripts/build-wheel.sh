#!/usr/bin/env bash
# Build the Python wheel: the `somatize` binary (maturin's `bin` bindings) and the package
# python/somatize, into target/wheels/. maturin comes from the torch venv
# (${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}); on a fresh machine it is installed
# there with pip (the venv is created when missing). Extra arguments go to `maturin build`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if [ ! -x "$VENV/bin/maturin" ]; then
  "$VENV/bin/python" -m pip install --quiet "maturin>=1.5,<2"
fi
"$VENV/bin/maturin" build --release --out target/wheels "$@"
ls -1 target/wheels/somatize-*.whl
