// Browser layer, many runs at a glance: the demo store's seven runs (`somatize demo`, 100 steps)
// opened by URL show a health column that tells the healthy run from the six sick ones (what
// `somatize compare --json` says); runs are chosen by click, shift-click, ctrl-click, a name
// filter and a glob, and their curves overlaid, smoothed and grouped exactly as the package's
// figure({kind: "compare"}); the opened run shows its verdict first. A copy without
// summaries.jsonl fills the column lazily to the same answer. Screenshots, light and dark.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { servedBrowser, openPage, shots } from "./harness.mjs";
import { cli, demoStore, root } from "../node/store-fixture.mjs";

let origin, browser, close, node, want;
const rel = "target/js-stores/compare-page";
const demo = join(root, rel, "demo");
const unsummarised = join(root, rel, "unsummarised");
const configured = join(root, rel, "configured");

before(async () => {
  demoStore("compare-page");
  cpSync(demo, unsummarised, { recursive: true });
  rmSync(join(unsummarised, "summaries.jsonl"));
  // A copy whose runs record a config (written as `record --config` writes it), summarised again.
  cpSync(demo, configured, { recursive: true });
  for (const r of JSON.parse(execFileSync(cli, ["compare", demo, "--json"], { encoding: "utf8" }))) {
    writeFileSync(join(configured, "runs", r.run, "config.json"), JSON.stringify({ optim: r.run.startsWith("s") ? "sgd" : "adam", seed: 1 }));
  }
  execFileSync(cli, ["compare", configured, "--summarise"], { stdio: ["ignore", "ignore", "pipe"] });
  want = JSON.parse(execFileSync(cli, ["compare", demo, "--json"], { encoding: "utf8" }));
  node = await openStore(demo);
  ({ origin, browser, close } = await servedBrowser());
});
after(async () => {
  await node?.close();
  await close?.();
});

/** The page over `store` (a folder under the repo), once its run table and the opened run's verdict are shown. */
async function opened(store, colorScheme = "light") {
  const { page, seen } = await openPage(browser, "about:blank");
  await page.emulateMedia({ colorScheme });
  await page.goto(`${origin}/www/index.html?store=/${rel}/${store}/`);
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForSelector("#runs-table");
  await page.waitForFunction(() => document.querySelector("#verdict-headline"));
  // Figures are drawn on screen: the overlay is below the run table.
  await page.locator("#fig-compare").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector("#fig-compare")?.dataset.drawn === "true");
  return { page, seen };
}

/** The run table's run names and health cells: {run, health: "healthy"|"sick"|"pending"|…, text}. */
const healthShown = (page) => page.evaluate(() => {
  const table = document.querySelector("#runs-table");
  const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
  return [...table.querySelectorAll("tbody tr")].map((tr) => {
    const h = tr.children[cols.indexOf("health")].firstElementChild;
    return { run: tr.children[cols.indexOf("run")].textContent, health: h?.dataset.health, text: h?.textContent };
  });
});

/** What the CLI's rows say each health cell shows. */
const healthWanted = () => want.map((r) => ({
  run: r.run,
  health: r.healthy ? "healthy" : "sick",
  text: r.healthy ? "healthy" : r.flags.map((f) => `${f.flag} at ${f.node} since ${f.since}`).join(""),
}));

/** The traces plotly drew in the overlay: name, x and y. */
const overlay = (page) => page.evaluate(() => document.getElementById("fig-compare").data.map((t) => ({ name: t.name, x: [...t.x], y: [...t.y] })));
const wanted = async (options, store = node) => (await store.figure({ kind: "compare", ...options })).data.map((t) => ({ name: t.name, x: t.x, y: t.y }));
/** Wait until the overlay holds exactly the traces of the package's figure with `options` (of `store`, the demo's by default). */
async function overlayIs(page, options, store = node) {
  const w = await wanted(options, store);
  await page.waitForFunction((text) => JSON.stringify((document.getElementById("fig-compare").data ?? [])
    .map((t) => ({ name: t.name, x: [...t.x], y: [...t.y] }))) === text, JSON.stringify(w), { timeout: 15_000 })
    .catch(() => {}); // the assertion below says what differs
  assert.deepEqual(await overlay(page), w);
}
const chosen = (page) => page.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr.chosen")].map((tr) => tr.dataset.run));
const rowOf = (page, run) => page.locator(`#runs-table tbody tr[data-run="${run}"] td:nth-child(3)`);

