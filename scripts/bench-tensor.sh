#!/usr/bin/env bash
# Benchmark: read a 256 MiB float32 .npz and compute its statistics, numpy (np.load + the same
# statistics in float64 over the finite values) against `somatize stats` (release build).
# Prints the median of several runs of each, their ratio, and each side's peak resident memory
# against the entry's size. Usage: scripts/bench-tensor.sh [runs] [MiB]
set -euo pipefail
RUNS=${1:-5}
MIB=${2:-256}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
NPZ="$WORK/big.npz"

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" --bin somatize
BIN="$ROOT/target/release/somatize"

python3 - "$NPZ" "$MIB" <<'PY'
import sys, numpy as np
path, mib = sys.argv[1], int(sys.argv[2])
n = mib * (1 << 20) // 4
w = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
w[::1000] = 0.0
np.savez(path, w=w)  # stored (uncompressed), as np.savez writes it
PY

cat > "$WORK/np_stats.py" <<'PY'
import sys, numpy as np
a = np.load(sys.argv[1])["w"]
fin = np.isfinite(a)
nonfinite = a.size - int(fin.sum())
nan = int(np.isnan(a).sum())
v = a[fin] if nonfinite else a
x = v.astype(np.float64)
s = dict(count=a.size, nonfinite=nonfinite, nan=nan, l2=float(np.sqrt(np.dot(x, x))),
         l1=float(np.abs(x).sum()), mean=float(x.mean()), std=float(x.std()), min=float(x.min()),
         max=float(x.max()), zero_fraction=float((a == 0).sum() / a.size))
s["absmax"] = max(abs(s["min"]), abs(s["max"]))
print(s)
PY

# time_runs CMD...: prints "median_seconds peak_rss_kib" over $RUNS runs.
time_runs() {
    local times=() rss=0
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" > /dev/null
        read -r t m < "$WORK/t"
        times+=("$t")
        (( m > rss )) && rss=$m
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$median $rss"
}

SIZE_KIB=$(( MIB * 1024 ))
read -r NP_T NP_RSS < <(time_runs python3 "$WORK/np_stats.py" "$NPZ")
read -r SO_T SO_RSS < <(time_runs "$BIN" stats "$NPZ" --json)
# Python's own baseline (interpreter + numpy import), to report numpy's memory fairly.
read -r _ PY_RSS < <(time_runs python3 -c "import numpy")

echo "entry: ${MIB} MiB float32 (stored .npz), ${RUNS} runs each, medians"
printf 'numpy  np.load + stats : %6.2f s   peak RSS %7d KiB (%.2fx entry; python+numpy alone %d KiB)\n' \
    "$NP_T" "$NP_RSS" "$(echo "$NP_RSS / $SIZE_KIB" | bc -l)" "$PY_RSS"
printf 'somatize stats --json : %6.2f s   peak RSS %7d KiB (%.3fx entry)\n' \
    "$SO_T" "$SO_RSS" "$(echo "$SO_RSS / $SIZE_KIB" | bc -l)"
printf 'speed-up over numpy   : %6.2fx (target >= 3x)\n' "$(echo "$NP_T / $SO_T" | bc -l)"

# The wasm build in Node, through the package (scripts/build-wasm.sh): tensorStats over the
# file's path (read straight into wasm memory; zip CRC-32 by Node's zlib), and over bytes.
if command -v node > /dev/null && command -v wasm-bindgen > /dev/null; then
    "$ROOT/scripts/build-wasm.sh" > /dev/null
    read -r WA_T WA_READ WA_STATS < <(node "$ROOT/scripts/bench-tensor-node.mjs" "$NPZ" "$RUNS")
    printf 'wasm tensorStats(path), Node: %6.2f s   (%.2fx native speed; target >= 0.5x)\n' \
        "$WA_T" "$(echo "$SO_T / $WA_T" | bc -l)"
    printf '  over readFileSync bytes %6.2f s (%.2fx); over bytes already in memory %.2f s\n' \
        "$WA_READ" "$(echo "$SO_T / $WA_READ" | bc -l)" "$WA_STATS"
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
