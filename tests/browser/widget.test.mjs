// Browser layer, the notebook widget (somatize.show, somatize.Live) without Jupyter: the
// widget's module (python/somatize/_widget/widget.js) is loaded in Chromium and rendered with a
// stand-in of the anywidget model (get, on/off "msg:custom", send with buffers), whose messages
// reach the real kernel side of the widget (tests/browser/widget_kernel.py: the Python objects
// somatize.show and somatize.Live return, with their `send` carried over a pipe). The view reads
// the demo store only through those messages, and draws what the CLI answers.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { launch, root, serve, shots } from "./harness.mjs";
import { binary, checkViews, demoStore, json, tracesOf } from "./report-fixture.mjs";
import { rendered, writeHost } from "./widget-host.mjs";

let browser, server, store;

before(async () => {
  ({ store } = demoStore("widget"));
  writeHost();
  server = await serve();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.server.close();
});

/** Wait until the frame's verdict was judged (the store view's answer people read first). */
const judged = (frame) => frame.waitForFunction(() => Number(document.getElementById("verdict")?.dataset.judged ?? 0) >= 1, null, { timeout: 60000 });

test("show(store) draws the demo store's runs, verdict and figures as the CLI answers, reading through the kernel", async () => {
  const w = await rendered(browser, server, ["show", store]);
  try {
    assert.equal(await w.frame.textContent("#error"), "");
    await judged(w.frame);
    const opened = Date.now() - w.t0;
    const run = await w.frame.inputValue("#run");
    const runs = await w.frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
    assert.deepEqual(runs, json("runs", store, "--json").map((r) => r.run), "every run, as `somatize runs --json`");
    await checkViews(assert, w.frame, store, run, { everyRun: true });
    // Editing a threshold re-judges in the browser: nothing more is asked of the kernel.
    const asked = w.messages.toKernel;
    const before = Number(await w.frame.evaluate(() => document.getElementById("verdict").dataset.judged));
    const field = w.frame.locator("#thresholds input").first();
    await field.fill(String(Number(await field.inputValue()) * 2));
    await field.dispatchEvent("change");
    await w.frame.waitForFunction((n) => Number(document.getElementById("verdict").dataset.judged) > n, before);
    assert.equal(w.messages.toKernel, asked, "a threshold edit asks the kernel nothing");
    await w.page.screenshot({ path: join(shots, "widget-store.png"), fullPage: true });
    // The page's requests: the host page and the widget's module; the view itself asks no URL.
    assert.deepEqual(w.seen.requests.filter((u) => !u.startsWith(server.origin) && !/^(data|about|blob):/.test(u)), []);
    assert.deepEqual(w.seen.requests.filter((u) => u.startsWith(server.origin) && !/host\.html$|widget\.js$|favicon/.test(u)), []);
    assert.deepEqual(w.seen.errors, []);
    console.log(`# widget: demo verdict shown ${opened} ms after render (${w.messages.toKernel} asks, ${w.messages.fromKernel} answers, ${(w.messages.bytes / 1048576).toFixed(2)} MiB from the kernel)`);
  } finally {
    await w.close();
  }
});

test("show(store, run) opens that run, and a read the kernel refuses is said in the cell", async () => {
  const w = await rendered(browser, server, ["show", store, "vanishing"]);
  try {
    await judged(w.frame);
    assert.equal(await w.frame.inputValue("#run"), "vanishing");
    const d = await checkViews(assert, w.frame, store, "vanishing", { everyRun: true });
    assert.ok(Object.values(d.diagnosis).flat().some((f) => f.startsWith("VANISHING")));
  } finally {
    await w.close();
  }
  const bad = await rendered(browser, server, ["show", store, "nope"]);
  try {
    assert.equal(await bad.frame.evaluate(() => document.body.dataset.widget), "failed");
    await bad.page.waitForFunction(() => document.querySelector("#cell")?.dataset.somatize === "failed");
    assert.match(await bad.page.textContent(".somatize-widget-status"), /no run "nope"/);
  } finally {
    await bad.close();
  }
});

