#!/usr/bin/env bash
# Eight statistics over one 256 MiB float32 tensor: somatize (one pass) vs numpy, a single l2
# vs np.linalg.norm, and a plain memory copy as the limit. Medians of 5 runs; ratios from one run.
# Natively the engine splits a long tensor across the machine's cores (at most 8) and uses AVX2
# where the CPU has it; wasm runs on one thread with 128-bit SIMD. The wasm ratios are printed
# against both the native default and native on one thread, so it is plain what is compared.
set -euo pipefail
cd "$(dirname "$0")/.."
ours=$(cargo bench --bench reductions 2>/dev/null | grep '^{')
scripts/build-wasm.sh >/dev/null  # a no-op for cargo when nothing changed; never a stale pkg/
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
ms = lambda s: f"{s*1e3:8.1f} ms  {gb / s:6.2f} GB/s"
print(f"tensor: {ours['bytes'] / 2**20:.0f} MiB float32, medians of 5 runs; native default = {ours['threads']} threads")
print(f"memory copy (limit):             {ms(ours['copy_s'])} read")
print(f"somatize eight, one pass:        {ms(ours['eight_s'])}")
print(f"somatize eight, one thread:      {ms(ours['eight_1t_s'])}")
print(f"numpy eight:                     {ms(np_eight)}")
print(f"somatize l2:                     {ms(ours['l2_s'])}")
print(f"somatize l2, one thread:         {ms(ours['l2_1t_s'])}")
print(f"np.linalg.norm:                  {ms(np_l2)}")
print(f"wasm in Node eight (1 thread):   {ms(wasm['eight_s'])}")
print(f"wasm in Node l2 (1 thread):      {ms(wasm['l2_s'])}")
print(f"ratio eight (numpy / somatize): {np_eight / ours['eight_s']:.2f}x  (target >= 5)")
print(f"ratio l2 (numpy / somatize):    {np_l2 / ours['l2_s']:.2f}x  (target >= 0.8)")
print(f"wasm / native speed, eight: {ours['eight_s'] / wasm['eight_s']:.2f} vs native default (target >= 0.5), "
      f"{ours['eight_1t_s'] / wasm['eight_s']:.2f} vs native on one thread")
print(f"wasm / native speed, l2:    {ours['l2_s'] / wasm['l2_s']:.2f} vs native default, "
      f"{ours['l2_1t_s'] / wasm['l2_s']:.2f} vs native on one thread")
PY
