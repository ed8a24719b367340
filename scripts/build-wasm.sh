#!/usr/bin/env bash
# Build the wasm core (release, simd128) and generate its bindings into pkg/wasm/ (git-ignored);
# fail if the wasm, gzipped, is 1 MiB or more. Then vendor plotly.js for the page into www/vendor/
# (git-ignored; scripts/build-www.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --lib --release --target wasm32-unknown-unknown
rm -rf pkg/wasm
wasm-bindgen --target web --out-dir pkg/wasm --out-name somatize \
  target/wasm32-unknown-unknown/release/somatize.wasm
# With a local JS module in the crate (pkg/forward-rows.js, copied into snippets/), wasm-bindgen
# also writes the repository's package.json dependencies beside the glue; the glue is ES modules
# and needs none, so say that instead (Node would otherwise reparse it, warning).
printf '{ "type": "module" }\n' > pkg/wasm/package.json
bytes=$(wc -c < pkg/wasm/somatize_bg.wasm)
gzipped=$(gzip -9c pkg/wasm/somatize_bg.wasm | wc -c)
printf 'built pkg/wasm/somatize_bg.wasm: %s bytes, %s gzipped\n' "$bytes" "$gzipped"
# The package's promise: the wasm, gzipped, under 1 MiB.
if [ "$gzipped" -ge $((1 << 20)) ]; then
  echo "the gzipped wasm is $gzipped bytes, over the 1 MiB budget" >&2
  exit 1
fi
node scripts/build-www.mjs
