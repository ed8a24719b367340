// Browser layer, the page's store view: folders, snapshots and URLs go through the store adapter;
// without store support the page says so, a foreign URL is refused without asking it, and
// nothing crashes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { serve, launch, openPage, shots, drawAll } from "./harness.mjs";

const shared = process.env.SOMATIZE_SHARED ?? new URL("../../../shared/", import.meta.url).pathname;
let server, origin, browser;

before(async () => {
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

async function ready(query = "") {
  const opened = await openPage(browser, `${origin}/www/index.html${query}`);
  await opened.page.waitForSelector("body[data-ready=true]");
  return opened;
}

const canOpenStores = (page) => page.evaluate(async () => typeof (await import("/pkg/browser.js")).openStore === "function");

test("a folder that is no store gets an answer in the page, not a crash", async () => {
  const { page, seen } = await ready();
  const folder = join(shared, "runs/example_cnn");
  await page.setInputFiles("#pick-folder", folder);
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  const error = await page.textContent("#error");
  assert.match(error, /^example_cnn: /, "the message names the folder");
  if (await canOpenStores(page)) assert.doesNotMatch(error, /cannot open stores yet/);
  else assert.match(error, /cannot open stores yet/);
  assert.equal(await page.isHidden("#store-view"), true);
  await page.screenshot({ path: join(shots, "store-not-a-store.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("where the browser gives directory handles, a folder is opened by its handle alone; a refused picker brings back the folder input", async () => {
  // Chromium has showDirectoryPicker: the folder input (whose FileList the browser makes
  // before the page sees it, 1.5–1.8 s for 5,003 files) is not offered; "Open a folder…" is.
  const { page, seen } = await ready();
  assert.equal(await page.evaluate(() => typeof window.showDirectoryPicker), "function");
  assert.equal(await page.isVisible("#pick-dir"), true);
  assert.equal(await page.isHidden("#pick-folder"), true);
  await page.evaluate(() => {
    window.showDirectoryPicker = async () => { throw new DOMException("blocked by policy", "SecurityError"); };
  });
  await page.click("#pick-dir");
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  assert.match(await page.textContent("#error"), /^folder: .*blocked by policy/);
  assert.equal(await page.isVisible("#pick-folder"), true);
  // A picker closed without a choice says nothing.
  await page.evaluate(() => {
    document.querySelector("#error").textContent = "";
    window.showDirectoryPicker = async () => { throw new DOMException("closed", "AbortError"); };
  });
  await page.click("#pick-dir");
  await page.evaluate(() => new Promise((ok) => setTimeout(ok, 200)));
  assert.equal(await page.textContent("#error"), "");
  assert.deepEqual(seen.errors, []);
  await page.close();

  // A browser without it (Firefox, Safari) is offered the folder input only.
  const { page: other, seen: seen2 } = await openPage(browser, "about:blank");
  await other.addInitScript(() => { delete window.showDirectoryPicker; delete Window.prototype.showDirectoryPicker; });
  await other.goto(`${origin}/www/index.html`);
  await other.waitForSelector("body[data-ready=true]");
  assert.equal(await other.evaluate(() => typeof window.showDirectoryPicker), "undefined");
  assert.equal(await other.isVisible("#pick-folder"), true);
  assert.equal(await other.isHidden("#pick-dir"), true);
  assert.deepEqual(seen2.errors, []);
  await other.close();
});

test("?store= on another origin is refused in the page and never asked", async () => {
  const { page, seen } = await ready("?store=https://example.com/store/");
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  assert.match(await page.textContent("#error"), /^https:\/\/example\.com\/store\/: only stores on this page's own site/);
  await page.fill("#store-url", "http://localhost:1/evil/");
  await page.click("#url-form button");
  assert.match(await page.textContent("#error"), /^http:\/\/localhost:1\/evil\/: only stores/);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), []);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a file that is neither a snapshot nor a tensor file is named and refused", async () => {
  const { page, seen } = await ready();
  await page.setInputFiles("#pick-file", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  assert.match(await page.textContent("#error"), /^notes\.txt: not a store snapshot \(\.zip\) nor a tensor file/);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

// ---- the view itself, over a stand-in store ----
// The page's /pkg/browser.js is served with openStore replaced by a stand-in that counts what the
// page asks: its answers have the package's shapes ({rows, skipped}, figure JSON) and its verdict
// is the real core's over hostile node and run names. It tests what the page asks and when
// (re-judging, hover, selects, live follow), not a store; page-store.test.mjs reads real ones.
const HOSTILE = "<img src=x onerror=window.__pwned=1>";
const standIn = `
import { verdict } from "/pkg/browser.js?real";
export * from "/pkg/browser.js?real";
const H = ${JSON.stringify(HOSTILE)};
const seen = [
  { name: H, kind: "ReLU", metrics: { dead_unit_fraction: 0.9, act_mean: 0.1 } },
  { name: "fc2", kind: "Linear", metrics: { grad_mean_abs: 1e-3, update_ratio: 2 } },
];
const figure = (title, x) => ({
  data: [{ type: "scatter", mode: "lines+markers", x, y: x.map((v) => v * v), name: H, text: x.map(() => H),
    hovertemplate: "%{x}: %{y} %{text}<extra></extra>" }],
  layout: { title: { text: title }, xaxis: { title: { text: "forward" } } },
});
class StandIn {
  async call(name, o = {}) {
    window.__storeCalls = [...(window.__storeCalls ?? []), name];
    switch (name) {
      case "runs": return { rows: [{ run: H, writers: 1, forwards: 3, broke: 1, first_written_us: 1.7e15,
        last_written_us: 1.7e15 + 3e6, took_us: 3e5, mean_took_us: 1e5, ended_ok: false }], skipped: [] };
      case "forwards": return { rows: [1, 2, 3].map((f) => ({ forward: f, writer: "w0", written_us: 1.7e15 + f * 1e6,
        took_us: 1e5, broke: f === 3 })), skipped: [] };
      case "seen": return Object.fromEntries(seen.map((n) => [n.name, n.metrics]));
      case "diagnose": return verdict(seen, o.thresholds);
      case "alerts": return Object.entries(verdict(seen, o.thresholds))
        .flatMap(([node, flags]) => flags.map((flag) => ({ node, flag, first_forward: 2, means: "", advice: "" })));
      case "where": return verdict(seen, o.thresholds);
      case "history": return [[1, 0.5], [2, 0.25], [3, 0.125]];
      default: throw new Error("no store function " + name);
    }
  }
  async figure({ kind, ...o }) {
    window.__storeCalls = [...(window.__storeCalls ?? []), kind];
    const skipped = [];
    if (kind === "gantt") return { ...figure("gantt of forward " + o.forward + " in " + o.run, [1, 2]), skipped };
    if (kind === "profile") return { ...figure("profile of " + o.of + " in " + o.run, [1, 2, 3]), skipped };
    return { ...figure(kind + " of " + o.run, [1, 2, 3]), skipped };
  }
  async refresh() {
    window.__storeCalls = [...(window.__storeCalls ?? []), "refresh"];
  }
  async close() {}
}
export async function openStore() {
  return new StandIn();
}
`;

async function withStandIn() {
  const opened = await openPage(browser, "about:blank");
  await opened.page.route((url) => url.pathname === "/pkg/browser.js" && !url.search,
    (route) => route.fulfill({ status: 200, contentType: "text/javascript", body: standIn }));
  await opened.page.goto(`${origin}/www/index.html`);
  await opened.page.waitForSelector("body[data-ready=true]");
  await opened.page.setInputFiles("#pick-folder", join(shared, "runs/example_cnn"));
  await opened.page.waitForSelector("#fig-machines[data-drawn=true], #fig-machines[data-drawn=waiting]");
  await drawAll(opened.page);
  return opened;
}

const calls = (page, name) => page.evaluate((name) => window.__storeCalls.filter((c) => c === name).length, name);

test("a store's runs, verdict and figures show, hostile names as text, no script run", async () => {
  const { page, seen } = await withStandIn();
  assert.equal(await page.textContent("#error"), "");
  assert.equal(await page.textContent("#runs-table tbody th"), HOSTILE);
  assert.equal(await page.textContent("#run option"), HOSTILE);
  const flags = await page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
  assert.deepEqual(flags, [[HOSTILE, "DEAD"], ["fc2", "OVERSTEPPING"]]);
  const where = await page.evaluate(() => [...document.querySelectorAll("#where-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
  assert.deepEqual(where, [[HOSTILE, "DEAD"], ["fc2", "OVERSTEPPING"]]);
  assert.equal(await page.inputValue("#history-node"), HOSTILE, "the first node measured in the measurement shown");
  for (const id of ["progress", "profile", "flags", "overlaid", "spent", "gantt", "machines", "history"]) {
    assert.equal(await page.getAttribute(`#fig-${id}`, "data-drawn"), "true", id);
    assert.ok((await page.textContent(`#fig-${id} .gtitle`)).includes(HOSTILE), `${id}'s title shows the run's name as text`);
  }
  const measures = await page.evaluate(() => [...document.querySelectorAll("#measure option")].map((o) => o.value));
  assert.deepEqual(measures, ["act_mean", "dead_unit_fraction", "grad_mean_abs", "update_ratio"]);
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll("#forward option")].map((o) => o.value)), ["1", "2", "3"]);
  await page.screenshot({ path: join(shots, "store-view.png"), fullPage: true });
  await page.locator("#store-view").screenshot({ path: join(shots, "store-view-runs.png") });
  await page.locator("#verdict-section").screenshot({ path: join(shots, "store-view-health.png") });
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("img").count(), 0);
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`) && u !== "about:blank"), []);
  await page.close();
});

test("store view: thresholds re-judge and redraw only the health figures; hover asks nothing; selects redraw one figure", async () => {
  const { page } = await withStandIn();
  const before = {};
  for (const name of ["progress", "diagnose", "flags", "spent", "gantt", "machines"]) before[name] = await calls(page, name);
  await page.fill("#t-overstepping_update_ratio", "3");
  await page.waitForFunction(() => ![...document.querySelectorAll("#flags-table tbody tr")].some((tr) => tr.textContent.includes("OVERSTEPPING")));
  await page.waitForFunction((n) => window.__storeCalls.filter((c) => c === "flags").length > n, before.flags);
  assert.equal(await calls(page, "diagnose"), before.diagnose + 1);
  for (const name of ["progress", "spent", "gantt", "machines"]) assert.equal(await calls(page, name), before[name], `${name} not asked again`);
  await page.fill("#t-overstepping_update_ratio", "x");
  await page.waitForFunction(() => document.querySelector("#thresholds-error").textContent);
  assert.match(await page.textContent("#thresholds-error"), /must be a number, not "x"/);
  assert.equal(await calls(page, "diagnose"), before.diagnose + 1, "refused thresholds ask the store nothing");
  const progress = before.progress;
  await page.locator("#fig-progress").scrollIntoViewIfNeeded();
  const b = await page.locator("#fig-progress .nsewdrag").boundingBox();
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
  await page.mouse.move(b.x + b.width / 2 + 3, b.y + b.height / 2);
  await page.waitForSelector("#fig-progress .hoverlayer .hovertext");
  assert.ok((await page.textContent("#fig-progress .hoverlayer")).includes(HOSTILE), "hover shows the name as text");
  assert.equal(await calls(page, "progress"), progress, "no figure fetched again");
  await page.selectOption("#measure", "update_ratio");
  await page.locator("#fig-profile").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector("#fig-profile .gtitle")?.textContent.startsWith("profile of update_ratio"));
  await page.selectOption("#forward", "2");
  await page.locator("#fig-gantt").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector("#fig-gantt .gtitle")?.textContent.startsWith("gantt of forward 2"));
  assert.equal(await calls(page, "progress"), progress);
  await page.close();
});

test("store view: following live looks for new files and redraws the progress, and stops when unticked", async () => {
  const { page } = await withStandIn();
  assert.equal(await page.isChecked("#live"), false, "a chosen folder (no handle) is not followed by default");
  const progress = await calls(page, "progress");
  await page.check("#live");
  await page.waitForFunction((n) => window.__storeCalls.filter((c) => c === "progress").length > n, progress, { timeout: 5000 });
  assert.ok((await calls(page, "refresh")) >= 1);
  await page.uncheck("#live");
  await page.waitForTimeout(300); // a tick already under way may still finish
  const after = await calls(page, "progress");
  await page.waitForTimeout(2500);
  assert.equal(await calls(page, "progress"), after, "no redraw once unticked");
  await page.close();
});
