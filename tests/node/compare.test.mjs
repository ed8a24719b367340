// Many runs at a glance through the package in Node: store.compare() and
// figure({kind: "compare"}) give exactly what `somatize compare --json` and `somatize figure
// compare` print, over a folder and a snapshot of it (runs read from the summaries.jsonl each
// carries).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { makeStores, cli } from "./store-fixture.mjs";

let s;
before(() => {
  s = makeStores("compare");
});

const run = (...args) => execFileSync(cli, args, { encoding: "utf8" });

test("compare answers as the CLI does, from the summaries a finished recording leaves", async () => {
  const lines = readFileSync(join(s.store, "summaries.jsonl"), "utf8").trim().split("\n").map(JSON.parse);
  // Each of the three recordings appended an open line, then a summary when it finished.
  assert.deepEqual(lines.map((l) => [l.run, l.writer, l.open ?? false, "summary" in l]), [
    ["mlp", "w0", true, false], ["mlp", "w0", false, true],
    ["mlp", "w1", true, false], ["mlp", "w1", false, true],
    ["small", "w0", true, false], ["small", "w0", false, true],
  ]);
  const store = await openStore(s.store);
  const got = await store.compare();
  assert.deepEqual(got.skipped, []);
  assert.deepEqual(got.rows, JSON.parse(run("compare", s.store, "--json")));
  assert.deepEqual(got.rows.map((r) => [r.run, r.from, typeof r.healthy, r.forwards, r.writers, r.ended_ok]), [
    ["mlp", "summary", "boolean", 12, 2, true],
    ["small", "summary", "boolean", 3, 1, true],
  ]);
  const one = await store.compare({ runs: "sm*" });
  assert.deepEqual(one.rows, JSON.parse(run("compare", s.store, "--runs", "sm*", "--json")));
  assert.deepEqual(one.rows.map((r) => r.run), ["small"]);
  await assert.rejects(store.compare({ runs: "*", nope: 1 }), /unknown field `nope`/);
  await store.close();
});

test("a snapshot carries the summaries of its runs: the same rows, from one file", async () => {
  const folder = await openStore(s.store);
  const snap = await openStore(s.snapshot);
  const a = (await folder.compare()).rows;
  const b = (await snap.compare()).rows;
  assert.ok(b.every((r) => r.from === "summary"));
  assert.deepEqual(b, a);
  assert.deepEqual((await snap.compare({ lazy: true })).rows, a);
  // The overlay drawn from the snapshot (the finished runs from their sketches) is the folder's.
  assert.deepEqual(await snap.figure({ kind: "compare", ema: 0.5 }), await folder.figure({ kind: "compare", ema: 0.5 }));
  await folder.close();
  await snap.close();
});

test("figure compare is the CLI's figure: EMA, rolling mean, groups, x axes, log y", async () => {
  const store = await openStore(s.store);
  const cases = [
    [{}, []],
    [{ ema: 0.6, logY: true }, ["--ema", "0.6", "--log-y"]],
    [{ smooth: 3, x: "relative", groupBy: ["m", "s"] }, ["--smooth", "3", "--x", "relative", "--group-by", "m", "s"]],
    [{ runs: "mlp", x: "wall", of: "loss.value" }, ["--runs", "mlp", "--x", "wall", "--of", "loss.value"]],
  ];
  for (const [options, args] of cases) {
    const { skipped, ...figure } = await store.figure({ kind: "compare", ...options });
    assert.deepEqual(skipped, []);
    assert.deepEqual(figure, JSON.parse(run("figure", "compare", s.store, ...args)), JSON.stringify(options));
    assert.ok(figure.data.length > 0);
  }
  const grouped = await store.figure({ kind: "compare", groupBy: ["m"] });
  assert.deepEqual(grouped.data.map((t) => t.name), ["m* (1 runs) max", "m* (1 runs) min–max", "m* (1 runs) mean", "small"]);
  await assert.rejects(store.figure({ kind: "compare", ema: 1 }), /\[0, 1\)/);
  await assert.rejects(store.figure({ kind: "compare", x: "hours" }), /forward, wall or relative/);
  await store.close();
});

test("a second overlay of the same runs reads nothing of their indexes again (until refresh)", async () => {
  const store = await openStore(s.store);
  await store.figure({ kind: "compare" });
  const first = await store.stats();
  const again = await store.figure({ kind: "compare", ema: 0.5, groupBy: ["m"], x: "relative" });
  const second = await store.stats();
  assert.equal(second.reads, first.reads, "smoothing, grouping and the x axis changed: nothing read");
  assert.deepEqual(again, await store.figure({ kind: "compare", ema: 0.5, groupBy: ["m"], x: "relative" }));
  await store.refresh();
  await store.figure({ kind: "compare" });
  assert.ok((await store.stats()).reads > second.reads, "after refresh() the indexes are read again");
  await store.close();
});

test("runs grouped by a recorded config field: compare({groupBy}) and figure({groupConfig}) are the CLI's", async () => {
  // Configs recorded after the runs finished: `compare --summarise` takes them into the summaries.
  writeFileSync(join(s.store, "runs/mlp/config.json"), JSON.stringify({ lr: 0.1, optim: { name: "adam" } }));
  writeFileSync(join(s.store, "runs/small/config.json"), JSON.stringify({ lr: 0.01 }));
  run("compare", s.store, "--summarise");
  const store = await openStore(s.store);
  const rows = (await store.compare()).rows;
  assert.deepEqual(rows.map((r) => [r.run, r.config]), [["mlp", { lr: 0.1, optim: { name: "adam" } }], ["small", { lr: 0.01 }]]);
  const groups = await store.compare({ groupBy: "lr" });
  assert.deepEqual(groups.rows, JSON.parse(run("compare", s.store, "--group-by", "lr", "--json")));
  assert.deepEqual(groups.rows.map((g) => [g.value, g.runs]), [["0.01", ["small"]], ["0.1", ["mlp"]]]);
  const byName = await store.compare({ groupBy: "optim.name" });
  assert.deepEqual(byName.rows.map((g) => [g.value, g.runs]), [["adam", ["mlp"]], [null, ["small"]]]);
  const { skipped, ...figure } = await store.figure({ kind: "compare", groupConfig: "lr", ema: 0.5 });
  assert.deepEqual(skipped, []);
  assert.deepEqual(figure, JSON.parse(run("figure", "compare", s.store, "--group-config", "lr", "--ema", "0.5")));
  assert.deepEqual(figure.data.filter((t) => / mean$/.test(t.name)).map((t) => t.name), ["lr=0.01 (1 runs) mean", "lr=0.1 (1 runs) mean"]);
  await assert.rejects(store.figure({ kind: "compare", groupConfig: "lr", groupBy: ["m"] }), /not both/);
  await store.close();
});
