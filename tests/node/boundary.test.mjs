// Node layer: the built package, imported by name, gives the native answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { specId, specCanonical, statsOf, version } from "somatize";

const golden = JSON.parse(readFileSync(new URL("../golden/spec_ids.json", import.meta.url)));
const cargo = readFileSync(new URL("../../Cargo.toml", import.meta.url), "utf8");

test("version is the crate's", () => {
  assert.equal(version(), cargo.match(/^version = "(.*)"$/m)[1]);
});

test("spec ids equal the native golden ids", () => {
  assert.ok(golden.length > 0);
  for (const { spec, id } of golden) assert.equal(specId(spec), id, JSON.stringify(spec));
});

test("the canonical form writes every default", () => {
  assert.equal(
    specCanonical({ reduction: " L2 ", selector: "fc1.weight", source: "param" }),
    '{"source":"param","selector":"fc1.weight","transforms":[],"reduction":"l2","temporal":null,"frequency":1,"budget_hint":null}',
  );
});

test("a bad spec throws a real Error with the core's message", () => {
  assert.throws(
    () => specId({ source: "param", selector: "w", reduction: "l2", frequency: 0 }),
    (e) => e instanceof Error && /frequency/.test(e.message),
  );
  assert.throws(() => specId({ source: "param" }), (e) => e instanceof Error && /^not a valid observable spec: missing field `selector`/.test(e.message));
});

test("stats of a Float32Array match numpy over the finite values", () => {
  // numpy 2.4 over [1, nan, -inf, 2, 0, inf] (../shared/fixtures/with_nan_inf.npy, expected.json).
  const s = statsOf(new Float32Array([1, NaN, -Infinity, 2, 0, Infinity]));
  assert.deepEqual([s.count, s.nonfinite, s.nan], [6, 3, 1]);
  assert.equal(s.mean, 1);
  assert.ok(Math.abs(s.std - 0.816496580927726) < 1e-12, `std ${s.std}`);
  assert.throws(() => statsOf([1, 2, 3]), /Float32Array/);
});
