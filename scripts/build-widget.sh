#!/usr/bin/env bash
# Write the notebook widget's page into the Python package (python/somatize/_widget/page.html.gz,
# git-ignored; the wheel ships it): the page's modules, plotly and the wasm core inlined by
# `somatize report --widget`, gzipped. Needs scripts/build-wasm.sh first, and the binary
# ($SOMATIZE_BIN, else target/release/somatize).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${SOMATIZE_BIN:-target/release/somatize}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" report --widget -o "$tmp/page.html"
gzip -9 -n -c "$tmp/page.html" > python/somatize/_widget/page.html.gz.tmp
mv python/somatize/_widget/page.html.gz.tmp python/somatize/_widget/page.html.gz
printf 'wrote python/somatize/_widget/page.html.gz: %s bytes (%s before gzip)\n' \
  "$(wc -c < python/somatize/_widget/page.html.gz)" "$(wc -c < "$tmp/page.html")"
