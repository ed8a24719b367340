// Observables through the built package in Node: golden spec ids, generate, observeTensors and
// the temporal functions, with the native answers.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import * as s from "somatize";

const golden = JSON.parse(fs.readFileSync(new URL("../golden/spec_ids.json", import.meta.url)));

test('golden spec ids match the native ones', () => {
  for (const g of golden) {
    assert.equal(s.specId(g.spec), g.id, JSON.stringify(g.spec));
    assert.equal(s.specCanonical(g.spec), g.canonical);
  }
});

test('generate covers params, grads and loss when asked and names unknown ops', () => {
  const keys = ['param.fc1.weight', 'grad.fc1.weight', 'loss', 'other.x'];
  const got = s.generate(keys, ['l2', 'mean'], [], { kinds: ['param', 'grad', 'act', 'loss'] });
  assert.equal(got.length, 6);
  assert.equal(s.generate(keys, ['l2', 'mean']).length, 2, 'parameters only by default');
  assert.equal(got[0].id, 'c20fbee7e79167b0');
  assert.throws(() => s.generate(['param.a'], ['l3'], []), /"l3"/);
});

test('observeTensors gives the native values and names shape errors', () => {
  const specs = [
    { source: 'param', selector: 'fc1.weight', reduction: 'l2' },
    { source: 'param', selector: 'fc1.weight', reduction: 'stable_rank' },
    { source: 'param', selector: 'fc1.bias', reduction: 'stable_rank' },
  ];
  const out = s.observeTensors([
    { key: 'param.fc1.weight', shape: [2, 3], values: new Float32Array([3, -4, 0, 12, 1, -1]) },
    { key: 'param.fc1.bias', shape: [2], values: [1, 2] },
  ], specs, 5);
  assert.equal(out.values[s.specId(specs[0])], Math.sqrt(171));
  // numpy: s = svd([[3, -4, 0], [12, 1, -1]]); (s**2).sum() / s[0]**2
  assert.ok(Math.abs(out.values[s.specId(specs[1])] - 1.1108109905624617) < 1e-12);
  assert.match(out.failed[0], /param\.fc1\.bias.*\[2\]/);
});

test('temporal functions', () => {
  assert.deepEqual(Array.from(s.delta(new Float64Array([1, 3, 6]))), [NaN, 2, 3]);
  assert.deepEqual(Array.from(s.ema(new Float64Array([2.5, 2.1]), 0.3)), [2.5, 2.38]);
  assert.deepEqual(Array.from(s.slope(new Float64Array([1, 2, 4]), 2)), [NaN, 1, 2]);
  assert.throws(() => s.rollingStd(new Float64Array([1]), 0), /window/);
});
