#!/usr/bin/env bash
# Run every test layer, installing what a fresh machine lacks: the wasm32 target, the pinned
# wasm-bindgen CLI, Chromium and its driver, numpy, the npm dev packages and the torch venv
# (${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}: torch (CPU), numpy, pytest, setuptools-rust;
# created once and cached, it is large). Fails if any layer
# fails or runs no test. Usage: scripts/test.sh   (CI: .ci/run calls exactly this)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
logs=$(mktemp -d)
summary=()
total=0

# Each step says how much disk is free (a clean CI runner once ran out linking the tests).
step() { printf '\n==> %s  [%s free]\n' "$*" "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }

ensure_tools() {
  step "tools"
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy rustfmt
  local want
  want=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' Cargo.toml)
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    echo "installing wasm-bindgen-cli $want (a few minutes, once per machine)"
    cargo install wasm-bindgen-cli --version "$want" --force
  fi
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
  fi
  python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy
  ensure_venv
  # npm ci refuses this lock: an optional Windows-only dependency of vite is not in the registry
  # mirror, so the lock cannot name it; npm install keeps to the lock for everything else.
  npm install --no-audit --no-fund --loglevel=error
}

# The torch venv the Python layer and tests/store_record.rs run with (created when missing).
export SOMATIZE_VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
TORCH_VERSION=2.15.0
ensure_venv() {
  local py="$SOMATIZE_VENV/bin/python"
  [ -x "$py" ] || python3 -m venv "$SOMATIZE_VENV"
  # torch from PyPI (the only index reachable here; its wheel brings CUDA libraries, and runs
  # on the CPU without a GPU): large, so the venv lives outside the repo and is reused.
  # Pinned: the verdict corpus regenerates bit for bit only with the torch it was trained
  # with (bench/verdict/labels.json's "torch"; a new release sums in another order).
  [ "$("$py" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" = "$TORCH_VERSION" ] \
    || "$py" -m pip install -q "torch==$TORCH_VERSION"
  "$py" -c 'import numpy, pytest' 2>/dev/null || "$py" -m pip install -q numpy pytest
  # What `pip install .` builds the wheel with (pyproject.toml's build-system; the layer
  # installs without build isolation, from this venv).
  "$py" -c 'import setuptools_rust' 2>/dev/null || "$py" -m pip install -q "setuptools>=70" "setuptools-rust>=1.12,<2"
  # The notebook widget's tests: a real JupyterLab server, Notebook 7 and anywidget (somatize.show, Live).
  "$py" -c 'import jupyterlab, anywidget, notebook' 2>/dev/null || "$py" -m pip install -q "jupyterlab>=4,<5" "notebook>=7,<8" "anywidget>=0.9,<1"
  # Stores on object storage: moto's S3 server on 127.0.0.1 (tests/objstore.rs, tests/python/test_objstore.py).
  "$py" -c 'import moto.server, boto3' 2>/dev/null || "$py" -m pip install -q "moto[server]>=5,<6"
}
# The moto server tests/objstore.rs starts (it fails without it, never skips).
export SOMATIZE_MOTO_SERVER="$SOMATIZE_VENV/bin/moto_server"

# The Python package installed as a user installs it (`pip install .`: setuptools-rust builds
# the binary and the kernels into the wheel), then its tests with the installed `somatize`
# (none may be skipped). The kernels are also built into the checkout, for the bench scripts
# that import it (tests/python/test_bench_profile.py runs one).
python_tests() {
  local py="$SOMATIZE_VENV/bin/python"
  # (`|| return`: a layer runs inside `if`, where `set -e` does not stop a function.)
  # (setuptools leaves build/ and the egg-info behind: a stale one would go into the wheel.)
  rm -rf build python/somatize.egg-info
  PATH="$SOMATIZE_VENV/bin:$PATH" "$py" -m pip install -q --force-reinstall --no-deps \
    --no-build-isolation . || return 1
  rm -rf build python/somatize.egg-info
  scripts/build-kernels.sh || return 1
  (unset SOMATIZE_BIN; cd tests/python && "$py" -m pytest -q -p no:cacheprovider -rs .)
}

# count LAYER LOG: add up what the layer's runner says passed; a layer with no test fails.
count() {
  local layer=$1 log=$2 passed
  case $layer in
    native|main-job|wasm-*) passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}') ;;
    node|browser) passed=$(grep -Eo '^# pass [0-9]+' "$log" | awk '{s+=$3} END {print s+0}') ;;
    notebook) passed=$(grep -Eo '^Ran [0-9]+ test' "$log" | awk '{s+=$2} END {print s+0}') ;;
    # libFuzzer's closing "Done N runs in T second(s)": one per target that ran clean.
    fuzz) passed=$(grep -Ec '^Done [0-9]+ runs in' "$log") ;;
    verdict)
      # unittest's "Ran N tests" and check_regen's "N passed, 0 failed".
      passed=$( (grep -Eo '^Ran [0-9]+ test' "$log" | awk '{print $2}';
        grep -Eo '^[0-9]+ passed, 0 failed' "$log" | awk '{print $1}') | awk '{s+=$1} END {print s+0}') ;;
    python)
      # pytest's closing line: "N passed[, M skipped…] in T s"; a skip fails the layer.
      local closing
      closing=$(grep -E '[0-9]+ (passed|failed|skipped)' "$log" | tail -1)
      if echo "$closing" | grep -Eq 'skipped|failed|error'; then
        echo "layer python: $closing" >&2
        exit 1
      fi
      passed=$(echo "$closing" | grep -Eo '[0-9]+ passed' | awk '{print $1+0}') ;;
    conformance)
      # node's "# pass N" (CLI and npm) plus pytest's "N passed" (Python); a skip fails it.
      if grep -E '^[0-9]+ (passed|failed|skipped)|^# (fail|skipped) [1-9]' "$log" | grep -Eq 'skipped|failed|fail '; then
        echo "layer conformance: a test failed or was skipped" >&2
        exit 1
      fi
      passed=$( (grep -Eo '^# pass [0-9]+' "$log" | awk '{print $3}';
        grep -Eo '^[0-9]+ passed' "$log" | awk '{print $1}') | awk '{s+=$1} END {print s+0}') ;;
  esac
  passed=${passed:-0}
  if [ "$passed" -eq 0 ]; then
    echo "layer $layer ran no test" >&2
    exit 1
  fi
  summary+=("$layer: $passed passed, 0 failed")
  total=$((total + passed))
}

