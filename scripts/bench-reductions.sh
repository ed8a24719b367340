#!/usr/bin/env bash
# Eight statistics over one 256 MiB float32 tensor: somatize (one pass) vs numpy, a single l2
# vs np.linalg.norm, the wasm build in Node, and a plain memory copy as the limit.
# The three are run in turns (native, numpy, wasm; ROUNDS rounds, each a median of RUNS runs)
# so that load on the machine hits each alike; times are medians over the rounds and every
# ratio is the median of the rounds' ratios (each taken within one round).
# Natively the engine splits a long tensor across the machine's cores (at most 8) and uses AVX2
# where the CPU has it; wasm uses 128-bit SIMD, and in Node the package's helper threads (worker
# threads with their own wasm instance, one per core besides the calling thread) take blocks
# of a long tensor. The wasm ratios are printed default against default and one thread against
# one thread, so it is plain what is compared.
# Usage: scripts/bench-reductions.sh [ROUNDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
RUNS=${2:-3}
cargo bench --bench reductions --no-run 2>/dev/null
scripts/build-wasm.sh >/dev/null  # a no-op for cargo when nothing changed; never a stale pkg/
ROUNDS="$ROUNDS" RUNS="$RUNS" python3 - <<'PY'
import json, os, subprocess, time
import numpy as np
rounds, runs = int(os.environ["ROUNDS"]), int(os.environ["RUNS"])
n = 64 << 20
# Values like the benchmark's (uniform in [-1, 1), every 97th exactly zero); the timing of
# these reductions does not depend on the particular values.
a = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
a[::97] = 0.0
def eight():
    return (a.mean(), a.std(), a.min(), a.max(), np.abs(a).sum(), np.linalg.norm(a),
            np.abs(a).max(), np.count_nonzero(a == 0) / a.size)
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]
def timed(f):
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return median(ts)
def native():
    env = dict(os.environ, SOMATIZE_BENCH_RUNS=str(runs))
    out = subprocess.run(["cargo", "bench", "--bench", "reductions"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(next(l for l in out.splitlines() if l.startswith("{")))
def wasm():
    out = subprocess.run(["node", "scripts/bench-reductions-node.mjs", str(runs)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)
rows = []
for _ in range(rounds):
    ours = native()
    mine = {"np_eight": timed(eight), "np_l2": timed(lambda: np.linalg.norm(a))}
    w = wasm()
    rows.append({**{k: v for k, v in ours.items() if k.endswith("_s")}, **mine,
                 "wasm_eight": w["eight_s"], "wasm_l2": w["l2_s"], "wasm_eight_1t": w["eight_1t_s"],
                 "wasm_eight_shared": w["eight_shared_s"], "wasm_l2_1t": w["l2_1t_s"],
                 "helpers": w["helpers"], "helped": (w["tensors"], w["blocks"], w["skips"]),
                 "threads": ours["threads"], "bytes": ours["bytes"]})
t = lambda k: median([r[k] for r in rows])
ratio = lambda num, den: median([r[num] / r[den] for r in rows])
gb = rows[0]["bytes"] / 1e9
ms = lambda k: f"{t(k)*1e3:8.1f} ms  {gb / t(k):6.2f} GB/s"
load = os.getloadavg()[0]
print(f"tensor: {rows[0]['bytes'] / 2**20:.0f} MiB float32; {rounds} rounds (native, numpy, wasm in turn), "
      f"each a median of {runs} runs; native default = {rows[0]['threads']} threads; load {load:.1f} at the end")
print(f"memory copy (limit):             {ms('copy_s')} read")
print(f"somatize eight, one pass:        {ms('eight_s')}")
print(f"somatize eight, one thread:      {ms('eight_1t_s')}")
print(f"numpy eight:                     {ms('np_eight')}")
print(f"somatize l2:                     {ms('l2_s')}")
print(f"somatize l2, one thread:         {ms('l2_1t_s')}")
print(f"np.linalg.norm:                  {ms('np_l2')}")
h = rows[0]["helpers"]
print(f"wasm in Node eight ({h} helper(s)):  {ms('wasm_eight')}")
print(f"  ... values on a SharedArrayBuffer:{ms('wasm_eight_shared')}")
print(f"wasm in Node eight, one thread:  {ms('wasm_eight_1t')}")
print(f"wasm in Node l2 ({h} helper(s)):     {ms('wasm_l2')}")
print(f"wasm in Node l2, one thread:     {ms('wasm_l2_1t')}")
print(f"ratio eight (numpy / somatize): {ratio('np_eight', 'eight_s'):.2f}x  (target >= 5)")
per_round = ", ".join("%.2f" % (r["np_l2"] / r["l2_s"]) for r in rows)
print(f"ratio l2 (numpy / somatize):    {ratio('np_l2', 'l2_s'):.2f}x  (target >= 0.8); per round {per_round}")
print(f"wasm / native speed, eight: {ratio('eight_s', 'wasm_eight'):.2f} default vs default (target >= 0.5; "
      f"{ratio('eight_s', 'wasm_eight_shared'):.2f} with the values on a SharedArrayBuffer), "
      f"{ratio('eight_1t_s', 'wasm_eight_1t'):.2f} one thread vs one thread")
print(f"wasm / native speed, l2:    {ratio('l2_s', 'wasm_l2'):.2f} default vs default, "
      f"{ratio('l2_1t_s', 'wasm_l2_1t'):.2f} one thread vs one thread")
per_round = ", ".join("%.2f" % (r["eight_s"] / r["wasm_eight"]) for r in rows)
print(f"wasm / native eight per round: {per_round}")
helped = "; ".join("%d tensors, %d blocks, %d skips" % r["helped"] for r in rows)
print(f"helpers per round (tensors offered, blocks of 2^20 they took, times left out on a busy machine): {helped}")
PY
