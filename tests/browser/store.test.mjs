// Browser layer: CLI-written stores opened in headless Chromium through the package's worker —
// served as plain files (listing.jsonl), as a snapshot URL (Range requests), as dropped files,
// as a snapshot File, as a directory handle (OPFS) — answering exactly as Node does; bad
// stores give Errors with the core's message while the worker keeps answering; tensorStats
// in the worker on the fixtures; the README's browser example.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { filesUnder, serve, launch, openPage, installOpfs } from "./harness.mjs";
import { makeStores, answers, indexRows, fixtures, root } from "../node/store-fixture.mjs";
import { recordAnswers, healthAnswers } from "../node/store-answers.mjs";
import { expected, assertMatchesNumpy } from "../node/numpy-expected.mjs";

let server, origin, served, browser, s, want;

before(async () => {
  s = makeStores("browser");
  want = await answers(await openStore(s.store));
  ({ server, origin, served } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

async function testPage() {
  const opened = await openPage(browser, `${origin}/tests/browser/store.html`);
  await opened.page.waitForSelector("body[data-ready=true]");
  return opened;
}

/** The answers of the store opened in the page from `source` (a URL, or an input's id as "#id"). */
function answersIn(page, source) {
  return page.evaluate(async (source) => {
    const input = source.startsWith("#") ? document.querySelector(source) : null;
    const from = input ? (input.multiple || input.webkitdirectory ? input.files : input.files[0]) : source;
    const store = await somatize.openStore(from);
    const out = await answers(store);
    out.stats = await store.stats();
    await store.close();
    return out;
  }, source);
}

test("every record and health function and figure answers in Chromium exactly as in Node", async () => {
  const node = await recordAnswers(await openStore(s.store), "mlp");
  const { page, seen } = await testPage();
  const got = await page.evaluate(async (url) => {
    const store = await somatize.openStore(url);
    const out = { record: await recordAnswers(store, "mlp"), health: await healthAnswers(store, "mlp") };
    await store.close();
    return out;
  }, s.url("store/"));
  const nodeStore = await openStore(s.store);
  assert.deepEqual(got, { record: node, health: await healthAnswers(nodeStore, "mlp") });
  assert.ok(node.forwards.rows.length > 0 && node.progress.data.length > 0);
  assert.ok(Object.keys(got.health.strict.diagnosis).length > 0);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a store served as plain files reads through its listing, as in Node", async () => {
  const { page, seen } = await testPage();
  const { stats, ...got } = await answersIn(page, s.url("store/"));
  assert.deepEqual(got, want);
  assert.ok(stats.reads > 0);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a snapshot URL reads by Range requests, a small part of it", async () => {
  const { page, seen } = await testPage();
  const path = s.url("snap.zip");
  served.delete(path);
  const { stats, ...got } = await answersIn(page, path);
  assert.deepEqual(got, want);
  const size = statSync(s.snapshot).size;
  const sent = served.get(path);
  assert.ok(sent > 0 && sent < size / 4, `served ${sent} of ${size} bytes`);
  assert.equal(stats.bytes, sent, "bytes the worker counted are the bytes the server sent");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a dropped folder (webkitdirectory input) and a snapshot File read as in Node", async () => {
  const { page, seen } = await testPage();
  await page.setInputFiles("#folder", s.store);
  // What goes to the worker: the folder's paths when it is opened, and only the Files it asks
  // for (a folder of thousands of files would cost seconds to post whole).
  await page.evaluate(() => {
    const post = Worker.prototype.postMessage;
    window.posted = { open: [], files: 0, total: document.querySelector("#folder").files.length };
    Worker.prototype.postMessage = function (m, ...rest) {
      if (m?.method === "open") window.posted.open.push(m.args[0]);
      if (m?.method === "files") window.posted.files += m.args[1].length;
      return post.call(this, m, ...rest);
    };
  });
  const { stats: _a, ...folder } = await answersIn(page, "#folder");
  assert.deepEqual(folder, want, "folder");
  const posted = await page.evaluate(() => {
    const open = window.posted.open.at(-1);
    return { ...window.posted, open: { paths: open?.paths?.length, files: Object.values(open ?? {}).flat().filter((v) => v instanceof Blob).length } };
  });
  assert.deepEqual(posted.open, { paths: posted.total, files: 0 }, "the folder is opened by its paths, no File posted");
  assert.ok(posted.files > 0 && posted.files <= posted.total, `${posted.files} Files sent as asked, of ${posted.total}`);
  await page.setInputFiles("#snapshot", s.snapshot);
  const { stats, ...snap } = await answersIn(page, "#snapshot");
  assert.deepEqual(snap, want, "snapshot File");
  assert.ok(stats.bytes < statSync(s.snapshot).size / 4, `read ${stats.bytes} bytes of the snapshot`);
  // The same File dropped: a DataTransfer holding it.
  const dropped = await page.evaluate(async () => {
    const dt = new DataTransfer();
    dt.items.add(document.querySelector("#snapshot").files[0]);
    const store = await somatize.openStore(dt);
    return answers(store);
  });
  assert.deepEqual(dropped, want, "a DataTransfer holding the snapshot");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a directory handle is read lazily, and refresh() shows forwards written since", async () => {
  const { page, seen } = await testPage();
  const files = filesUnder(s.store).filter((f) => !f.endsWith("writer.lock"));
  await installOpfs(page);
  const got = await page.evaluate(async ({ base, files }) => {
    // Copy the served store into the origin-private file system: a real FileSystemDirectoryHandle.
    const rootDir = await globalThis.opfsStore(true);
    const put = globalThis.opfsPut;
    for (const f of files) await put(f, await (await fetch(base + f)).arrayBuffer(), false);
    const store = await somatize.openStore(rootDir);
    const out = await answers(store);
    // A writer appends a forward: after refresh() the scan shows it.
    const rows = (await store.scan({ run: "small" })).rows;
    const last = rows.at(-1);
    const line = JSON.stringify({ forward: last.forward + 1, written_us: last.written_us + 1, took_us: 1, broke: true, error: "killed" });
    const w0 = (await store.writers({ run: "small" }))[0];
    await put(`runs/small/${w0}/index.jsonl`, new TextEncoder().encode(line + "\n"), true);
    const before = (await store.scan({ run: "small" })).rows.length;
    await store.refresh();
    const after = (await store.scan({ run: "small" })).rows;
    await store.close();
    return { out, before, after: after.length, lastError: after.at(-1).error };
  }, { base: `${origin}${s.url("store/")}`, files });
  assert.deepEqual(got.out, want);
  const n = want.scans.small.rows.length;
  assert.deepEqual([got.before, got.after, got.lastError], [n, n + 1, "killed"]);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("bad stores give Errors with the core's message, and the worker keeps answering", async () => {
  const { page, seen } = await testPage();
  const results = await page.evaluate(async (urls) => {
    const outcome = (p) => p.then((v) => ({ ok: v }), (e) => ({ error: e instanceof Error, message: e.message }));
    const out = {};
    out.newer = await outcome(somatize.openStore(urls.newer));
    out.noListing = await outcome(somatize.openStore(urls.noListing));
    out.missing = await outcome(somatize.openStore(urls.missing));
    out.nonsense = await outcome(somatize.openStore(42));
    const corrupt = await somatize.openStore(urls.corrupt);
    out.corrupt = await outcome(corrupt.fetch({ run: "mlp", forward: 5, writer: "w0" }));
    out.badOption = await outcome(corrupt.scan({ run: "mlp", lsat: 1 }));
    out.badTensor = await outcome(somatize.background.tensorStats(new Uint8Array([1, 2, 3]), "x.npy"));
    out.stillRuns = await outcome(corrupt.listRuns());
    out.stillFetches = await outcome(corrupt.fetch({ run: "mlp", forward: 5, writer: "w1" }).then((f) => f.meta.forward));
    return out;
  }, {
    newer: s.url("newer/"),
    noListing: s.url("corrupt/runs/"),
    missing: s.url("nothing-here.zip"),
    corrupt: s.url("corrupt/"),
  });
  const is = (r, re) => assert.ok(r.error === true && re.test(r.message), `${JSON.stringify(r)} vs ${re}`);
  is(results.newer, /format version 3\.0, newer than this reader knows \(major 2\); upgrade somatize/);
  is(results.noListing, /somatize-store\.json: not a somatize store/);
  is(results.missing, /nothing-here\.zip: not found/);
  is(results.nonsense, /openStore takes/);
  is(results.corrupt, /run "mlp", forward 5: blob .* has crc32 [0-9a-f]+, the index says [0-9a-f]+: it is corrupt/);
  is(results.badOption, /unknown field `lsat`/);
  is(results.badTensor, /x\.npy/);
  assert.deepEqual(results.stillRuns, { ok: ["mlp", "small"] });
  assert.deepEqual(results.stillFetches, { ok: 5 });
  assert.deepEqual(seen.errors.filter((e) => !/404|Not Found/.test(e)), []);
  await page.close();
});

test("a store served without its listing (format 1.0) says what to do", async () => {
  const { page } = await testPage();
  rmSync(join(s.corrupt, "listing.jsonl"));
  const message = await page.evaluate(async (url) => {
    const store = await somatize.openStore(url);
    return store.listRuns().then(() => "no error", (e) => e.message);
  }, s.url("corrupt/"));
  assert.match(message, /listing\.jsonl.*open it as a folder or export a snapshot/);
  await page.close();
});

test("tensorStats in the worker agrees with numpy's expected.json within 1e-6", async () => {
  const { page } = await testPage();
  const names = Object.keys(expected);
  await page.setInputFiles("#tensors", names.map((n) => join(fixtures, n)));
  const got = await page.evaluate(async () => {
    const out = {};
    for (const f of document.querySelector("#tensors").files) out[f.name] = await somatize.background.tensorStats(f, f.name);
    return out;
  });
  assert.deepEqual(Object.keys(got).sort(), names.sort());
  for (const file of Object.keys(expected)) assertMatchesNumpy(file, got[file]);
  await page.close();
});

test("the README's browser example shows the runs of a served store", async () => {
  const readme = readFileSync(join(root, "pkg/README.md"), "utf8");
  const html = /<!-- example: browser -->\s*```html\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(html, "the README has a browser example");
  const name = "readme-example.tmp.html";
  writeFileSync(join(root, name), html);
  try {
    const { page, seen } = await openPage(browser, `${origin}/${name}?store=${encodeURIComponent(s.url("store/"))}`);
    await page.waitForFunction(() => document.querySelector("#out").textContent !== "opening…");
    const lines = ["mlp", "small"].map((run) => {
      const rows = indexRows(s.store, run);
      return `${run}: ${rows.length} forwards, last loss ${rows.at(-1).fields["loss.value"]}`;
    });
    assert.equal(await page.textContent("#out"), lines.join("\n"));
    assert.deepEqual(seen.errors, []);
    await page.close();
  } finally {
    rmSync(join(root, name), { force: true });
  }
});
