#!/usr/bin/env bash
# Write the notebook widget's page and wasm into the Python package (git-ignored; the wheel ships
# them): python/somatize/_widget/page.html.gz, the page's modules and plotly (only the trace types
# the figures draw: scripts/build-widget-plotly.mjs) inlined by `somatize report --widget`, and
# python/somatize/_widget/page.wasm.gz, the wasm core the kernel sends beside it as bytes; both
# gzipped. Needs scripts/build-wasm.sh first, npm ci (plotly.js's sources), and the binary
# ($SOMATIZE_BIN, else target/release/somatize).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SOMATIZE_BIN:-target/release/somatize}"
node scripts/build-widget-plotly.mjs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" report --widget -o "$tmp/page.html"
out=python/somatize/_widget
for f in page.html page.wasm; do
  gzip -9 -n -c "$tmp/$f" > "$out/$f.gz.tmp"
  mv "$out/$f.gz.tmp" "$out/$f.gz"
  printf 'wrote %s: %s bytes (%s before gzip)\n' "$out/$f.gz" "$(wc -c < "$out/$f.gz")" "$(wc -c < "$tmp/$f")"
done