# layer NAME CMD...: run one layer, show its output, stop the script if it fails.
layer() {
  local name=$1 log="$logs/$1.log"
  shift
  step "layer $name"
  if ! "$@" 2>&1 | tee "$log"; then
    echo "layer $name failed" >&2
    exit 1
  fi
  count "$name" "$log"
}

wasm_tests() {
  local args=()
  for f in tests/wasm_*.rs; do args+=(--test "$(basename "$f" .rs)"); done
  cargo test --target wasm32-unknown-unknown "${args[@]}"
}

wasm_tests_in_chromium() {
  WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver wasm_tests
}

ensure_tools
step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings
# The Python package's kernels: a workspace of their own (a pyo3 extension; without the
# `python` feature, the kernels alone, tested natively in the native layer).
cargo fmt --manifest-path python/kernels/Cargo.toml -- --check
cargo clippy --manifest-path python/kernels/Cargo.toml --all-targets -- -D warnings
cargo clippy --manifest-path python/kernels/Cargo.toml --no-default-features --all-targets -- -D warnings
# No dependency cycle between modules (top level, then siblings one and two levels down).
# (One command each: under `set -e` a failure inside an `a && b` list would not stop the script.)
for depth in 1 2 3; do python3 scripts/modgraph.py "$depth" || exit 1; done

native_tests() {
  cargo test --workspace || return 1
  cargo test --manifest-path python/kernels/Cargo.toml --no-default-features
}
layer native native_tests

# The README's main job, built as its command builds it, checked end to end.
main_job() {
  cargo build --release --bin somatize
  SOMATIZE_BIN="$PWD/target/release/somatize" cargo test --test native demo_command:: -- --ignored
}
layer main-job main_job
# The verdict's yardstick (docs/verdict-benchmark.md): the scorer's own tests, the generator
# regenerating three runs bit for bit with torch, then the committed corpus scored (its last
# line is the figure; a benchmark, so the figure never fails the layer, only scoring can).
verdict_bench() {
  python3 -m unittest bench/verdict/test_score.py || return 1
  "$SOMATIZE_VENV/bin/python" bench/verdict/check_regen.py --bin "$PWD/target/release/somatize" || return 1
  scripts/bench-verdict.sh
}
layer verdict verdict_bench
step "build the npm package"
scripts/build-wasm.sh
# The notebook widget's page, into the Python package before the python layer installs it.
SOMATIZE_BIN="$PWD/target/release/somatize" scripts/build-widget.sh
layer wasm-node wasm_tests
layer wasm-chromium wasm_tests_in_chromium
layer node node --test --test-timeout=600000 tests/node/
# The example notebook's code cells in one namespace (no Jupyter), with the release binary;
# its outputs (target/notebook/) are what tests/browser/report-notebook.test.mjs opens.
layer notebook env SOMATIZE_BIN="$PWD/target/release/somatize" "$SOMATIZE_VENV/bin/python" tests/notebook_test.py
layer browser node --test --test-timeout=600000 tests/browser/
layer python python_tests
# Every seed item on every surface (tests/conformance/, mapped in docs/seeds.md): the CLI and
# the npm package in Node and in Chromium, then the Python package (installed by the python
# layer) with pytest.
conformance_tests() {
  local bin="$PWD/target/release/somatize"
  SOMATIZE_BIN="$bin" node --test --test-timeout=600000 tests/conformance/ || return 1
  (cd tests/conformance && SOMATIZE_BIN="$bin" "$SOMATIZE_VENV/bin/python" -m pytest -q \
    -p no:cacheprovider -rs test_seeds.py)
}
layer conformance conformance_tests
# Every fuzz target (fuzz/, docs/fuzzing.md) for a short bounded time from its committed seeds,
# with nightly and cargo-fuzz installed when missing; a crash fails the layer and leaves its
# input in fuzz/artifacts/<target>/ (longer sessions: scripts/fuzz.sh SECONDS by hand).
layer fuzz scripts/fuzz.sh "${SOMATIZE_FUZZ_SECONDS:-10}"

step "summary"
printf '%s\n' "${summary[@]}"
echo "total: $total passed, 0 failed"
