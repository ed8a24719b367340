// numpy's statistics of every good fixture (../shared/fixtures/expected.json, written by numpy
// 2.4 in float64) and the one comparison every layer makes with them: counts, shapes and dtypes
// exactly, floats within 1e-6 relative (absolute below 1).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fixtures } from "./store-fixture.mjs";

/** `{file: {key: {stat: value}}}` as numpy wrote it. */
export const expected = JSON.parse(readFileSync(join(fixtures, "expected.json"), "utf8"));

/** Assert that `got` (`{key: {stat: value}}`, what tensorStats answers for `file`) holds every
 * key and statistic numpy gives for that file. */
export function assertMatchesNumpy(file, got) {
  for (const [key, want] of Object.entries(expected[file])) {
    assert.ok(got?.[key], `${file}: key ${key} missing (got ${Object.keys(got ?? {})})`);
    for (const [m, w] of Object.entries(want)) {
      const g = got[key][m];
      if (typeof w === "number" && typeof g === "number") {
        assert.ok(Math.abs(g - w) <= 1e-6 * Math.max(1, Math.abs(w)), `${file} ${key}.${m}: got ${g}, wanted ${w}`);
      } else {
        assert.deepEqual(g, w, `${file} ${key}.${m}`);
      }
    }
  }
}
