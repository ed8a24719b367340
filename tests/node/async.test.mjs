// Node layer: store work runs off the calling thread (pkg/store-worker-node.js). A timer keeps
// ticking while a call scans a large index, its long answer taken in parts; a store served by an http.createServer in this
// same process opens and answers as from disk (a synchronous read here would deadlock it); a
// trap of the worker's wasm costs only its call.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { cpSync, createReadStream, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, normalize } from "node:path";
import { openStore, folderSource, forwards, curve, __testOnly } from "somatize";
import { makeStores, answers } from "./store-fixture.mjs";

let s, big;

before(() => {
  s = makeStores("async");
  // A large run: the recorded run's index lines repeated to 300,000 forwards (one blob, read by
  // no call here; `forwards` is one scan of the index).
  big = join(s.dir, "big");
  rmSync(big, { recursive: true, force: true });
  cpSync(s.store, big, { recursive: true });
  const dir = join(big, "runs", "mlp", "w0");
  const lines = readFileSync(join(dir, "index.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const out = [];
  for (let f = 0; f < 300_000; f++) {
    const row = lines[f % lines.length];
    out.push(JSON.stringify({ ...row, forward: f, written_us: row.written_us + f, fields: { "loss.value": 1 / (f + 1) } }));
  }
  writeFileSync(join(dir, "index.jsonl"), `${out.join("\n")}\n`);
  rmSync(join(big, "runs", "mlp", "w1"), { recursive: true, force: true });
  writeFileSync(join(big, "listing.jsonl"), '{"run":"mlp","writer":"w0"}\n{"run":"small","writer":"w0"}\n');
});

/** Ticks of a 5 ms interval while `call()` runs, the longest time between two (this thread
 * blocked), the call's answer and how long it took. */
async function ticksDuring(call) {
  let ticks = 0;
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks += 1;
  }, 5);
  const began = performance.now();
  try {
    const answer = await call();
    const now = performance.now();
    return { ticks, answer, ms: now - began, longest: Math.max(longest, now - last) };
  } finally {
    clearInterval(timer);
  }
}

test("a timer keeps ticking while a store scans 300,000 forwards (the same rows as on this thread)", async () => {
  const store = await openStore(big);
  const off = await ticksDuring(() => forwards(store, { run: "mlp" }));
  assert.equal(off.answer.length, 300_000);
  assert.ok(off.ms > 50, `the call took ${off.ms} ms: too short to tell`);
  // Most 5 ms ticks come while the worker scans (a busy machine delays some), and this thread
  // is never blocked for long: the 300,000 rows arrive in parts, taken in between turns.
  const said = `${off.ticks} ticks in ${off.ms.toFixed(0)} ms, longest gap ${off.longest.toFixed(0)} ms`;
  assert.ok(off.ticks >= Math.floor(off.ms / 5 / 4), said);
  assert.ok(off.longest < off.ms / 3, said);
  // The same call over a source object runs on this thread: no tick can come, and the same rows.
  const here = await openStore(folderSource(big));
  const on = await ticksDuring(() => forwards(here, { run: "mlp" }));
  assert.equal(on.ticks, 0, "a call on this thread blocks its timers");
  assert.deepEqual(off.answer, on.answer);
  assert.deepEqual(off.answer.skipped, on.answer.skipped);
  // A long list of pairs (crossing as one Float64Array) and a long list of rows (in parts).
  assert.deepEqual(await curve(store, { run: "mlp" }), await curve(here, { run: "mlp" }));
  assert.deepEqual(await store.scan({ run: "mlp" }), await here.scan({ run: "mlp" }));
  await store.close();
  await here.close();
});

/** A static file server with Range requests over `dir`, in this process. */
function serveHere(dir) {
  const server = createServer((req, res) => {
    const path = normalize(join(dir, decodeURIComponent(new URL(req.url, "http://x").pathname)));
    let size;
    try {
      if (!path.startsWith(dir) || !statSync(path).isFile()) throw new Error("no");
      size = statSync(path).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    const [start, end] = range ? [Number(range[1]), Math.min(Number(range[2]), size - 1)] : [0, size - 1];
    if (range && start >= size) {
      res.writeHead(416, { "content-range": `bytes */${size}` }).end();
      return;
    }
    const headers = { "content-length": String(end - start + 1), "accept-ranges": "bytes" };
    if (range) headers["content-range"] = `bytes ${start}-${end}/${size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === "HEAD" || end < start) res.end();
    else createReadStream(path, { start, end }).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

test("a store served by an http.createServer in this same process opens and answers as from disk", async () => {
  const server = await serveHere(s.dir);
  const origin = `http://127.0.0.1:${server.address().port}`;
  try {
    const folder = await answers(await openStore(s.store));
    const files = await openStore(`${origin}/store/`);
    assert.deepEqual(await answers(files), folder, "plain files over HTTP");
    await files.close();
    const snap = await openStore(`${origin}/snap.zip`);
    assert.deepEqual(await answers(snap), folder, "a snapshot by Range requests");
    await snap.close();
    await assert.rejects(openStore(`${origin}/newer/`), { code: "NEWER_FORMAT" });
  } finally {
    server.close();
  }
});

test("a trap of the store worker's wasm rejects its call; the worker is replaced and open stores answer as before", async () => {
  const store = await openStore(s.store);
  const want = await answers(store);
  const trapped = __testOnly.trapWorker();
  const waiting = store.listRuns(); // asked behind the trap: answered by the new worker
  await assert.rejects(trapped, { name: "RuntimeError", message: /unreachable.*the somatize core trapped in __testTrapForReal; its worker is restarted/ });
  assert.deepEqual(await waiting, want.runs);
  assert.deepEqual(await answers(store), want, "the store reopened in the new worker");
  await store.close();
  await assert.rejects(store.listRuns(), /the store is closed/);
});
