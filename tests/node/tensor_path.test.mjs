// Node layer: tensorStats over a file's path (read straight into wasm memory, a chunk at a
// time, CRC-32 by Node's zlib) gives exactly what it gives over the file's bytes, and
// numpy's statistics (../shared/fixtures/expected.json) within 1e-6; bad files are refused alike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tensorStats } from "somatize";
import { fixtures } from "./store-fixture.mjs";
import { expected, assertMatchesNumpy } from "./numpy-expected.mjs";

test("tensorStats(path) equals tensorStats(bytes) exactly and numpy within 1e-6", () => {
  assert.ok(Object.keys(expected).length > 10);
  for (const file of Object.keys(expected)) {
    const path = join(fixtures, file);
    const got = tensorStats(path, file);
    assert.deepEqual(got, tensorStats(readFileSync(path), file), `${file}: path and bytes differ`);
    assert.deepEqual(tensorStats(path), tensorStats(readFileSync(path), path), `${file}: default name`);
    assertMatchesNumpy(file, got);
  }
});

test("bad files are refused by path with the same message as by bytes", () => {
  const bad = readdirSync(fixtures).filter((f) => f.startsWith("bad_"));
  assert.ok(bad.includes("bad_crc.npz") && bad.length >= 6);
  for (const file of bad) {
    const path = join(fixtures, file);
    let byBytes;
    assert.throws(() => tensorStats(readFileSync(path), file), (e) => ((byBytes = e.message), true));
    assert.throws(() => tensorStats(path, file), (e) => e.message === byBytes, `${file}: ${byBytes}`);
  }
  assert.throws(() => tensorStats(join(fixtures, "bad_crc.npz"), "bad_crc.npz"), /bad_crc\.npz.*CRC|crc/i);
  assert.throws(() => tensorStats(join(fixtures, "no_such_file.npz")), /ENOENT/);
});