test("the demo store's health column tells the healthy run from the six sick ones at a glance", async () => {
  const { page, seen } = await opened("demo");
  assert.deepEqual(await healthShown(page), healthWanted());
  assert.equal(want.filter((r) => r.healthy).length, 1);
  assert.equal(want.filter((r) => !r.healthy).length, 6);
  // Every run chosen at opening (there are fewer than 20), overlaid as the package draws them.
  const names = want.map((r) => r.run);
  assert.deepEqual(await chosen(page), names);
  await overlayIs(page, { runs: names, of: "loss.value", x: "forward" });
  // The opened run (the latest written) shows its verdict first: one line per fault.
  const last = want.at(-1);
  assert.equal(await page.inputValue("#run"), last.run);
  const headline = await page.textContent("#verdict-headline");
  for (const f of last.flags) assert.ok(headline.includes(`${f.flag} at ${f.node} since forward ${f.since}`), headline);
  assert.equal(await page.isVisible("#flags-table"), false, "the rest is one click away");
  await page.locator("#store-view").screenshot({ path: join(shots, "compare-store-view.png") });
  await page.locator("#verdict-section").screenshot({ path: join(shots, "compare-verdict-first.png") });
  await page.click("#verdict-details > summary");
  assert.equal(await page.isVisible("#flags-table"), true);
  // Nothing is wider than the window at 1280×800.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth));
  assert.deepEqual(seen.errors, []);
  assert.ok(seen.requests.every((u) => u.startsWith(origin)), "no request leaves the origin");
  await page.close();
});

