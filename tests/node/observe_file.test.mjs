// Node layer: observables over real tensor-file bytes give numpy's statistics
// (../shared/fixtures/expected.json, numpy 2.4 float64) through the built package.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { observeFile, specId } from "somatize";

const fixtures = new URL("../../../shared/fixtures/", import.meta.url);
const expected = JSON.parse(readFileSync(new URL("expected.json", fixtures)));
const STATS = ["l2", "l1", "mean", "std", "min", "max", "absmax", "zero_fraction", "count", "nonfinite", "nan"];

function splitKey(key) {
  const dot = key.indexOf(".");
  return dot < 0 ? [key, key] : [key.slice(0, dot), key.slice(dot + 1)];
}

for (const file of ["step_deflated.npz", "state_dict.pt", "model.safetensors", "legacy_format.pt"]) {
  test(`observeFile over ${file} agrees with numpy`, () => {
    const specs = [];
    for (const key of Object.keys(expected[file])) {
      const [source, selector] = splitKey(key);
      for (const reduction of STATS) specs.push({ source, selector, reduction, key, stat: reduction });
    }
    const plain = specs.map(({ source, selector, reduction }) => ({ source, selector, reduction }));
    const got = observeFile(readFileSync(new URL(file, fixtures)), file, plain, 3);
    assert.equal(got.step, 3);
    assert.deepEqual(got.failed, []);
    for (const s of specs) {
      const want = expected[file][s.key][s.stat];
      const value = got.values[specId({ source: s.source, selector: s.selector, reduction: s.reduction })];
      assert.ok(Math.abs(value - want) <= 1e-6 * Math.max(Math.abs(want), 1e-12) || value === want,
        `${file} ${s.key} ${s.stat}: got ${value}, want ${want}`);
    }
  });
}

test("observeFile refuses a hostile file with an Error naming it", () => {
  assert.throws(
    () => observeFile(readFileSync(new URL("bad_evil.pt", fixtures)), "bad_evil.pt", []),
    (e) => e instanceof Error && /bad_evil\.pt/.test(e.message) && /posix|system/.test(e.message),
  );
});
