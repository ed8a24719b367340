#!/usr/bin/env bash
# Build the Python wheel: the `somatize` binary, the CPU kernels (`somatize._kernels`, a pyo3
# extension) and the package python/somatize, into target/wheels/, as `pip install .` builds
# it (setuptools-rust, pyproject.toml). pip comes from the torch venv
# (${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}; created when missing); the build
# backend is fetched into an isolated environment as for any `pip install .`. Extra arguments
# go to `pip wheel`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# (setuptools leaves build/ and the egg-info behind: a stale one would go into the wheel.)
rm -rf build python/somatize.egg-info
"$VENV/bin/python" -m pip wheel --no-deps --wheel-dir target/wheels . "$@"
rm -rf build python/somatize.egg-info
ls -1 target/wheels/somatize-*.whl
