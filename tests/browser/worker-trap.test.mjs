// Browser layer: a real trap of the worker's wasm (its allocator aborting, an `unreachable`)
// costs only the call that caused it: that call rejects with the trap's message, the worker is
// replaced, stores open before it (a served folder, a snapshot File) answer as before, calls
// waiting meanwhile are answered, and later calls work.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openStore } from "somatize";
import { serve, launch, openPage } from "./harness.mjs";
import { makeStores, answers } from "../node/store-fixture.mjs";

let server, origin, browser, s, want;

before(async () => {
  s = makeStores("trap");
  want = await answers(await openStore(s.store));
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test("a trap rejects its call with the message; stores reopen and later calls work", async () => {
  const { page, seen } = await openPage(browser, `${origin}/tests/browser/store.html`);
  await page.waitForSelector("body[data-ready=true]");
  await page.setInputFiles("#snapshot", s.snapshot);
  const got = await page.evaluate(async (url) => {
    const outcome = (p) => p.then((v) => ({ ok: v }), (e) => ({ error: e instanceof Error, name: e.name, message: e.message }));
    const served = await somatize.openStore(url);
    const snap = await somatize.openStore(document.querySelector("#snapshot").files[0]);
    const before = await answers(served);
    // A store call and a tensor file asked right after the call that traps: waiting behind it.
    const trapped = outcome(somatize.__testOnly.trapWorker());
    const waiting = [served.listRuns(), somatize.background.tensorStats(new Uint8Array([1, 2, 3]), "x.npy")];
    const trap = await trapped;
    const [runs, badTensor] = await Promise.all(waiting.map(outcome));
    const out = {
      before,
      trap,
      runs,
      badTensor,
      afterServed: await answers(served),
      afterSnapshot: await answers(snap),
      opensAgain: await outcome(somatize.openStore(url).then((st) => st.listRuns())),
      // A second trap: the store is read by a third worker, its read counts starting afresh.
      readsBefore: (await served.stats()).reads,
      trapAgain: await outcome(somatize.__testOnly.trapWorker()),
      stillAnswers: await outcome(served.listRuns()),
      readsAfter: (await served.stats()).reads,
    };
    await served.close();
    out.closed = await outcome(served.listRuns());
    return out;
  }, s.url("store/"));
  assert.deepEqual(got.before, want);
  assert.equal(got.trap.error, true, JSON.stringify(got.trap));
  assert.equal(got.trap.name, "RuntimeError");
  assert.match(got.trap.message, /unreachable.*the somatize core trapped in __testTrapForReal; its worker is restarted/);
  assert.deepEqual(got.runs.ok, want.runs, "a store call waiting during the trap is answered by the new worker");
  assert.match(got.badTensor.message ?? "", /x\.npy/, "a function call waiting during the trap gets its own answer");
  assert.deepEqual(got.afterServed, want, "the served store, reopened");
  assert.deepEqual(got.afterSnapshot, want, "the snapshot File, reopened");
  assert.deepEqual(got.opensAgain, { ok: ["mlp", "small"] });
  assert.match(got.trapAgain.message ?? "", /unreachable/);
  assert.ok(got.readsAfter > 0 && got.readsAfter < got.readsBefore,
    `reopened in a new worker: ${got.readsAfter} reads since, ${got.readsBefore} before`);
  assert.deepEqual(got.stillAnswers, { ok: ["mlp", "small"] });
  assert.match(got.closed.message ?? "", /the store is closed/);
  // The trap is an answer, not an uncaught error of the page.
  assert.deepEqual(seen.errors, []);
  await page.close();
});
