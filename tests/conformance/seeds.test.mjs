// The seeds (../shared/seeds/) item by item, on the CLI (the binary) and on the npm package in
// Node (pkg/, as tests/node use it): each test calls the item as the seed's text does and checks
// what the seed says it does. Test names are "<seed item> (<surface>)"; docs/seeds.md maps them.
// The Python surface is tests/conformance/test_seeds.py. The browser's package runs the same
// core behind its Web Worker (tests/browser/store.test.mjs checks every store answer there
// equals Node's), so the Node half stands for it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as s from "../../pkg/node.js";
import { json, run, shared, stores } from "./fixture.mjs";

let f;
let demo;
let nest;
let obs;
before(async () => {
  f = stores();
  demo = await s.openStore(f.demo);
  nest = await s.openStore(f.nest);
  obs = await s.openStore(f.obs);
});
after(async () => {
  await Promise.all([demo.close(), nest.close(), obs.close()]);
  f.done();
});

const W = { source: "param", selector: "w", reduction: "max" };
const tensors = () => [{ key: "param.w", shape: [4], values: new Float64Array([1, -2, 3, -4]) }];

// ---- seed 000: Observable Library concepts ----

test("ObservableSpec: seven fields, an unknown one refused (CLI)", () => {
  const canonical = run("spec-id", JSON.stringify(W), "--canonical").out.split("\n")[1];
  assert.deepEqual(Object.keys(JSON.parse(canonical)), ["source", "selector", "transforms", "reduction", "temporal", "frequency", "budget_hint"]);
  const bad = run("spec-id", JSON.stringify({ ...W, bogus: 1 }));
  assert.equal(bad.code, 2);
  assert.match(bad.err, /bogus/);
});
test("ObservableSpec: seven fields, an unknown one refused (npm)", () => {
  assert.deepEqual(Object.keys(JSON.parse(s.specCanonical(W))), ["source", "selector", "transforms", "reduction", "temporal", "frequency", "budget_hint"]);
  assert.throws(() => s.specId({ ...W, bogus: 1 }), /bogus/);
  assert.throws(() => s.observeTensors(tensors(), [{ ...W, bogus: 1 }]), { code: "UNKNOWN_OPTION", message: /bogus/ });
});

test("spec id: 16 hex of the whole spec; an identity field changes it (CLI)", () => {
  const id = (spec) => run("spec-id", JSON.stringify(spec)).out.split("\n")[0].trim();
  const a = id({ source: "param", selector: "fc1.weight", reduction: "l2" });
  assert.equal(a, "c20fbee7e79167b0");
  assert.equal(id({ reduction: "L2", selector: "fc1.weight", source: "param" }), a, "key order and case do not");
  for (const change of [{ reduction: "mean" }, { frequency: 2 }, { temporal: { fn: "delta" } }, { budget_hint: { compute_ms: 1 } }]) {
    assert.notEqual(id({ source: "param", selector: "fc1.weight", reduction: "l2", ...change }), a, JSON.stringify(change));
  }
});
test("spec id: 16 hex of the whole spec; an identity field changes it (npm)", () => {
  const a = s.specId({ source: "param", selector: "fc1.weight", reduction: "l2" });
  assert.equal(a, "c20fbee7e79167b0");
  assert.equal(s.specId({ reduction: "L2", selector: "fc1.weight", source: "param" }), a);
  for (const change of [{ reduction: "mean" }, { frequency: 2 }, { temporal: { fn: "delta" } }, { budget_hint: { compute_ms: 1 } }]) {
    assert.notEqual(s.specId({ source: "param", selector: "fc1.weight", reduction: "l2", ...change }), a);
  }
});

test("Pack: duplicate ids rejected when the runtime materialises it (CLI)", () => {
  const file = join(f.dir, "dup.json");
  writeFileSync(file, JSON.stringify([W, { ...W, reduction: "MAX" }]));
  const p = run("observe", f.steps[0], "--store", join(f.dir, "dup"), "--run", "r", "--specs", file);
  assert.equal(p.code, 2);
  assert.match(p.err, /two observables have id/);
});
test("Pack: duplicate ids rejected when the runtime materialises it (npm)", () => {
  assert.throws(() => s.observeTensors(tensors(), [W, { ...W }]), /two observables have id/);
});