test("choosing runs by click, shift-click, ctrl-click, filter and glob redraws the overlay", async () => {
  const { page, seen } = await opened("demo");
  const names = want.map((r) => r.run);
  const base = { of: "loss.value", x: "forward" };
  // A click opens the run and chooses it alone.
  await rowOf(page, "dead_relu").click();
  await page.waitForFunction(() => document.querySelector("#run").value === "dead_relu");
  assert.deepEqual(await chosen(page), ["dead_relu"]);
  await overlayIs(page, { runs: ["dead_relu"], ...base });
  await page.waitForFunction(() => document.querySelector("#verdict-headline")?.textContent.includes("DEAD at relu1"));
  // Shift-click chooses the range from the last clicked; ctrl-click takes one out.
  await rowOf(page, "stalled").click({ modifiers: ["Shift"] });
  const range = names.slice(names.indexOf("dead_relu"), names.indexOf("stalled") + 1);
  assert.deepEqual(await chosen(page), range);
  await overlayIs(page, { runs: range, ...base });
  await rowOf(page, "saturated").click({ modifiers: ["Control"] });
  assert.deepEqual(await chosen(page), range.filter((r) => r !== "saturated"));
  await overlayIs(page, { runs: range.filter((r) => r !== "saturated"), ...base });
  // A part of a name filters the table; the overlay draws the chosen runs shown.
  await page.fill("#run-filter", "ing");
  const shownRows = () => page.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].filter((tr) => !tr.hidden).map((tr) => tr.dataset.run));
  assert.deepEqual(await shownRows(), names.filter((n) => n.includes("ing")));
  await page.click("#choose-shown");
  await overlayIs(page, { runs: names.filter((n) => n.includes("ing")), ...base });
  // A glob.
  await page.fill("#run-filter", "*e?");
  const globbed = names.filter((n) => /^.*e.$/.test(n));
  assert.deepEqual(await shownRows(), globbed);
  await page.click("#choose-shown");
  await overlayIs(page, { runs: globbed, ...base });
  await page.fill("#run-filter", "");
  await page.click("#choose-none");
  await page.waitForFunction(() => document.querySelector("#fig-compare").textContent.includes("No run chosen"));
  // The checkbox chooses without opening.
  await page.check('#runs-table tbody tr[data-run="healthy"] input.choose');
  await overlayIs(page, { runs: ["healthy"], ...base });
  assert.equal(await page.inputValue("#run"), "dead_relu");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("smoothing, the x axis, log y and groups by prefix draw the package's figure", async () => {
  const { page, seen } = await opened("demo");
  const names = want.map((r) => r.run);
  await page.selectOption("#compare-smooth-kind", "ema");
  await page.fill("#compare-smooth", "0.8");
  await page.dispatchEvent("#compare-smooth", "change");
  await overlayIs(page, { runs: names, of: "loss.value", x: "forward", ema: 0.8 });
  await page.selectOption("#compare-smooth-kind", "mean");
  await page.fill("#compare-smooth", "10");
  await page.dispatchEvent("#compare-smooth", "change");
  await overlayIs(page, { runs: names, of: "loss.value", x: "forward", smooth: 10 });
  await page.selectOption("#compare-x", "relative");
  await page.check("#compare-log");
  await page.waitForFunction(() => document.getElementById("fig-compare").layout?.yaxis?.type === "log");
  await overlayIs(page, { runs: names, of: "loss.value", x: "relative", smooth: 10, logY: true });
  assert.equal(await page.evaluate(() => document.getElementById("fig-compare").layout.yaxis.type), "log");
  await page.uncheck("#compare-log");
  await page.selectOption("#compare-x", "forward");
  await page.check("#compare-log");
  await page.fill("#compare-group", "s d");
  await page.dispatchEvent("#compare-group", "change");
  const options = { runs: names, of: "loss.value", x: "forward", smooth: 10, groupBy: ["s", "d"], logY: true };
  await overlayIs(page, options);
  const traceNames = (await overlay(page)).map((t) => t.name);
  assert.ok(traceNames.includes("s* (2 runs) mean") && traceNames.includes("s* (2 runs) min–max"), traceNames.join(", "));
  assert.ok(traceNames.includes("d* (1 runs) mean"));
  await page.locator("#fig-compare").screenshot({ path: join(shots, "compare-grouped.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("runs that record a config show it, and are grouped by a config field as the package groups them", async () => {
  const { page, seen } = await opened("configured");
  const cols = await page.evaluate(() => [...document.querySelectorAll("#runs-table thead th")].map((th) => th.textContent));
  assert.ok(cols.includes("config"), cols.join(", "));
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll("#compare-group-config option")].map((o) => o.value)), ["", "optim", "seed"]);
  const names = want.map((r) => r.run);
  await page.selectOption("#compare-group-config", "optim");
  const store = await openStore(configured);
  await overlayIs(page, { runs: names, of: "loss.value", x: "forward", groupConfig: "optim" }, store);
  await store.close();
  const traceNames = (await overlay(page)).map((t) => t.name);
  assert.ok(traceNames.includes("optim=sgd (2 runs) mean") && traceNames.includes("optim=adam (5 runs) mean"), traceNames.join(", "));
  await page.locator("#fig-compare").screenshot({ path: join(shots, "compare-config-groups.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a store without summaries is judged lazily, run by run, to the same health", async () => {
  const { page, seen } = await opened("unsummarised");
  await page.waitForFunction(() => document.querySelector("#runs")?.dataset.judged === "true", null, { timeout: 120_000 });
  assert.deepEqual(await healthShown(page), healthWanted());
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("dark mode follows the system setting", async () => {
  const { page, seen } = await opened("demo", "dark");
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, "rgb(20, 20, 20)");
  assert.equal(await page.evaluate(() => document.getElementById("fig-compare").layout.paper_bgcolor), "#141414");
  await page.locator("#store-view").screenshot({ path: join(shots, "compare-dark.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});
