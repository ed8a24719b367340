#!/usr/bin/env bash
# Pack the npm package as users install it: build the wasm (scripts/build-wasm.sh), then
# `npm pack` pkg/ into DEST (default target/pack/) and print the tarball's path.
# Usage: scripts/pack.sh [--no-build] [DEST]   (--no-build packs the wasm already built, as the
# node test layer does right after scripts/test.sh built it)
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
if [ "${1:-}" = "--no-build" ]; then
  build=0
  shift
fi
dest=$(realpath -m "${1:-target/pack}")
if [ "$build" = 1 ]; then
  scripts/build-wasm.sh >&2
elif [ ! -f pkg/wasm/somatize_bg.wasm ]; then
  echo "pkg/wasm/ is not built: run scripts/build-wasm.sh (or scripts/pack.sh without --no-build)" >&2
  exit 1
fi
mkdir -p "$dest"
name=$(cd pkg && npm pack --silent --pack-destination "$dest" | tail -1)
echo "$dest/$name"
