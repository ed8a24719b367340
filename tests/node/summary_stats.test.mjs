// Node layer: summaryStats turns a step's summary (what somatize.torch.watch sends: the
// structure as JSON, the numbers as float64) into node metrics with the Rust the companion
// runs, compiled to wasm: a hand-built summary whose metrics are worked out by hand (the same one
// tests/summary_wire.rs checks natively), a frame captured from the package's channel
// (fuzz/corpus/frame/summary_frame.bin, fuzz/corpus/README.md), and bad input as a
// SomatizeError with a code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { summaryStats, SomatizeError } from "somatize";

// fc: W = [[3, 4]], b = [0], gradient [[0.5, 0]], [0], update [[0, 0.3]], [0]; act (Tanh): unit 0
// = [0.1, 0.2, 0.3], unit 1 = [0.99, 0.98, -0.99], in the all-finite "signs" form.
const structure = {
  tensors: [
    { keys: [["param.fc.weight"], ["param.fc.bias"]], shapes: [[1, 2], [1]], finite: 0, nan: 2, sum_sq: 4, sum_abs: 6, absmax: 8 },
    { keys: [["grad.fc.weight"], ["grad.fc.bias"]], shapes: [[1, 2], [1]], finite: 10, nan: 12, sum_sq: 14, sum_abs: 16, absmax: 18, zeros: 20 },
  ],
  updates: [{ keys: [["update.fc.weight"], ["update.fc.bias"]], sum_sq: 22, base_sq: 24 }],
  outputs: [{ node: "act", units: 2, elements: 6, positions: 3, at: 26, form: "signs", saturated: true }],
};
const values = Float64Array.from([
  2, 1, 0, 0, 25, 0, 7, 0, 4, 0,
  2, 1, 0, 0, 0.25, 0, 0.5, 0, 0.5, 0, 1, 1,
  0.09, 0, 25, 0,
  0.1, 0.99, 0.3, -0.01 - 1.98, 0.05, 0.0001 + 3.9204, 0.6, 2.96, 3, 1, 3, 3, 0, 3,
]);
const graph = { nodes: [{ name: "fc", kind: "Linear" }, { name: "act", kind: "Tanh" }] };

function near(got, want, what) {
  assert.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)), `${what}: ${got}, wanted ${want}`);
}

function throwsWith(f, want) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof SomatizeError, `not a SomatizeError: ${e?.stack ?? e}`);
    for (const [k, v] of Object.entries(want)) {
      if (v instanceof RegExp) assert.match(String(e[k]), v, k);
      else assert.equal(e[k], v, `${k} of ${e.message}`);
    }
    return true;
  });
}

test("a hand-built summary gives the metrics worked out by hand", () => {
  for (const s of [structure, JSON.stringify(structure)]) {
    const got = summaryStats(JSON.stringify(graph), s, values);
    const fc = got.fc;
    near(fc.param_norm, 5, "param_norm");
    near(fc.param_mean_abs, 7 / 3, "param_mean_abs");
    near(fc.update_ratio, 0.06, "update_ratio");
    near(fc.grad_zero_fraction, 2 / 3, "grad_zero_fraction");
    const act = got.act;
    near(act.act_mean, (0.6 + 0.98) / 6, "act_mean");
    near(act.units, 2, "units");
    near(act.act_saturated_fraction, 0.5, "act_saturated_fraction");
    near(act.saturated_units, 1, "saturated_units");
  }
});

test("a summary the package's channel sent reads back whole", () => {
  const bytes = readFileSync(fileURLToPath(new URL("../../fuzz/corpus/frame/summary_frame.bin", import.meta.url)));
  const length = bytes.readUInt32LE(0);
  const header = JSON.parse(bytes.subarray(4, 4 + length).toString("utf8"));
  // The frame's tensors back to back after its header: the numbers (float64), the samples.
  const tensors = {};
  let at = 4 + length;
  for (const t of header.tensors) {
    const size = { float64: 8, float32: 4 }[t.dtype] * t.shape.reduce((a, b) => a * b, 1);
    const part = bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + size);
    tensors[t.key] = t.dtype === "float64" ? new Float64Array(part) : new Float32Array(part);
    at += size;
  }
  assert.ok(tensors.summary instanceof Float64Array, "the numbers are float64");
  assert.ok(tensors["summary.samples"] instanceof Float32Array, "the samples are float32");
  const nodes = header.facts.filter((f) => f.kind !== "loss").map((f) => ({ name: f.node, kind: f.kind, layout: f.layout }));
  const got = summaryStats({ nodes }, header.summary, tensors.summary, tensors["summary.samples"]);
  // The same samples as a Float64Array: the same metrics.
  assert.deepEqual(summaryStats({ nodes }, header.summary, tensors.summary, Float64Array.from(tensors["summary.samples"])), got);
  // Without its samples, a summary that names some is refused.
  throwsWith(() => summaryStats({ nodes }, header.summary, tensors.summary), { code: "BAD_SUMMARY", message: /past the/ });
  for (const [node, metrics] of [["0", ["param_norm", "update_ratio", "act_var", "update_erank"]], ["1", ["act_saturated_fraction", "ignored_units", "feature_erank"]], ["2", ["cka", "grad_zero_fraction"]]]) {
    for (const m of metrics) assert.ok(Number.isFinite(got[node]?.[m]), `${node} lacks ${m}: ${JSON.stringify(got[node])}`);
  }
});

test("bad summaries are SomatizeErrors with a code", () => {
  throwsWith(() => summaryStats(graph, { ...structure, updates: [{ keys: [["update.fc.weight"]], sum_sq: 1000, base_sq: 0 }] }, values), { code: "BAD_SUMMARY", message: /past the/ });
  throwsWith(() => summaryStats(graph, "{not json", values), { code: "BAD_SUMMARY" });
  throwsWith(() => summaryStats(graph, { tensors: [{ keys: [] }] }, values), { code: "BAD_SUMMARY" });
  throwsWith(() => summaryStats(graph, structure, [1, 2, 3]), { code: "BAD_OPTION", message: /Float64Array/ });
  throwsWith(() => summaryStats(graph, structure, values, [1, 2]), { code: "BAD_OPTION", message: /Float32Array/ });
  throwsWith(() => summaryStats(graph, 12, values), { code: "BAD_OPTION" });
  throwsWith(() => summaryStats("{]", structure, values), { code: "BAD_GRAPH" });
});
