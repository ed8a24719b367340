#!/usr/bin/env bash
# Eight statistics over one 256 MiB float32 tensor: somatize (one pass) vs numpy, a single l2
# vs np.linalg.norm, and a plain memory copy as the limit. Medians of 5 runs; ratios from one run.
set -euo pipefail
cd "$(dirname "$0")/.."
ours=$(cargo bench --bench reductions 2>/dev/null | grep '^{')
[ -f pkg/wasm/somatize_bg.wasm ] || scripts/build-wasm.sh >/dev/null
wasm=$(node scripts/bench-reductions-node.mjs 5)
OURS="$ours" WASM="$wasm" python3 - <<'PY'
import json, os, time
import numpy as np
ours = json.loads(os.environ["OURS"])
wasm = json.loads(os.environ["WASM"])
n = 64 << 20
# Values like the benchmark's (uniform in [-1, 1), every 97th exactly zero); the timing of
# these reductions does not depend on the particular values.
vals = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
vals[::97] = 0.0
a = vals
def eight():
    return (a.mean(), a.std(), a.min(), a.max(), np.abs(a).sum(), np.linalg.norm(a),
            np.abs(a).max(), np.count_nonzero(a == 0) / a.size)
def median(f, runs=5):
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[runs // 2]
np_eight = median(eight)
np_l2 = median(lambda: np.linalg.norm(a))
gb = ours["bytes"] / 1e9
print(f"tensor: {ours['bytes'] / 2**20:.0f} MiB float32, medians of 5 runs")
print(f"memory copy (limit):      {ours['copy_s']*1e3:8.1f} ms  {gb / ours['copy_s']:6.2f} GB/s read")
print(f"somatize eight, one pass: {ours['eight_s']*1e3:8.1f} ms  {gb / ours['eight_s']:6.2f} GB/s")
print(f"numpy eight:              {np_eight*1e3:8.1f} ms  {gb / np_eight:6.2f} GB/s")
print(f"somatize l2:              {ours['l2_s']*1e3:8.1f} ms  {gb / ours['l2_s']:6.2f} GB/s")
print(f"np.linalg.norm:           {np_l2*1e3:8.1f} ms  {gb / np_l2:6.2f} GB/s")
print(f"ratio eight (numpy / somatize): {np_eight / ours['eight_s']:.2f}x")
print(f"ratio l2 (numpy / somatize):    {np_l2 / ours['l2_s']:.2f}x")
print(f"wasm in Node eight:       {wasm['eight_s']*1e3:8.1f} ms  {gb / wasm['eight_s']:6.2f} GB/s")
print(f"wasm in Node l2:          {wasm['l2_s']*1e3:8.1f} ms  {gb / wasm['l2_s']:6.2f} GB/s")
print(f"ratio wasm / native speed, eight: {ours['eight_s'] / wasm['eight_s']:.2f}  (target >= 0.5)")
print(f"ratio wasm / native speed, l2:    {ours['l2_s'] / wasm['l2_s']:.2f}")
PY
