// Readback benchmark for the wasm build (not a test): a run of 1,000,000 forwards opened through
// the npm package in Node (`openStore(path)`), timing `runs`, `forwards` and a summarised `curve`
// against Python's json.loads over the same index lines, measured in the same run; with
// `--native FILE` (the table benches/readback_scan.rs printed earlier in the same
// scripts/bench-readback.sh) also the wasm/native ratio. Prints medians (5 runs; 3 for Python).
//
// The index lines are the ones benches/readback_scan.rs writes (format 2.0: a pack and an offset
// each; no blob is ever fetched, so the packs are not written). A call
// is timed twice: `call` (the call in wasm: read, parse and build the answer, then hand it to JS)
// and `total` (plus touching every row in JS, as a caller would).
// Usage: node scripts/bench-readback-node.mjs [--native FILE] [--runs N]   (after scripts/build-wasm.sh;
// BENCH_DIR picks the folder, BENCH_LINES the run's length)
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openStore } from "../pkg/node.js";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const lines = Number(process.env.BENCH_LINES ?? 1_000_000);
const repeats = Number(arg("--runs", 5));
const native = arg("--native");
const base = join(process.env.BENCH_DIR ?? tmpdir(), "somatize-bench-readback-node");

/** Write run `big` of `lines` forwards under `root` (index only: the scan reads no blob). */
function writeRun(root) {
  rmSync(root, { recursive: true, force: true });
  const w = join(root, "runs/big/w");
  mkdirSync(join(w, "packs"), { recursive: true });
  const fmt = openSync(join(root, "somatize-store.json"), "w");
  writeSync(fmt, '{"format":"somatize-store","version":"2.0"}');
  closeSync(fmt);
  const index = join(w, "index.jsonl");
  const fd = openSync(index, "w");
  let batch = [];
  for (let f = 0; f < lines; f++) {
    const written = 1_764_500_000_000_000n + BigInt(f) * 1000n;
    const took = 900 + (f % 77);
    const loss = 1 / (f + 1);
    const broke = f % 10_007 === 0;
    const error = broke ? ',"error":"nan loss"' : "";
    const crc = (BigInt(f) * 2_654_435_761n) % (1n << 32n);
    const blob = `,"blob":"packs/000001.pack","offset":${f * 71_000},"len":${70_000 + (f % 999)},"crc32":${crc}`;
    batch.push(`{"forward":${f},"written_us":${written},"took_us":${took},"broke":${broke}${error},"fields":{"loss.value":${loss}}${blob}}\n`);
    if (batch.length === 10_000) {
      writeSync(fd, batch.join(""));
      batch = [];
    }
  }
  writeSync(fd, batch.join(""));
  closeSync(fd);
  return index;
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

/** Medians of wall-clock and CPU (this process, all threads) seconds over `repeats` calls. */
async function time(f) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < repeats; i++) {
    const [t, c] = [performance.now(), process.cpuUsage()];
    await f();
    const used = process.cpuUsage(c);
    wall.push((performance.now() - t) / 1e3);
    cpu.push((used.user + used.system) / 1e6);
  }
  return [median(wall), median(cpu)];
}

/** Python's json.loads over every line (the same code as the native benchmark). */
function python(index) {
  const code =
    "import json,sys,time\nts=[];cs=[]\nfor _ in range(3):\n    t=time.perf_counter();c=time.thread_time()\n    s=0.0\n    for l in open(sys.argv[1]):\n        s+=json.loads(l)['fields']['loss.value']\n    ts.append(time.perf_counter()-t);cs.append(time.thread_time()-c)\nprint(sorted(ts)[1], sorted(cs)[1])";
  try {
    const [w, c] = execFileSync("python3", ["-c", code, index], { encoding: "utf8" }).trim().split(/\s+/).map(Number);
    return [w, c];
  } catch {
    return null;
  }
}

/** Wall and CPU medians per read from the native benchmark's table, by the row's first word. */
function nativeTimes(file) {
  const out = new Map();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 4 || !/^\d/.test(cells[2] ?? "")) continue;
    out.set(cells[1].split(" ")[0], [Number(cells[2]), Number(cells[3])]);
  }
  return out;
}

/** Read every row of an answer in JS, as a caller would: the sum of `pick(row)`. */
const touch = (rows, pick) => rows.reduce((s, r) => s + pick(r), 0);

const t0 = performance.now();
const index = writeRun(base);
const size = statSync(index).size;
console.log(
  `# readback benchmark, wasm in Node ${process.version}: run of ${lines} forwards, index ${(size / 1e6).toFixed(1)} MB, written in ${((performance.now() - t0) / 1e3).toFixed(1)} s (${base})`,
);
const store = await openStore(base);
const check = (what, got, want) => {
  if (got !== want) throw new Error(`${what}: got ${got}, wanted ${want}`);
};
const calls = [
  ["runs", () => store.runs(), (a) => check("runs", a.rows[0].forwards, lines), (a) => touch(a.rows, (r) => r.forwards)],
  ["forwards", () => store.forwards({ run: "big" }), (a) => check("forwards", a.rows.length, lines), (a) => touch(a.rows, (r) => r.took_us + r["loss.value"].length)],
  ["curve", () => store.curve({ run: "big" }), (a) => check("curve", a.rows.length, lines), (a) => touch(a.rows, (r) => r[1])],
];
const results = [];
for (const [name, call, ok, use] of calls) {
  ok(await call()); // a first call, untimed, checks the answer and warms up
  const bare = await time(call);
  const total = await time(async () => use(await call()));
  results.push([name, bare, total]);
}
await store.close();
const py = python(index);
const nat = native ? nativeTimes(native) : new Map();
const x = (a, b) => (a && b ? `${(a / b).toFixed(1)}x` : "n/a");
console.log("| read (wasm) | call wall (s) | call CPU (s) | total wall (s) | total CPU (s) | python/wasm, wall | python/wasm, CPU | wasm/native, wall | wasm/native, CPU |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const [name, [sw, sc], [tw, tc]] of results) {
  const [nw, nc] = nat.get(name) ?? [];
  console.log(
    `| ${name} | ${sw.toFixed(4)} | ${sc.toFixed(4)} | ${tw.toFixed(4)} | ${tc.toFixed(4)} | ${x(py?.[0], tw)} | ${x(py?.[1], tc)} | ${x(tw, nw)} | ${x(tc, nc)} |`,
  );
}
console.log(py ? `| python json.loads per line | | | ${py[0].toFixed(4)} | ${py[1].toFixed(4)} | 1x | 1x | | |` : "| python json.loads per line | n/a | | | | | | | |");
if (!process.env.KEEP) rmSync(base, { recursive: true, force: true });
