// Browser layer, the page over real stores written by the CLI (`somatize record`): opened as a
// chosen folder, a snapshot file and ?store= URL, the runs table and the figures the package
// draws hold exactly what the package says in Node; a store with hostile names stays text.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { servedBrowser, openPage, shots, drawAll } from "./harness.mjs";
import { makeStores, cli, root } from "../node/store-fixture.mjs";

let origin, browser, close, s, node;

before(async () => {
  s = makeStores("page");
  node = await openStore(s.store);
  ({ origin, browser, close } = await servedBrowser());
});
after(async () => {
  await node?.close();
  await close?.();
});

/** The page, opened with `query`, then `open(page)`; waits until the run's figures are drawn or an error shows. */
async function opened(query, open) {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html${query}`);
  await page.waitForSelector("body[data-ready=true]");
  await open?.(page);
  await page.waitForFunction(() => document.querySelector("#error").textContent ||
    ["true", "waiting"].includes(document.querySelector("#fig-machines")?.dataset.drawn) || document.querySelector("#fig-machines .error"));
  assert.equal(await page.textContent("#error"), "");
  await drawAll(page);
  return { page, seen };
}

/** The runs table's run, forwards and broke columns. */
function runsShown(page) {
  return page.evaluate(() => {
    const table = document.querySelector("#runs-table");
    const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    return [...table.querySelectorAll("tbody tr")].map((tr) => {
      const cell = (name) => tr.children[cols.indexOf(name)];
      return { run: cell("run").textContent, forwards: Number(cell("forwards").querySelector("data").value),
        broke: Number(cell("broke").querySelector("data").value) };
    });
  });
}

/** x and y of each trace plotly drew in a figure container. */
const traces = (page, id) => page.evaluate((id) => document.getElementById(id).data.map((t) => ({ x: t.x, y: t.y })), id);
const want = async (kind, options) => (await node.figure({ kind, ...options })).data.map((t) => ({ x: t.x, y: t.y }));

async function checkStore(page) {
  const runs = (await node.runs()).rows;
  assert.deepEqual(await runsShown(page), runs.map((r) => ({ run: r.run, forwards: r.forwards, broke: r.broke })));
  const run = await page.inputValue("#run");
  assert.equal(run, runs.at(-1).run, "the latest written run is shown first");
  assert.deepEqual(await traces(page, "fig-progress"), await want("progress", { run, of: "loss.value", smooth: 0 }));
  const numbers = [...new Set((await node.forwards({ run })).rows.map((f) => String(f.forward)))];
  assert.deepEqual(await page.locator("#forward option").allTextContents(), numbers, "one entry per forward");
  assert.deepEqual(await traces(page, "fig-spent"), await want("spent", { run }));
  assert.deepEqual(await traces(page, "fig-machines"), await want("machines", { run }));
  const first = Number(await page.inputValue("#forward"));
  assert.deepEqual(await traces(page, "fig-gantt"), await want("gantt", { run, forward: first }));
  await checkHealth(page, run, {});
}

/** The flags table as [[node, flag]]. */
const flagsShown = (page) => page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
  .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));

/** The verdict, the measurements offered and the health figures are the package's in Node. */
async function checkHealth(page, run, over) {
  const thresholds = { ...(await import("somatize")).thresholdsDefault(), ...over };
  const d = await node.diagnosed({ run, thresholds });
  assert.deepEqual(await flagsShown(page), Object.entries(d.diagnosis).flatMap(([n, fs]) => fs.map((f) => [n, f])));
  assert.match(await page.textContent("#verdict-summary"), new RegExp(`Judged over ${d.forwards.count} forwards`));
  const seen = await node.seen({ run });
  const metrics = [...new Set(Object.values(seen).flatMap((m) => Object.keys(m).filter((k) => typeof m[k] === "number")))].sort();
  assert.deepEqual(await page.locator("#measure option").allTextContents(), metrics);
  const of = await page.inputValue("#measure");
  assert.deepEqual(await traces(page, "fig-profile"), await want("profile", { run, of, thresholds }));
  assert.deepEqual(await traces(page, "fig-flags"), await want("flags", { run, thresholds }));
  assert.deepEqual(await traces(page, "fig-overlaid"), await want("overlaid", { run, thresholds }));
  assert.doesNotMatch(await page.textContent("#fig-overlaid"), /<br>|<i>/, "the core's markup is drawn, not shown");
}

test("a store folder chosen in the page shows its runs and the package's figures", async () => {
  const { page, seen } = await opened("", (page) => page.setInputFiles("#pick-folder", s.store));
  await checkStore(page);
  await page.selectOption("#run", "mlp");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Showing run mlp"));
  // The progress is below the run's verdict: drawn once on screen.
  await page.locator("#fig-progress").scrollIntoViewIfNeeded();
  await page.waitForSelector("#fig-progress[data-drawn=true]");
  assert.deepEqual(await traces(page, "fig-progress"), await want("progress", { run: "mlp", of: "loss.value", smooth: 0 }));
  await page.fill("#smooth", "3");
  await page.dispatchEvent("#smooth", "change");
  const smoothed = await want("progress", { run: "mlp", of: "loss.value", smooth: 3 });
  await page.waitForFunction((n) => document.getElementById("fig-progress").data.length === n, smoothed.length);
  assert.deepEqual(await traces(page, "fig-progress"), smoothed);
  await page.selectOption("#forward", "4");
  await page.locator("#fig-gantt").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector("#fig-gantt .gtitle")?.textContent.includes("4"));
  assert.deepEqual(await traces(page, "fig-gantt"), await want("gantt", { run: "mlp", forward: 4 }));
  // A bound changed in the page: the verdict and the health figures are the package's at it.
  const flagsDrawn = await page.evaluate(() => document.getElementById("fig-flags").data);
  await page.fill("#t-vanishing_mean_abs", "1");
  // Drawn again, or waiting to be until scrolled into view (the page draws figures on screen only).
  await page.waitForFunction((before) => document.getElementById("fig-flags").dataset.drawn === "waiting" ||
    JSON.stringify(document.getElementById("fig-flags").data) !== before, JSON.stringify(flagsDrawn));
  await drawAll(page);
  await checkHealth(page, "mlp", { vanishing_mean_abs: 1 });
  assert.ok((await flagsShown(page)).some(([, f]) => f === "VANISHING"), "a bound of 1 makes every gradient vanish");
  await page.screenshot({ path: join(shots, "store-real.png"), fullPage: true });
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), []);
  await page.close();
});

test("a snapshot .zip chosen in the page reads the same", async () => {
  const { page, seen } = await opened("", (page) => page.setInputFiles("#pick-file", s.snapshot));
  await checkStore(page);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("?store= a store served as plain files on the page's own site reads the same", async () => {
  const { page, seen } = await opened(`?store=${encodeURIComponent(s.url("store/"))}`);
  await checkStore(page);
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), []);
  await page.close();
});

test("a store whose run, node and tensor names are HTML and script shows them as text; nothing runs", async () => {
  const HOSTILE = "<img src=x onerror=window.__pwned=1>";
  const store = join(s.dir, "hostile");
  rmSync(store, { recursive: true, force: true });
  execFileSync(cli, ["record", "--store", store, "--run", HOSTILE, "--writer", "w0", "--",
    "python3", join(root, "tests/browser/hostile_train.py")], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  const { page, seen } = await opened("", (page) => page.setInputFiles("#pick-folder", store));
  assert.deepEqual((await runsShown(page)).map((r) => r.run), [HOSTILE]);
  assert.equal(await page.textContent("#run option"), HOSTILE);
  for (const id of ["fig-progress", "fig-spent", "fig-gantt"]) {
    assert.ok((await page.textContent(`#${id} .gtitle`)).includes(HOSTILE), `${id}: the run's name in the title as text`);
  }
  assert.ok((await page.locator("#fig-spent .xtick").allTextContents()).includes(HOSTILE), "the node's name as a tick label");
  assert.ok((await page.locator("#fig-gantt .ytick").allTextContents()).includes(HOSTILE), "the node's name on the gantt");
  const hostileStore = await openStore(store);
  try {
    const d = await hostileStore.diagnosed({ run: HOSTILE });
    const want = Object.entries(d.diagnosis).flatMap(([n, fs]) => fs.map((f) => [n, f]));
    assert.ok(want.some(([n]) => n === HOSTILE), `the hostile node is flagged: ${JSON.stringify(want)}`);
    assert.deepEqual(await flagsShown(page), want);
  } finally {
    await hostileStore.close();
  }
  assert.ok((await page.textContent("#fig-overlaid")).includes(HOSTILE), "the node's name on the graph as text");
  const flagsText = await page.textContent("#fig-flags");
  // plotly's table wraps cells at spaces, so compare without them.
  const squeeze = (t) => t.replace(/\s/g, "");
  assert.ok(squeeze(flagsText).includes(squeeze(HOSTILE)), `the node's name in the flags figure as text: ${flagsText}`);
  assert.ok((await page.locator("#fig-profile .xtick").allTextContents()).includes(HOSTILE), "the node's name over depth");
  const bar = page.locator("#fig-spent .bars path").first();
  await bar.scrollIntoViewIfNeeded();
  const b = await bar.boundingBox();
  await page.mouse.move(b.x + b.width / 2 - 3, b.y + b.height / 2);
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
  await page.waitForSelector("#fig-spent .hoverlayer .hovertext");
  assert.ok((await page.textContent("#fig-spent .hoverlayer")).includes(HOSTILE), "hover: the name as text");
  await page.locator("#fig-spent").screenshot({ path: join(shots, "store-hostile-hover.png") });
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0)); // sticky table heads draw where the view was otherwise
  await page.screenshot({ path: join(shots, "store-hostile.png"), fullPage: true });
  await page.locator("#store-view").screenshot({ path: join(shots, "store-hostile-runs.png") });
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no script ran");
  assert.equal(await page.locator("img").count(), 0, "no element was made from a name");
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), []);
  await page.close();
});