test("generate: one per parameter × reduction, parameters only by default (CLI)", () => {
  const out = json("observe", f.steps[0], "--store", join(f.dir, "gen"), "--run", "g", "--reductions", "l2,mean", "--json");
  const specs = Object.values(out.specs);
  assert.ok(specs.length > 0 && specs.every((sp) => sp.source === "param"), "no grad, act or loss by default");
  assert.equal(specs.length % 2, 0);
});
test("generate: one per parameter × reduction, parameters only by default; its output runs as it is (npm)", () => {
  const keys = ["param.fc1.weight", "param.fc1.bias", "grad.fc1.weight", "act.fc1", "loss"];
  const got = s.generate(keys, ["l2", "mean"]);
  assert.deepEqual(got.map((g) => [g.spec.selector, g.spec.reduction]), [["fc1.weight", "l2"], ["fc1.weight", "mean"], ["fc1.bias", "l2"], ["fc1.bias", "mean"]]);
  const out = s.observeTensors([{ key: "param.fc1.weight", shape: [2], values: [3, 4] }, { key: "param.fc1.bias", shape: [1], values: [1] }], got);
  assert.equal(out.values[got[0].id], 5);
  assert.throws(() => s.observeTensors([], [{ id: "0000000000000000", spec: got[0].spec }]), /not its spec's id/);
});

test("transforms run left to right (CLI: in the id)", () => {
  const id = (t) => run("spec-id", JSON.stringify({ ...W, transforms: t })).out.split("\n")[0];
  assert.notEqual(id(["abs", "neg"]), id(["neg", "abs"]));
});
test("transforms run left to right (npm)", () => {
  const a = { ...W, transforms: ["abs", "neg"] };
  const b = { ...W, transforms: ["neg", "abs"] };
  const out = s.observeTensors(tensors(), [a, b]);
  assert.equal(out.values[s.specId(a)], -1);
  assert.equal(out.values[s.specId(b)], 4);
});

test("registry: names checked at generation, tensors when the op runs (CLI)", () => {
  const p = run("observe", f.steps[0], "--store", join(f.dir, "bad"), "--run", "r", "--reductions", "l3");
  assert.equal(p.code, 2);
  assert.match(p.err, /"l3"/);
});
test("registry: names checked at generation, tensors when the op runs (npm)", () => {
  assert.throws(() => s.generate(["param.a"], ["l3"]), /"l3"/);
  assert.throws(() => s.generate(["param.a"], ["l2"], ["nope"]), /"nope"/);
  const specs = s.generate(["param.b"], ["stable_rank"]);
  const out = s.observeTensors([{ key: "param.b", shape: [3], values: [1, 2, 3] }], specs);
  assert.equal(out.failed.length, 1);
  assert.match(out.failed[0], /stable_rank needs exactly 2 dimensions/);
});

test("HookSource: handed-in params, grads and an explicit loss (npm)", () => {
  const specs = [{ source: "grad", selector: "all", reduction: "l2" }, { source: "loss", selector: "all", reduction: "mean" }];
  const out = s.observeTensors([{ key: "grad.a", shape: [2], values: [3, 0] }, { key: "grad.b", shape: [1], values: [4] }, { key: "loss", shape: [], values: [0.5] }], specs);
  assert.deepEqual(specs.map((sp) => out.values[s.specId(sp)]), [5, 0.5]);
});

test("FileSource: arrays by key from an NPZ (CLI)", () => {
  const id = s.specId({ source: "loss", selector: "all", reduction: "mean", frequency: 2 });
  assert.equal(f.observed.steps["0"][id], 1.4397908449172974);
});
test("FileSource: arrays by key from an NPZ (npm)", () => {
  const spec = { source: "loss", selector: "all", reduction: "mean" };
  const out = s.observeFile(readFileSync(f.steps[0]), "step_000000.npz", [spec], 0);
  assert.equal(out.values[s.specId(spec)], 1.4397908449172974);
});

test("CheckpointSource: param.* from a Torch state dict (CLI)", () => {
  const out = json("observe", join(shared, "fixtures/state_dict.pt"), "--store", join(f.dir, "ckpt"), "--run", "c", "--reductions", "l2", "--json");
  assert.ok(Object.values(out.specs).every((sp) => sp.source === "param") && Object.keys(out.specs).length > 0);
});
test("CheckpointSource: param.* from a Torch state dict (npm)", () => {
  const keys = s.tensorKeys(readFileSync(join(shared, "fixtures/state_dict.pt")), "state_dict.pt").map((k) => k.key);
  assert.ok(keys.length > 0 && keys.every((k) => k.startsWith("param.")), keys.join(","));
});

test("TypedTensor: axes, stage and provenance carried; an unknown field refused (npm)", () => {
  const t = { key: "param.w", shape: [2, 2], values: [1, 2, 3, 4], axes: ["out", "in"], stage: "after_step", provenance: "hand" };
  const out = s.observeTensors([t], [{ ...W, reduction: "l2" }]);
  assert.equal(Object.values(out.values)[0], Math.sqrt(30));
  assert.throws(() => s.observeTensors([{ ...t, axes: ["out"] }], [W]), /1 axis names for 2 dimensions/);
  assert.throws(() => s.observeTensors([{ ...t, colour: "red" }], [W]), { code: "UNKNOWN_OPTION", message: /unknown field "colour"/ });
});

test("Runtime.observe: a dict keyed by spec id (CLI)", () => {
  for (const [step, values] of Object.entries(f.observed.steps)) {
    assert.ok(Object.keys(values).every((id) => id in f.observed.specs), step);
  }
});
test("Runtime.observe: a dict keyed by spec id (npm)", () => {
  const out = s.observeTensors(tensors(), [W]);
  assert.deepEqual(Object.keys(out.values), [s.specId(W)]);
});

test("Runtime caching: one source read per key within a call (npm)", () => {
  let reads = 0;
  const t = { key: "param.w", shape: [4], get values() { reads += 1; return new Float64Array([1, 2, 3, 4]); } };
  s.observeTensors([t], ["l2", "mean", "max", "min", "std"].map((r) => ({ ...W, reduction: r })));
  assert.equal(reads, 1);
});

test("frequency: step eligibility (CLI)", () => {
  const id = s.specId({ source: "loss", selector: "all", reduction: "mean", frequency: 2 });
  assert.ok(id in f.observed.steps["0"] && !(id in f.observed.steps["1"]) && id in f.observed.steps["2"]);
});
test("frequency: step eligibility (npm)", () => {
  const spec = { ...W, frequency: 2 };
  assert.ok(!(s.specId(spec) in s.observeTensors(tensors(), [spec], 1).values));
  assert.ok(s.specId(spec) in s.observeTensors(tensors(), [spec], 2).values);
});

test("Budget: the sum of declared compute_ms, not timing (CLI)", () => {
  const skipped = f.observed.skipped["0"];
  assert.deepEqual(skipped.map((k) => [k.reason, k.cost_ms, k.left_ms]), [["budget", 5, 0.5]]);
});
test("Budget: the sum of declared compute_ms, not timing (npm)", () => {
  const specs = [8, 3, 5].map((ms, i) => ({ ...W, reduction: ["l2", "mean", "max"][i], budget_hint: { compute_ms: ms } }));
  const out = s.observeTensors(tensors(), specs, 0, { budget: { maxComputeMs: 11.5 } });
  assert.deepEqual(out.skipped, [{ id: s.specId(specs[2]), reason: "budget", cost_ms: 5, left_ms: 0.5 }]);
  assert.equal(Object.keys(s.observeTensors(tensors(), specs).values).length, 3, "no budget: all run");
  assert.throws(() => s.observeTensors(tensors(), specs, 0, { max_compute_ms: 1 }), /max_compute_ms/);
  assert.throws(() => s.observeTensors(tensors(), specs, 0, { budget: { max: 1 } }), /max/);
});

test("OfflineAnalyzer: one step per file, numbered from the file names (CLI)", () => {
  assert.deepEqual(Object.keys(f.observed.steps), ["0", "1", "2"]);
});

test("query: exact id and step read back (CLI)", () => {
  const id = s.specId({ source: "loss", selector: "all", reduction: "mean", frequency: 2 });
  assert.equal(json("query", f.obs, "--run", "obs", "--id", id, "--step", "2", "--json"), f.observed.steps["2"][id]);
  assert.equal(json("query", f.obs, "--run", "obs", "--id", id, "--step", "1", "--json"), null, "not written: null, not an error");
  assert.equal(run("query", f.obs, "--run", "nosuch", "--id", id, "--step", "1").code, 2);
});
test("query: exact id and step read back (npm)", async () => {
  const id = s.specId({ source: "loss", selector: "all", reduction: "mean", frequency: 2 });
  assert.equal(await s.query(obs, { run: "obs", id, step: 2 }), f.observed.steps["2"][id]);
  assert.equal(await s.query(obs, { run: "obs", id, step: 1 }), null);
  await assert.rejects(s.query(obs, { run: "obs", id, step: 1, last: 1 }), /last/);
});

test("selector all: every selected tensor concatenated (CLI: observe --select)", () => {
  const out = json("observe", f.steps[0], "--store", join(f.dir, "sel"), "--run", "s", "--reductions", "l2", "--select", "0.weight", "--json");
  assert.deepEqual(Object.values(out.specs).map((sp) => sp.selector), ["0.weight"]);
});
test("selector all: every selected tensor concatenated (npm)", () => {
  const spec = { source: "grad", selector: "all", reduction: "l2" };
  assert.equal(s.observeTensors([{ key: "grad.a", shape: [2], values: [3, 0] }, { key: "grad.b", shape: [1], values: [4] }], [spec]).values[s.specId(spec)], 5);
});

test("delta, ema, slope, rolling_std over explicit histories (npm)", () => {
  const h = [1, 3, 6, 10];
  assert.deepEqual([...s.delta(h)].slice(1), [2, 3, 4]);
  assert.deepEqual([...s.ema(h, 0.5)], [1, 2, 4, 7]);
  assert.deepEqual([...s.slope(h, 3)].slice(2), [2.5, 3.5]);
  assert.ok(Math.abs(s.rollingStd(h, 2)[1] - Math.SQRT2) < 1e-12);
  assert.throws(() => s.ema(h, 0), /alpha 0/);
});

test("temporal: in the identity, not applied by the runtime (npm)", () => {
  const spec = { source: "loss", selector: "all", reduction: "mean", temporal: { fn: "delta" } };
  assert.notEqual(s.specId(spec), s.specId({ ...spec, temporal: null }));
  assert.equal(s.observeTensors([{ key: "loss", shape: [], values: [0.5] }], [spec]).values[s.specId(spec)], 0.5);
});

// ---- seed 002: somatize.health ----

const STALLED_OFF = { stalled_update_ratio: 1e-12 };

test("reproducible from the record: change a bound and ask again (CLI)", () => {
  assert.ok(Object.keys(json("diagnose", f.demo, "--run", "stalled", "--json")).length > 0);
  assert.deepEqual(json("diagnose", f.demo, "--run", "stalled", "--thresholds", JSON.stringify(STALLED_OFF), "--json"), {});
});
test("reproducible from the record: change a bound and ask again (npm)", async () => {
  assert.ok((await s.diagnose(demo, { run: "stalled" })).size > 0);
  assert.equal((await s.diagnose(demo, { run: "stalled", thresholds: new s.Thresholds(STALLED_OFF) })).size, 0);
});

test("Thresholds(**over): an unknown bound refused (CLI)", () => {
  const p = run("diagnose", f.demo, "--run", "healthy", "--thresholds", '{"bogus": 1}');
  assert.equal(p.code, 2);
  assert.match(p.err, /bogus/);
});
test("Thresholds(**over): an unknown bound refused (npm)", () => {
  assert.throws(() => new s.Thresholds({ bogus: 1 }), /bogus/);
  assert.throws(() => new s.Thresholds({ stalled_update_ratio: "x" }), /number/);
});

test("Thresholds.as_dict: every bound, the overrides applied (CLI)", () => {
  const all = json("thresholds", "--json");
  assert.ok(Object.keys(all).length >= 18 && Object.values(all).every((v) => typeof v === "number"));
});
test("Thresholds.as_dict: every bound, the overrides applied (npm)", () => {
  const d = new s.Thresholds({ dead_layer_fraction: 0.99 }).asDict();
  assert.equal(d.dead_layer_fraction, 0.99);
  assert.deepEqual({ ...d, dead_layer_fraction: 0 }, { ...s.thresholdsDefault(), dead_layer_fraction: 0 });
  assert.deepEqual(Object.keys(d), Object.keys(s.thresholdsDefault()));
});

test("alerts: what is wrong, loudly (CLI)", () => {
  const a = json("alerts", f.demo, "--run", "dead_relu", "--json");
  assert.ok(a.length > 0 && a.every((x) => x.node && x.flag && x.advice && Number.isInteger(x.first_forward)));
});
test("alerts: what is wrong, loudly (npm)", async () => {
  const a = await s.alerts(demo, { run: "dead_relu" });
  assert.deepEqual(a, json("alerts", f.demo, "--run", "dead_relu", "--json"));
});

test("about: a flag by name, and as where names it (CLI)", () => {
  const a = json("about", "OVERSTEPPING in net.0", "--json");
  assert.equal(a.flag, "OVERSTEPPING");
  assert.ok(a.todo && a.bounds.length > 0);
  assert.equal(run("about", "NOT_A_FLAG").code, 2);
});
test("about: a flag by name, and as where names it (npm)", () => {
  assert.equal(s.about("LEAKAGE in net.2").flag, "LEAKAGE");
  assert.equal(s.about("DEAD_CHANNELS(3)").flag, "DEAD_CHANNELS");
  assert.throws(() => s.about("NOT_A_FLAG"), /unknown flag/);
});

test("diagnose: {where: [flags]}, declaration order, nothing wrong absent (CLI)", () => {
  assert.deepEqual(json("diagnose", f.demo, "--run", "healthy", "--json"), {});
  const d = json("diagnose", f.demo, "--run", "dead_relu", "--json");
  assert.deepEqual(Object.keys(d), ["relu1"]);
  assert.ok(d.relu1.includes("DEAD"));
  // A submodule key as given; JSON text keeps the order (a JS object would not for "1").
  const text = run("diagnose", f.nest, "--run", "nest", "--json").out;
  assert.ok(text.indexOf('"1"') < text.indexOf('"net.0"'), text);
  assert.deepEqual(JSON.parse(text), { 1: ["STALLED"], "net.0": ["OVERSTEPPING"] });
  const missing = run("diagnose", f.demo, "--run", "nosuch", "--json");
  assert.equal(missing.code, 2);
  assert.match(missing.err, /the store holds no run "nosuch"/, "worded as facts words it");
});
test("diagnose: {where: [flags]}, declaration order, nothing wrong absent (npm)", async () => {
  const healthy = await s.diagnose(demo, { run: "healthy" });
  assert.ok(healthy instanceof Map && healthy.size === 0);
  const d = await s.diagnose(nest, { run: "nest" });
  assert.deepEqual([...d], [["1", ["STALLED"]], ["net.0", ["OVERSTEPPING"]]]);
  const last = await s.diagnose(demo, { run: "dead_relu", last: 1 });
  assert.ok(last.get("relu1").includes("DEAD"));
  await assert.rejects(s.diagnose(demo, { run: "healthy", node: "fc1" }), /node/);
  await assert.rejects(s.diagnose(demo, { run: "nosuch" }), { code: "NO_SUCH_RUN", message: /the store holds no run "nosuch"/ });
});

test("flags: a table of node, flag and what to do (CLI)", () => {
  const fig = json("figure", "flags", f.demo, "--run", "dead_relu");
  assert.deepEqual(fig.data[0].header.values, ["node", "flag", "what to do"]);
  assert.ok(fig.data[0].cells.values[0].includes("relu1"));
});
test("flags: a table of node, flag and what to do (npm)", async () => {
  const { skipped, ...fig } = await s.flags(demo, { run: "dead_relu" });
  assert.deepEqual(skipped, []);
  assert.deepEqual(fig, json("figure", "flags", f.demo, "--run", "dead_relu"));
});

test("history: (forward, value) of one node; last=N reads N (CLI)", () => {
  const h = json("history", f.demo, "--run", "vanishing", "--node", "fc1", "--last", "3", "--json");
  assert.deepEqual(h.map(([fw]) => fw), [297, 298, 299]);
  assert.deepEqual(json("history", f.demo, "--run", "vanishing", "--node", "nosuch", "--json"), []);
});
test("history: (forward, value) of one node; last=N reads N (npm)", async () => {
  const h = await s.history(demo, { run: "vanishing", node: "fc1", of: "update_ratio", last: 2 });
  assert.deepEqual(h, json("history", f.demo, "--run", "vanishing", "--node", "fc1", "--of", "update_ratio", "--last", "2", "--json"));
});

test("overlaid: flagged nodes outlined, a finding inside a node on its badge (CLI)", () => {
  const fig = JSON.stringify(json("figure", "overlaid", f.nest, "--run", "nest"));
  assert.ok(fig.includes("OVERSTEPPING in net.0") && fig.includes("#c00000"));
});
test("overlaid: flagged nodes outlined, a finding inside a node on its badge (npm)", async () => {
  const { skipped: _, ...fig } = await s.overlaid(nest, { run: "nest" });
  assert.deepEqual(fig, json("figure", "overlaid", f.nest, "--run", "nest"));
});

test("profile: one measurement per node in depth order, flagged in the alarm colour (CLI)", () => {
  const fig = json("figure", "profile", f.nest, "--run", "nest", "--of", "update_ratio");
  assert.deepEqual(fig.data[0].x, ["net", "net.0", "head", "1"]);
  assert.deepEqual(fig.data[0].marker.color.map((c) => c === "#c00000"), [true, true, false, true]);
});
test("profile: one measurement per node in depth order, flagged in the alarm colour (npm)", async () => {
  const fig = await s.profile(nest, { run: "nest", of: "update_ratio" });
  assert.deepEqual(fig.data[0].x, ["net", "net.0", "head", "1"]);
});

test("seen: the latest of each number, by node and node.path (CLI)", () => {
  const seen = json("seen", f.nest, "--run", "nest", "--json");
  assert.ok("net.0" in seen && seen["net.0"].update_ratio === 5);
});
test("seen: the latest of each number, by node and node.path (npm)", async () => {
  const seen = await s.seen(nest, { run: "nest" });
  assert.deepEqual(seen, json("seen", f.nest, "--run", "nest", "--json"));
  // verdict(seen) takes the verdict yourself, as the seed says.
  assert.deepEqual(Object.keys(s.verdict(seen)).sort(), ["1", "net.0"]);
});

test("where: the diagnosis folded onto the nodes, 'FLAG in node.path' (CLI)", () => {
  const text = run("where", f.nest, "--run", "nest", "--json").out;
  assert.ok(text.indexOf('"net"') < text.indexOf('"1"'), "declaration order in the JSON text");
  assert.deepEqual(JSON.parse(text), { net: ["OVERSTEPPING in net.0"], 1: ["STALLED"] });
});
test("where: the diagnosis folded onto the nodes, 'FLAG in node.path' (npm)", async () => {
  assert.deepEqual([...(await s.where(nest, { run: "nest" }))], [["net", ["OVERSTEPPING in net.0"]], ["1", ["STALLED"]]]);
});

test("within(where): the node a key belongs to, one argument (CLI)", () => {
  assert.equal(run("within", "net.2.attn").out.trim(), "net");
  assert.equal(json("within", "net.2.attn", "--nodes", "net,net.2", "--json"), "net.2");
});
test("within(where): the node a key belongs to, one argument (npm)", () => {
  assert.equal(s.within("net.2.attn"), "net");
  assert.equal(s.within("net.2.attn", ["net", "net.2"]), "net.2");
});

test("probe: a one-forward record (run/<id>/0) reads like any run (CLI)", () => {
  // A probe is recorded by somatize.torch.probe (Python; test_seeds.py); what reads it is here.
  const dump = join(f.dir, "one-step");
  mkdirSync(dump);
  copyFileSync(join(shared, "runs/example_cnn/step_000000.npz"), join(dump, "step_000000.npz"));
  copyFileSync(join(shared, "runs/example_cnn/graph.json"), join(dump, "graph.json"));
  const one = join(f.dir, "one");
  assert.equal(run("import", dump, "--store", one, "--run", "probe").code, 0);
  assert.deepEqual(json("diagnose", one, "--run", "probe", "--with-bounds").forwards, { count: 1, first: 0, last: 0 });
  assert.ok(Object.keys(json("seen", one, "--run", "probe", "--json")).length > 0);
});

// ---- seed 003: somatize.record ----

test("functions, not a type: free functions over a store (npm)", async () => {
  for (const fn of [s.runs, s.forwards, s.curve, s.curveCosts, s.facts, s.nodes, s.fleet, s.standing, s.seen, s.diagnose, s.history, s.where, s.alerts, s.query, s.progress, s.profile]) {
    await assert.rejects(async () => fn("not a store", { run: "healthy" }), TypeError, fn.name);
  }
  assert.deepEqual(await s.runs(demo), (await demo.runs()).rows, "the same call as the Store method, the seed's list");
  await assert.rejects(s.curve(demo, { run: "healthy", colour: 1 }), { code: "UNKNOWN_OPTION", message: /colour/ });
  await assert.rejects(s.nodes(demo, { run: "healthy", of: "x" }), { code: "UNKNOWN_OPTION", message: /of/ });
  await assert.rejects(s.nodes(demo, { run: "nosuch" }), { code: "NO_SUCH_RUN" });
  await assert.rejects(s.facts(demo, { run: "healthy" }), { code: "BAD_OPTION" });
  await assert.rejects(s.runs("x"), { code: "NOT_A_STORE" });
  await assert.rejects(s.gantt(demo, { run: "healthy", smooth: 3 }), { code: "UNKNOWN_OPTION", message: /smooth/ });
});

// ---- seed 003: Live (issue 22 built it on every surface) ----

test("Live: one compact row per forward, the figure progress draws (npm)", async () => {
  const rows = (await demo.forwards({ run: "healthy" })).rows;
  const live = new s.Live({ title: "Progress of run healthy", smooth: 5 });
  for (const r of rows) {
    const v = r["loss.value"];
    live.push({ forward: r.forward, value: v == null ? null : Number(v), took_us: r.took_us, broke: !!r.broke, error: r.broke ? r.error ?? null : null });
  }
  assert.equal(live.seen().forwards, rows.length, "every forward held");
  const want = await demo.figure({ kind: "progress", run: "healthy", smooth: 5 });
  const got = live.figure();
  assert.deepEqual(got.data.map((t) => t.name), want.data.map((t) => t.name));
  assert.deepEqual(got.data[0], want.data[0], "the loss line is the run's");
  live.free();
});
test("Live.figure: the rows' figure is progress's (CLI: figure progress --rows)", () => {
  const rows = json("forwards", f.demo, "--run", "healthy", "--json");
  const lines = rows.map((r) => JSON.stringify({ forward: r.forward, value: r["loss.value"] == null ? null : Number(r["loss.value"]), took_us: r.took_us, broke: !!r.broke, error: null })).join("\n");
  const path = join(f.dir, "live-rows.jsonl");
  writeFileSync(path, lines + "\n");
  const got = json("figure", "progress", "--rows", path, "--title", "t");
  const want = json("figure", "progress", f.demo, "--run", "healthy");
  assert.deepEqual(got.data[0], want.data[0]);
  assert.equal(got.layout.title.text, "t");
});

test("curve: (forward, value) pairs, free when summarised (CLI)", () => {
  const c = json("curve", f.demo, "--run", "healthy", "--json");
  assert.equal(c.length, 300);
  assert.ok(c.every(([fw, v]) => Number.isInteger(fw) && typeof v === "number"));
});
test("curve: (forward, value) pairs, free when summarised (npm)", async () => {
  const before = (await demo.stats()).reads;
  const c = await s.curve(demo, { run: "healthy" });
  assert.deepEqual(c, json("curve", f.demo, "--run", "healthy", "--json"));
  assert.deepEqual(c.skipped, []);
  assert.ok((await demo.stats()).reads - before < 5, "a scan, no fetch per forward");
});

test("curve_costs: 'scan' or 'fetch', asked before paying (CLI)", () => {
  assert.equal(run("curve-costs", f.demo, "--run", "healthy").out.trim(), "scan");
  assert.equal(json("curve-costs", f.demo, "--run", "healthy", "--of", "Linear.took_us", "--json"), "fetch");
});
test("curve_costs: 'scan' or 'fetch', asked before paying (npm)", async () => {
  assert.equal(await s.curveCosts(demo, { run: "healthy" }), "scan");
  assert.equal(await s.curveCosts(demo, { run: "healthy", of: "Linear.took_us" }), "fetch");
});

test("facts: one forward in arrival order; null for no such forward (CLI)", () => {
  const facts = json("facts", f.demo, "--run", "healthy", "--forward", "0", "--json");
  assert.deepEqual(facts.map((x) => x.node), ["fc1", "relu1", "fc2", "loss"]);
  assert.equal(json("facts", f.demo, "--run", "healthy", "--forward", "100000", "--json"), null);
  assert.equal(run("facts", f.demo, "--run", "nosuch", "--forward", "0").code, 2, "a missing run is an error");
});
test("facts: one forward in arrival order; null for no such forward (npm)", async () => {
  assert.deepEqual(await s.facts(demo, { run: "healthy", forward: 0 }), json("facts", f.demo, "--run", "healthy", "--forward", "0", "--json"));
  assert.equal(await s.facts(demo, { run: "healthy", forward: 100000 }), null);
  await assert.rejects(s.facts(demo, { run: "nosuch", forward: 0 }), /nosuch/);
});

test("fleet: per machine, last=N reads only N (CLI)", () => {
  const rows = json("fleet", f.demo, "--run", "healthy", "--last", "1", "--json");
  assert.equal(rows[0].machine, "local");
  assert.equal(rows[0].busy, null, "a machine that said nothing");
});
test("fleet: per machine, last=N reads only N (npm)", async () => {
  assert.deepEqual(await s.fleet(demo, { run: "healthy", last: 1 }), json("fleet", f.demo, "--run", "healthy", "--last", "1", "--json"));
});

test("gantt: one forward on a timeline, forward 0 by default (CLI)", () => {
  assert.equal(json("figure", "gantt", f.demo, "--run", "healthy").layout.title.text, "Forward 0 of run healthy");
});
test("gantt: one forward on a timeline, forward 0 by default (npm)", async () => {
  assert.equal((await s.gantt(demo, { run: "healthy" })).layout.title.text, "Forward 0 of run healthy");
});

test("machines: working vs waited on per machine (CLI)", () => {
  assert.deepEqual(json("figure", "machines", f.demo, "--run", "healthy").data.map((t) => t.name), ["working", "waited on (wire, queue, codec)"]);
});
test("machines: working vs waited on per machine (npm)", async () => {
  assert.deepEqual((await s.machines(demo, { run: "healthy" })).data.map((t) => t.name), ["working", "waited on (wire, queue, codec)"]);
});

test("forwards: every forward in order, summarised fields as text (CLI)", () => {
  const rows = json("forwards", f.demo, "--run", "healthy", "--json");
  assert.deepEqual(rows.map((r) => r.forward), [...Array(300).keys()]);
  assert.equal(typeof rows[0]["loss.value"], "string");
});
test("forwards: every forward in order, summarised fields as text (npm)", async () => {
  const rows = await s.forwards(demo, { run: "healthy" });
  assert.equal(rows.length, 300);
  assert.equal(typeof rows[0]["loss.value"], "string");
});

test("nodes: per node; last=N reads only N (CLI)", () => {
  const rows = json("nodes", f.demo, "--run", "healthy", "--last", "3", "--json");
  assert.deepEqual(rows.map((r) => [r.node, r.ran]), [["fc1", 3], ["relu1", 3], ["fc2", 3], ["loss", 3]]);
});
test("nodes: per node; last=N reads only N (npm)", async () => {
  const before = (await demo.stats()).reads;
  const rows = await s.nodes(demo, { run: "healthy", last: 3 });
  assert.ok(rows.every((r) => r.ran === 3));
  assert.ok((await demo.stats()).reads - before <= 6, "about a read per forward looked at");
});

test("progress: loss, time, breaks; smooth 0 draws only what was measured (CLI)", () => {
  const names = (smooth) => json("figure", "progress", f.demo, "--run", "healthy", "--smooth", smooth).data.map((t) => t.name);
  assert.deepEqual(names("0"), ["loss.value", "time per forward"]);
  assert.ok(names("5").includes("rolling mean of 5"));
});
test("progress: loss, time, breaks; smooth 0 draws only what was measured (npm)", async () => {
  assert.deepEqual((await s.progress(demo, { run: "healthy", smooth: 0 })).data.map((t) => t.name), ["loss.value", "time per forward"]);
});

test("runs: every run, newest last, one scan (CLI)", () => {
  const rows = json("runs", f.demo, "--json");
  assert.deepEqual(rows.map((r) => r.run), ["healthy", "vanishing", "exploding", "dead_relu", "saturated", "stalled", "overstepping"]);
});
test("runs: every run, newest last, one scan (npm)", async () => {
  assert.deepEqual((await s.runs(demo)).map((r) => r.run), json("runs", f.demo, "--json").map((r) => r.run));
});

test("spent: time per node coloured by where it ran; last=N (CLI)", () => {
  const fig = json("figure", "spent", f.demo, "--run", "healthy", "--last", "4");
  assert.ok(fig.layout.title.text.includes("last 4"));
});
test("spent: time per node coloured by where it ran; last=N (npm)", async () => {
  assert.ok((await s.spent(demo, { run: "healthy", last: 4 })).layout.title.text.includes("last 4"));
});

test("standing: {id: reading}, one scan (CLI)", () => {
  assert.deepEqual(json("standing", f.demo, "--json"), {});
});
test("standing: {id: reading}, one scan (npm)", async () => {
  assert.deepEqual(await s.standing(demo), {});
});
