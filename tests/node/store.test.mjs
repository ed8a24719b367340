// Node layer: stores written by the native CLI, opened through the package (folder, snapshot
// file, snapshot bytes, a source object), compared with an independent read of the files and
// with the CLI's `stats --json`; errors, laziness, the README's Node example, and tensorStats.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, background, folderSource } from "somatize";
import { makeStores, indexRows, blobOf, answers, root, cli, fixtures } from "./store-fixture.mjs";
import { expected, assertMatchesNumpy } from "./numpy-expected.mjs";

let s;
before(() => {
  s = makeStores("node");
});

/** Assert two statistics objects agree: exactly for counts and shapes, within 1e-12 relative for floats. */
function closeStats(got, want, what) {
  for (const [k, w] of Object.entries(want)) {
    const g = got[k];
    if (typeof w === "number" && !Number.isInteger(w)) {
      assert.ok(Math.abs(g - w) <= 1e-12 * Math.max(1, Math.abs(w)), `${what}.${k}: got ${g}, wanted ${w}`);
    } else {
      assert.deepEqual(g, w, `${what}.${k}`);
    }
  }
}

test("a folder reads as its files say: runs, writers, merged index rows", async () => {
  const store = await openStore(s.store);
  assert.deepEqual(await store.format(), { format: "somatize-store", version: "2.1" });
  assert.deepEqual(await store.listRuns(), ["mlp", "small"]);
  assert.deepEqual(await store.writers({ run: "mlp" }), ["w0", "w1"]);
  for (const run of ["mlp", "small"]) {
    const { rows, bad } = await store.scan({ run });
    assert.deepEqual(bad, []);
    assert.deepEqual(rows, indexRows(s.store, run), `rows of ${run}`);
  }
  const { rows } = await store.scan({ run: "mlp" });
  assert.equal(rows.length, 12 + 8);
  const last = await store.scan({ run: "mlp", last: 3 });
  assert.deepEqual(last.rows, rows.slice(-3), "last 3 are the scan's last 3");
  const window = await store.scan({ run: "mlp", from: 2, to: 3 });
  assert.deepEqual(window.rows.map((r) => [r.forward, r.writer]), [[2, "w0"], [2, "w1"], [3, "w0"], [3, "w1"]]);
  await store.close();
});

test("a fetched forward holds what the blob holds; its stats equal the CLI's stats --json", async () => {
  const store = await openStore(s.store);
  const f = await store.fetch({ run: "mlp", forward: 4, writer: "w1" });
  assert.deepEqual(f.row, indexRows(s.store, "mlp").find((r) => r.forward === 4 && r.writer === "w1"));
  assert.equal(f.meta.forward, 4);
  assert.equal(f.meta.writer, "w1");
  // The blob on its own (its range of the pack), for the CLI and Python's zipfile.
  const at = blobOf(s.store, "mlp", "w1", 4);
  const blob = join(s.dir, "w1-forward-4.npz");
  writeFileSync(blob, readFileSync(at.path).subarray(at.offset, at.offset + at.len));
  const cliStats = JSON.parse(execFileSync(cli, ["stats", "--json", blob], { encoding: "utf8" }));
  assert.deepEqual([...f.tensors].sort(), Object.keys(cliStats).sort(), "tensor keys");
  for (const [key, want] of Object.entries(cliStats)) {
    const { shape, dtype, ...numbers } = want;
    closeStats(f.stats[key], numbers, key);
  }
  // facts.json read by Python's zipfile, an independent reader.
  const facts = JSON.parse(execFileSync("python3", ["-c",
    "import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read('facts.json').decode())", blob],
  { encoding: "utf8" }));
  assert.deepEqual(f.facts, facts);
  await store.close();
});

test("a snapshot (path, bytes, range source) answers exactly as the folder", async () => {
  const folder = await answers(await openStore(s.store));
  const fromPath = await openStore(s.snapshot);
  assert.deepEqual(await answers(fromPath), folder, "snapshot path");
  const bytes = readFileSync(s.snapshot);
  assert.deepEqual(await answers(await openStore(new Uint8Array(bytes))), folder, "snapshot bytes");
  const source = {
    size: bytes.length,
    readAt: (offset, len) => bytes.subarray(offset, offset + len),
  };
  assert.deepEqual(await answers(await openStore(source)), folder, "range source");
});

test("a source object without list reads through the store's listing", async () => {
  const src = folderSource(s.store);
  delete src.list;
  const store = await openStore(src);
  assert.deepEqual(await answers(store), await answers(await openStore(s.store)));
});

test("reads are lazy: a snapshot's runs and last rows read a small part of it", async () => {
  const size = statSync(s.snapshot).size;
  const store = await openStore(s.snapshot);
  await store.listRuns();
  await store.scan({ run: "mlp", last: 2 });
  const { bytes } = await store.stats();
  assert.ok(bytes > 0 && bytes < size / 10, `read ${bytes} of ${size} bytes`);
  await store.fetch({ run: "mlp", forward: 1 });
  const after = (await store.stats()).bytes;
  assert.ok(after < size / 5, `read ${after} of ${size} bytes after one fetch`);
  await store.close();
});

