// The wasm side of tests/python/test_golden.py: the last step of a dump folder measured by the
// Rust core compiled to wasm (the npm package's stepStats, from this checkout's pkg/, built by
// scripts/build-wasm.sh), with the step before when the folder has step n − 1, as `somatize
// import` pairs them. Prints {step, stats: {node: {metric: value}}} as JSON (NaN as null, as
// `somatize seen --json` prints it). When the folder also has `summary.json` (the structure of
// the last summary torch sent, with the run's graph), `summary.f64` (its numbers) and
// `summary.samples` (its spectrum samples, dtype in `summary.samples.json`), that
// summary's metrics as the wasm core derives them (summaryStats) are printed too, as `summary`.
//
//   node tests/python/golden_wasm.mjs <dump folder>
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { stepStats, summaryStats } from "../../pkg/node.js";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node golden_wasm.mjs <dump folder>");
  process.exit(2);
}
// step_<digits>.npz, as import names a step (src/import.rs step_number).
const steps = readdirSync(dir)
  .map((name) => /^step_(\d+)\.npz$/.exec(name))
  .filter(Boolean)
  .map((m) => ({ n: Number(m[1]), path: join(dir, m[0]) }))
  .sort((a, b) => a.n - b.n);
if (steps.length === 0) {
  console.error(`${dir}: no step_<n>.npz files`);
  process.exit(1);
}
const last = steps[steps.length - 1];
const before = steps.length > 1 && steps[steps.length - 2].n === last.n - 1 ? steps[steps.length - 2].path : null;
const graph = join(dir, "graph.json");
const stats = stepStats(existsSync(graph) ? readFileSync(graph, "utf8") : null, last.path, before);
const out = { step: last.n, stats };
const sent = join(dir, "summary.json");
if (existsSync(sent)) {
  const { graph: nodes, summary } = JSON.parse(readFileSync(sent, "utf8"));
  const bytes = readFileSync(join(dir, "summary.f64"));
  const values = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  // The samples whose singular values Rust takes: float32, or float64 when one was.
  const raw = readFileSync(join(dir, "summary.samples"));
  const part = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length);
  const samples = JSON.parse(readFileSync(join(dir, "summary.samples.json"), "utf8")).dtype === "float64" ? new Float64Array(part) : new Float32Array(part);
  out.summary = summaryStats(nodes, summary, values, samples);
}
process.stdout.write(JSON.stringify(out) + "\n");

