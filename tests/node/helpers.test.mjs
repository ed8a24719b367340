// The helper threads of the Node entry (pkg/helpers-node.js): a long float32 tensor observed
// with them gives the same bits as without, whether its values are on a plain or a shared
// buffer; the helpers really take blocks; a pool that misbehaves costs nothing but time; and they are off unless asked for.
import test from "node:test";
import assert from "node:assert/strict";
import { observeTensors, setHelpers, helperCounts } from "somatize";
import { useBlockHelpers } from "../../pkg/wasm/somatize.js";
import { HelperPool } from "../../pkg/helpers-node.js";

// 9.5 blocks of 2^20 values (over the helpers' 2^23 threshold), with zeros, a NaN and an inf.
const n = (19 << 20) / 2;
const values = new Float32Array(n);
let x = 12345;
for (let i = 0; i < n; i++) {
  x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
  values[i] = i % 89 === 0 ? 0 : (x / 2 ** 32) * 6 - 2;
}
values[n - 5] = NaN;
values[3 << 20] = Infinity;
const shared = new Float32Array(new SharedArrayBuffer(n * 4));
shared.set(values);
const spec = (reduction) => ({ source: "param", selector: "w", reduction });
const eight = ["mean", "std", "min", "max", "l1", "l2", "absmax", "zero_fraction", "count", "nonfinite"].map(spec);
const sets = { eight, l2: [spec("l2"), spec("rms")], "not helped": [spec("mean"), spec("quantiles(0.5)")] };
const observe = (v, specs) => observeTensors([{ key: "param.w", shape: [n], values: v }], specs).values;
const bits = (vals) => JSON.stringify(Object.entries(vals).map(([k, v]) => [k, v === null ? null : Array.from(new Uint32Array(new Float64Array([v]).buffer))]));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("with helpers a long tensor gives the same bits as on one thread, and they take blocks", async () => {
  const before = setHelpers(0);
  const alone = Object.fromEntries(Object.entries(sets).map(([k, s]) => [k, bits(observe(values, s))]));
  setHelpers(Math.max(before, 1));
  try {
    // The workers start on the first long tensor; give them a few tries to take part.
    for (let round = 0; round < 40 && helperCounts().blocks === 0; round++) {
      for (const [name, specs] of Object.entries(sets)) {
        assert.equal(bits(observe(values, specs)), alone[name], `${name}, plain buffer`);
        assert.equal(bits(observe(shared, specs)), alone[name], `${name}, shared buffer`);
      }
      await sleep(50);
    }
    const counts = helperCounts();
    assert.ok(counts.blocks > 0, `the helpers took no block: ${JSON.stringify(counts)}`);
    assert.ok(counts.running >= 1, JSON.stringify(counts));
  } finally {
    setHelpers(before);
  }
});

test("helpers that only take turns with the calling thread are left out for a while", () => {
  const pool = new HelperPool(null, 1);
  pool.workers = [{}]; // one helper, never started: only judge() is exercised
  const job = (wallMs, cpuMs) => {
    const now = process.cpuUsage();
    const cpu = { user: now.user - cpuMs * 1000, system: now.system };
    return { began: performance.now() - wallMs, cpu, judged: true };
  };
  const cases = [
    // [what, wall ms, CPU ms, skip wanted after]
    ["ran beside it (1.9 cores busy)", 100, 190, 0],
    ["took turns (1.0)", 100, 100, 4],
    ["took turns again", 100, 100, 8],
    ["ran beside it again", 100, 180, 0],
    ["too short to judge", 2, 0, 0],
  ];
  for (const [what, wall, cpu, skip] of cases) {
    pool.skip = 0;
    pool.judge(job(wall, cpu));
    assert.equal(pool.skip, skip, what);
  }
  pool.judge({ ...job(100, 100), judged: false });
  assert.equal(pool.skip, 0, "no worker was ready: not judged");
  assert.equal(pool.counts.skips, 2);
});

// Last in this file (each test file has its own process): it takes the package's pool away.
test("a pool that fails, declines or throws leaves the answer as on one thread", () => {
  const before = setHelpers(0);
  const want = bits(observe(values, eight));
  const pools = {
    "failed every block": { minLen: 1, start: () => true, claim: () => false, finish: (first) => new Float64Array((10 - first) * 13).fill(NaN) },
    "answered nothing": { minLen: 1, start: () => true, claim: () => false, finish: () => new Float64Array(0) },
    "threw in finish": { minLen: 1, start: () => true, claim: () => true, finish: () => { throw new Error("x"); } },
    "threw in start": { minLen: 1, start: () => { throw new Error("x"); }, claim: () => true, finish: () => null },
    "claimed wildly": { minLen: 1, start: () => true, claim: () => true, finish: () => "not numbers" },
  };
  try {
    for (const [name, pool] of Object.entries(pools)) {
      useBlockHelpers(pool);
      assert.equal(bits(observe(values, eight)), want, name);
    }
    assert.throws(() => useBlockHelpers({ minLen: 1, start() {}, claim() {} }), /no finish\(\)/);
    assert.throws(() => useBlockHelpers({ start() {}, claim() {}, finish() {} }), /minLen/);
  } finally {
    useBlockHelpers(null);
    setHelpers(before);
  }
});

test("helper threads are off unless asked for: SOMATIZE_HELPERS=n or auto sets the starting count", async () => {
  const { spawnSync } = await import("node:child_process");
  const { availableParallelism } = await import("node:os");
  const count = (value) => {
    const env = { ...process.env };
    if (value === undefined) delete env.SOMATIZE_HELPERS;
    else env.SOMATIZE_HELPERS = value;
    const code = 'import { helperCounts } from "somatize"; console.log(helperCounts().helpers);';
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { env, encoding: "utf8", cwd: new URL("../../", import.meta.url) });
    assert.equal(r.status, 0, r.stderr);
    return Number(r.stdout.trim());
  };
  assert.equal(count(undefined), 0);
  assert.equal(count("2"), 2);
  assert.equal(count("auto"), Math.max(0, Math.min(availableParallelism() - 1, 7)));
});