test("bad stores and bad calls reject with Errors carrying the core's message", async () => {
  const rejects = (p, re) => assert.rejects(p, (e) => e instanceof Error && re.test(e.message), String(re));
  await rejects(openStore(s.newer), /format version 3\.0, newer than this reader knows \(major 2\); upgrade somatize/);
  await rejects(openStore(s.empty), /not a somatize store/);
  await rejects(openStore(join(s.dir, "nothing-here")), /ENOENT|no such file/);
  await rejects(openStore("ftp://example.com/store/"), /openStore takes file:, http: and https: URLs/);
  await rejects(openStore({ read() {} }), /needs a readRange method/);
  await rejects(openStore(42), /openStore takes/);
  const corrupt = await openStore(s.corrupt);
  await rejects(corrupt.fetch({ run: "mlp", forward: 5, writer: "w0" }), /run "mlp", forward 5: blob .* has crc32 [0-9a-f]+, the index says [0-9a-f]+: it is corrupt/);
  await rejects(corrupt.fetch({ run: "mlp", forward: 99 }), /run "mlp" has no forward 99/);
  await rejects(corrupt.scan({ run: "mlp", lsat: 3 }), /unknown field `lsat`/);
  await rejects(corrupt.writers({ run: "../etc" }), /run name "\.\.\/etc" refused/);
  await rejects(corrupt.call("noSuchThing"), /no store function "noSuchThing"/);
  // The same store still answers after all that.
  assert.deepEqual(await corrupt.listRuns(), ["mlp", "small"]);
  const good = await corrupt.fetch({ run: "mlp", forward: 5, writer: "w1" });
  assert.equal(good.meta.forward, 5);
  await corrupt.close();
  await rejects(corrupt.listRuns(), /the store is closed/);
  // A source whose reads throw: its message comes through.
  const failing = {
    list: () => ["runs"],
    read: () => { throw new Error("disk on fire"); },
    readRange: () => null,
    size: () => null,
  };
  await rejects(openStore(failing, { name: "hot" }), /hot: somatize-store\.json: could not read: disk on fire/);
});

test("the README's Node example runs against a CLI-written store", () => {
  const readme = readFileSync(join(root, "pkg/README.md"), "utf8");
  const code = /<!-- example: node -->\s*```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "the README has a Node example");
  const file = join(root, "tests/node/readme-example.tmp.mjs");
  writeFileSync(file, code);
  try {
    const r = spawnSync(process.execPath, [file, s.store], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const losses = indexRows(s.store, "mlp").slice(-3).map((x) => `${x.forward}:${x.fields["loss.value"].toFixed(4)}`);
    assert.match(r.stdout, new RegExp(`^mlp: last losses ${losses.join(" ")}$`, "m"));
    // loss, act.* (3), param.* (4), grad.* (4) and the optimiser step's update.* (4)
    assert.match(r.stdout, /^forward 0 kept 15 tensors; facts: /m);
  } finally {
    rmSync(file, { force: true });
  }
});

test("background.tensorStats agrees with numpy's expected.json within 1e-6", async () => {
  assert.ok(Object.keys(expected).length > 10);
  for (const file of Object.keys(expected)) {
    assertMatchesNumpy(file, await background.tensorStats(readFileSync(join(fixtures, file)), file));
  }
  await assert.rejects(background.tensorStats(readFileSync(join(fixtures, "bad_crc.npz")), "bad_crc.npz"), Error);
});

test("over HTTP (plain files with the listing, a snapshot by Range requests) Node answers as from disk", async () => {
  const { spawn } = await import("node:child_process");
  const { once } = await import("node:events");
  // The server runs in its own process: a synchronous read blocks this thread.
  const server = spawn(process.execPath, [join(root, "tests/browser/serve.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const origin = String((await once(server.stdout, "data"))[0]).trim();
    const folder = await answers(await openStore(s.store));
    const files = await openStore(`${origin}${s.url("store/")}`);
    assert.deepEqual(await answers(files), folder, "plain files over HTTP");
    await files.close();
    const snap = await openStore(`${origin}${s.url("snap.zip")}`);
    assert.deepEqual(await answers(snap), folder, "snapshot over HTTP");
    const { bytes } = await snap.stats();
    assert.ok(bytes < statSync(s.snapshot).size / 4, `read ${bytes} bytes of the snapshot`);
    await snap.close();
    await assert.rejects(openStore(`${origin}${s.url("newer/")}`), /newer than this reader knows/);
    await assert.rejects(openStore(`${origin}/no/such/store/`), /not a somatize store/);
  } finally {
    server.kill();
  }
});
