// Node layer: stepStats measures one step of a per-step dump as `somatize import` does (the same
// Rust, compiled to wasm): a dump's own update.* tensors, else the difference against the step
// before; the graph as text, bytes or an object; a step file by its bytes or (in Node) its path;
// and bad input as a SomatizeError with a code.
//
// The fixtures are tests/data/health_import/ (shared with tests/health_import.rs), made by its
// make.py: a Linear(4, 3) -> ReLU -> Linear(3, 2) trained 6 steps by SGD with momentum (torch
// 2.15 CPU, seed 5), dumped as plain/ (no update.*) and update/ (with update.*, and an unknown
// `extra.note` key); expected.json holds numpy's one-step update ratio of fc1 at each step.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stepStats, SomatizeError } from "somatize";

const data = fileURLToPath(new URL("../data/health_import/", import.meta.url));
const file = (set, n) => join(data, set, `step_${String(n).padStart(3, "0")}.npz`);
const bytes = (set, n) => readFileSync(file(set, n));
const graphText = readFileSync(join(data, "plain", "graph.json"), "utf8");
const ratios = JSON.parse(readFileSync(join(data, "expected.json"), "utf8")).fc1_update_ratio;

function near(got, want, what) {
  assert.ok(Math.abs(got - want) <= 1e-5 * Math.abs(want), `${what}: ${got} vs numpy's ${want}`);
}

/** Assert that `f` throws a SomatizeError with these properties. */
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

test("a dump's own update.* is one optimiser step, with no step before", () => {
  for (let n = 0; n < 6; n++) {
    const stats = stepStats(graphText, bytes("update", n));
    assert.deepEqual(Object.keys(stats).sort(), ["fc1", "fc2", "loss", "relu"]);
    near(stats.fc1.update_ratio, ratios[n], `update/ step ${n}`);
    assert.equal(stats.fc1.update_steps, 1);
    for (const m of ["param_norm", "grad_norm", "act_mean", "feature_erank", "update_erank"]) {
      assert.equal(typeof stats.fc1[m], "number", `fc1.${m}`);
    }
    assert.equal(typeof stats.loss.loss, "number");
  }
});

test("without update.*, the update is the difference against the step before, when given", () => {
  for (let n = 1; n < 6; n++) {
    const stats = stepStats(graphText, bytes("plain", n), bytes("plain", n - 1));
    // Step n's weights minus step n − 1's are step n − 1's update.
    near(stats.fc1.update_ratio, ratios[n - 1], `plain/ step ${n}`);
  }
  const alone = stepStats(graphText, bytes("plain", 3));
  assert.equal(alone.fc1.update_ratio, undefined, "no step before, no update");
  assert.equal(typeof alone.fc1.param_norm, "number");
  // What is not an update is the same with or without the step before.
  const withBefore = stepStats(graphText, bytes("plain", 3), bytes("plain", 2));
  for (const [m, v] of Object.entries(alone.fc1)) assert.equal(withBefore.fc1[m], v, m);
});

test("the graph as text, bytes or an object, a step by bytes or by path: the same numbers", () => {
  const want = stepStats(graphText, bytes("plain", 2), bytes("plain", 1));
  const graphBytes = readFileSync(join(data, "plain", "graph.json"));
  assert.deepEqual(stepStats(graphBytes, bytes("plain", 2), bytes("plain", 1)), want);
  assert.deepEqual(stepStats(JSON.parse(graphText), bytes("plain", 2), bytes("plain", 1)), want);
  assert.deepEqual(stepStats(graphText, file("plain", 2), file("plain", 1)), want);
  // No graph: the nodes are those the keys name (no kinds, so no kind's rules).
  assert.deepEqual(Object.keys(stepStats(null, bytes("plain", 2))).sort(), ["fc1", "fc2", "loss", "relu"]);
});

test("bad input is a SomatizeError with a code, naming the file", () => {
  const good = bytes("update", 1);
  // A flipped byte in the middle of the archive: a damaged entry.
  const flipped = new Uint8Array(good);
  flipped[good.length >> 1] ^= 0xff;
  throwsWith(() => stepStats(graphText, flipped, null, { name: "step_001.npz" }), { code: "BAD_TENSOR_FILE", file: "step_001.npz", message: /step_001\.npz/ });
  // Cut short: no zip directory at the end.
  throwsWith(() => stepStats(graphText, good.subarray(0, 1000)), { code: "BAD_TENSOR_FILE", file: "step" });
  throwsWith(() => stepStats(graphText, new TextEncoder().encode("not a tensor file")), { code: "BAD_TENSOR_FILE", message: /not a tensor file/ });
  // A corrupt step before, by path: named by its path.
  const dir = mkdtempSync(join(tmpdir(), "somatize-step-stats-"));
  try {
    const path = join(dir, "step_000.npz");
    writeFileSync(path, good.subarray(0, good.length - 7));
    throwsWith(() => stepStats(graphText, good, path), { code: "BAD_TENSOR_FILE", file: path });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  throwsWith(() => stepStats("{\"nodes\": 3}", good), { code: "BAD_GRAPH", file: "graph.json", message: /not a graph/ });
  // A declared layout that does not fit the output (fc1's is rank 2): the step cannot be measured.
  const wrongLayout = { nodes: [{ name: "fc1", kind: "Linear", layout: "NCHW" }] };
  throwsWith(() => stepStats(wrongLayout, good, null, { name: "s1.npz" }), { code: "BAD_STEP", file: "s1.npz", message: /layout/ });
  throwsWith(() => stepStats(graphText, [1, 2, 3]), { code: "BAD_OPTION", message: /Uint8Array/ });
  throwsWith(() => stepStats(42, good), { code: "BAD_OPTION" });
  throwsWith(() => stepStats(graphText, good, null, { nmae: "x" }), { code: "UNKNOWN_OPTION", message: /nmae/ });
});
