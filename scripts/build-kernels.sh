#!/usr/bin/env bash
# Build the Python package's CPU kernels (python/kernels/, `somatize._kernels`) into this
# checkout's python/somatize/ (git-ignored), for scripts that import the package from the
# source tree rather than an installed wheel (bench/torch_lm.py). `pip install .` builds them
# into the wheel itself. Usage: scripts/build-kernels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYO3_BUILD_EXTENSION_MODULE=1 cargo build --release -q --manifest-path python/kernels/Cargo.toml
cp python/kernels/target/release/lib_kernels.so python/somatize/_kernels.abi3.so
