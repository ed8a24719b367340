#!/usr/bin/env bash
# Build the wasm core (release, simd128) and generate its bindings into pkg/wasm/ (git-ignored).
# Then vendor plotly.js for the page into www/vendor/ (git-ignored; scripts/build-www.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --lib --release --target wasm32-unknown-unknown
rm -rf pkg/wasm
wasm-bindgen --target web --out-dir pkg/wasm --out-name somatize \
  target/wasm32-unknown-unknown/release/somatize.wasm
printf 'built pkg/wasm/somatize_bg.wasm: %s bytes, %s gzipped\n' \
  "$(wc -c < pkg/wasm/somatize_bg.wasm)" "$(gzip -9c pkg/wasm/somatize_bg.wasm | wc -c)"
node scripts/build-www.mjs
