// Same answers everywhere: the record functions and figures through the package in Node equal
// the native CLI's --json on the same store (exactly for ids, counts and text; within 1e-12
// relative for floats). The Chromium layer compares the same answers with Node's (store.test.mjs).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { openStore } from "somatize";
import { makeStores, cli } from "./store-fixture.mjs";
import { recordAnswers, healthAnswers, STRICT } from "./store-answers.mjs";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

let s;
before(() => {
  s = makeStores("same-answers");
});

/** Deep equality with floats compared within 1e-12 relative. */
function same(got, want, path = "answer") {
  if (typeof want === "number" && typeof got === "number" && !Number.isInteger(want)) {
    assert.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)), `${path}: ${got} vs ${want}`);
  } else if (want && typeof want === "object") {
    assert.equal(typeof got, "object", `${path} is an object`);
    assert.deepEqual(Object.keys(got ?? {}).sort(), Object.keys(want).sort(), `${path} keys`);
    for (const k of Object.keys(want)) same(got[k], want[k], `${path}.${k}`);
  } else {
    assert.deepEqual(got, want, path);
  }
}

const json = (...args) => JSON.parse(execFileSync(cli, [...args, "--json"], { encoding: "utf8" }));

test("Node gives the CLI's answers for every record function and figure", async () => {
  const store = await openStore(s.store);
  const got = await recordAnswers(store, "mlp");
  const run = ["--run", "mlp"];
  same(got.runs.rows, json("runs", s.store), "runs");
  same(got.forwards.rows, json("forwards", s.store, ...run), "forwards");
  same(got.curve.rows, json("curve", s.store, ...run), "curve");
  same(got.facts, json("facts", s.store, ...run, "--forward", "4"), "facts");
  same(got.nodes.rows, json("nodes", s.store, ...run, "--last", "5"), "nodes");
  same(got.fleet.rows, json("fleet", s.store, ...run), "fleet");
  same(got.standing, json("standing", s.store), "standing");
  assert.equal(got.curveCosts, "scan");
  assert.equal(got.noFacts, null);
  for (const [kind, extra] of [["progress", ["--smooth", "3"]], ["spent", []], ["gantt", ["--forward", "4"]], ["machines", []]]) {
    const want = JSON.parse(execFileSync(cli, ["figure", kind, s.store, ...run, ...extra], { encoding: "utf8" }));
    const { skipped, ...figure } = got[kind];
    assert.deepEqual(skipped, [], `${kind} skipped nothing`);
    same(figure, want, kind);
  }
  assert.ok(got.forwards.rows.length > 0 && got.curve.rows.length > 0);
  await store.close();
});

test("Node gives the CLI's verdicts, seen numbers and health figures", async () => {
  const store = await openStore(s.store);
  const got = await healthAnswers(store, "mlp");
  const strict = join(s.dir, "strict.json");
  writeFileSync(strict, JSON.stringify(STRICT));
  const run = ["--run", "mlp"];
  same(got.seen, json("seen", s.store, ...run), "seen");
  same(got.diagnose, json("diagnose", s.store, ...run, "--with-bounds"), "diagnose");
  same(got.strict, json("diagnose", s.store, ...run, "--with-bounds", "--thresholds", strict), "diagnose at STRICT");
  same(got.lastTwo, json("diagnose", s.store, ...run, "--with-bounds", "--last", "2", "--thresholds", strict), "last 2");
  assert.ok(Object.keys(got.strict.diagnosis).length > 0, "STRICT raises flags");
  assert.deepEqual(got.diagnose.diagnosis, {}, "the defaults raise none on this healthy run");
  assert.equal(got.strict.thresholds.stalled_update_ratio, 0.5, "the thresholds it was taken at");
  for (const kind of ["profile", "flags", "overlaid"]) {
    const want = JSON.parse(execFileSync(cli, ["figure", kind, s.store, ...run, "--thresholds", strict], { encoding: "utf8" }));
    const { skipped, ...figure } = got[kind];
    assert.deepEqual(skipped, []);
    same(figure, want, kind);
  }
  assert.ok(got.alerts.length > 0 && got.alerts.every((a) => a.flag === "STALLED" && a.advice));
  // judge: the six answers of a threshold edit in one call, each the same as its own call (so
  // the CLI's), keys in the same order.
  const six = { diagnose: got.strict, alerts: got.alerts, where: got.where, profile: got.profile, flags: got.flags, overlaid: got.overlaid };
  assert.equal(JSON.stringify(got.judge), JSON.stringify(six), "judge = the six calls");
  assert.deepEqual(got.judge, six);
  assert.deepEqual(got.judgeLastTwo.diagnose, got.lastTwo, "judge over the last 2");
  assert.deepEqual(got.judgeLastTwo.profile, got.profileLastTwo, "judge's profile of `of`");
  const prof = JSON.parse(execFileSync(cli, ["figure", "profile", s.store, ...run, "--thresholds", strict, "--last", "2", "--of", "update_ratio"], { encoding: "utf8" }));
  const { skipped: _, ...profile } = got.judgeLastTwo.profile;
  same(profile, prof, "judge's profile = the CLI's");
  await assert.rejects(store.judge({ run: "mlp", thresholds: { no_such_bound: 1 } }), /no_such_bound/);
  await assert.rejects(store.judge({ run: "mlp", colour: 1 }), /colour/);
  assert.deepEqual(Object.keys(got.where).sort(), Object.keys(got.strict.diagnosis).sort());
  assert.ok(got.history.length === 12 && got.history.every(([f, v]) => Number.isInteger(f) && v > 0));
  await assert.rejects(store.diagnose({ run: "mlp", thresholds: { no_such_bound: 1 } }), /no_such_bound/);
  await store.close();
});

test("a record function given a bad option rejects with the core's message", async () => {
  const store = await openStore(s.store);
  await assert.rejects(store.forwards({ run: "mlp", colour: 1 }), /colour/);
  await assert.rejects(store.forwards({}), /forwards needs \{run\}/);
  await assert.rejects(store.figure({ kind: "pie", run: "mlp" }), /no figure "pie"/);
  await assert.rejects(store.forwards({ run: "nope" }), /nope/);
  assert.equal((await store.runs()).rows.length, 2, "the store still answers");
  await store.close();
});
