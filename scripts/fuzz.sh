#!/usr/bin/env bash
# Run every fuzz target (fuzz/, docs/fuzzing.md) for SECONDS each, one after another, installing
# nightly and cargo-fuzz when missing. Fails on the first target that finds a crash, leaving the
# input in fuzz/artifacts/<target>/. Usage: scripts/fuzz.sh SECONDS [TARGET...]
#   CI: scripts/fuzz.sh 10      a longer session: scripts/fuzz.sh 3600 snapshot
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
case $seconds in '' | *[!0-9]*) echo "SECONDS must be a whole number" >&2; exit 2 ;; esac

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo +nightly install cargo-fuzz --locked

# The fuzz crate builds into fuzz/target (git-ignored), whatever CARGO_TARGET_DIR says.
export CARGO_TARGET_DIR="$PWD/fuzz/target"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
for t in "${targets[@]}"; do
  [ -d "fuzz/corpus/$t" ] || { echo "no seed corpus fuzz/corpus/$t" >&2; exit 2; }
  mkdir -p "fuzz/work/$t"
  printf '\n==> %s for %s s\n' "$t" "$seconds"
  # New inputs go to fuzz/work/<t> (first folder); the committed seeds are only read.
  # -rss_limit_mb: a parser that allocates past 2 GiB for a small input is a finding.
  (cd fuzz && cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
done