test("show(store, live=True) follows a run that grows while shown", async () => {
  const w = await rendered(browser, server, ["show", store, "--live"]);
  try {
    await judged(w.frame);
    assert.equal(await w.frame.isChecked("#live"), true);
    const run = await w.frame.inputValue("#run");
    await w.frame.locator("#fig-progress").scrollIntoViewIfNeeded();
    await w.frame.waitForSelector("#fig-progress[data-drawn=true]"); // drawn once on screen
    const before = tracesOf(await w.frame.evaluate(() => document.getElementById("fig-progress").data));
    execFileSync(binary(), ["record", "--store", store, "--run", run, "--writer", `widget-${process.pid}`, "--",
      "python3", join(root, "examples/train_numpy.py"), "--steps", "3"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    const want = tracesOf(json("figure", "progress", store, "--run", run).data);
    assert.notDeepEqual(want, before, "the new forwards change the progress figure");
    await w.frame.waitForFunction((want) => JSON.stringify(document.getElementById("fig-progress").data
      .map((t) => ({ type: t.type ?? null, x: t.x ?? null, y: t.y ?? null, cells: t.cells?.values ?? null }))) === want,
    JSON.stringify(want), { timeout: 20000 });
    const runs = await w.frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
    assert.deepEqual(runs, json("runs", store, "--json").map((r) => r.run));
    await w.page.screenshot({ path: join(shots, "widget-live.png") });
  } finally {
    await w.close();
  }
});

test("Live's widget draws the rows pushed to it as Live.figure() (the CLI's progress) draws them", async () => {
  const w = await rendered(browser, server, ["live", "Progress of run x", "3"]);
  try {
    const fact = (n) => [{ node: "fc", kind: "Linear", began_us: 0, took_us: 100 + n },
      { node: "loss", kind: "loss", value: 1 / (n + 1), ...(n === 7 ? { error: "boom" } : {}) }];
    for (let n = 0; n < 20; n++) w.send({ facts: fact(n) });
    w.send({ figure: true });
    await new Promise((ok) => setTimeout(ok, 500));
    const box = w.frame.locator("#fig-live");
    await w.frame.waitForFunction(() => document.getElementById("fig-live")?.dataset.forwards === "20", null, { timeout: 20000 });
    for (let i = 0; i < 50 && !w.figures.length; i++) await new Promise((ok) => setTimeout(ok, 100));
    const want = w.figures[0];
    assert.equal(want.data.length, 4, "loss, rolling mean, time, broke");
    const drawn = await w.frame.evaluate(() => document.getElementById("fig-live").data);
    assert.deepEqual(tracesOf(drawn), tracesOf(want.data));
    assert.equal(await w.frame.evaluate(() => document.getElementById("fig-live").layout.title.text), "Progress of run x");
    // 30 more, arriving while shown.
    for (let n = 20; n < 50; n++) w.send({ facts: fact(n) });
    await w.frame.waitForFunction(() => document.getElementById("fig-live")?.dataset.forwards === "50", null, { timeout: 20000 });
    await box.screenshot({ path: join(shots, "widget-live-rows.png") });
  } finally {
    await w.close();
  }
});

test("a kernel gone under the view (restarted): a read it never answers is said in the view", async () => {
  const w = await rendered(browser, server, ["show", store, "healthy", "--timeout=3"]);
  try {
    await judged(w.frame);
    w.kernel.kill("SIGKILL");
    await new Promise((ok) => (w.kernel.exitCode !== null || w.kernel.signalCode !== null ? ok() : w.kernel.on("exit", ok)));
    await w.frame.selectOption("#run", "vanishing"); // its blobs were never read: asked of the dead kernel
    await w.frame.waitForFunction(() => document.body.textContent.includes("the kernel did not answer"), null, { timeout: 30000 });
  } finally {
    await w.close();
  }
});

test("a kernel restarted under the view: the view says at once that the kernel went away, and reads fail with it", async () => {
  const w = await rendered(browser, server, ["show", store, "healthy", "--timeout=120"]);
  try {
    await judged(w.frame);
    const t0 = Date.now();
    w.kernel.kill("SIGKILL");
    await new Promise((ok) => (w.kernel.exitCode !== null || w.kernel.signalCode !== null ? ok() : w.kernel.on("exit", ok)));
    await w.page.evaluate(() => window.restartKernel());
    const status = w.page.locator(".somatize-widget-status");
    await w.page.waitForFunction(() => document.getElementById("cell").dataset.somatize === "gone", null, { timeout: 5000 });
    assert.match(await status.textContent(), /the kernel went away \(restarted or shut down\).*run the cell again/);
    await w.frame.selectOption("#run", "vanishing"); // its blobs were never read: asked of no kernel
    await w.frame.waitForFunction(() => document.body.textContent.includes("the kernel went away"), null, { timeout: 10000 });
    assert.ok(Date.now() - t0 < 20000, "said at once, not after the 120 s timeout");
  } finally {
    await w.close();
  }
});
