// Browser layer, a store of 400 runs (written by the real writer: examples/compare_bench_store.rs,
// 40 forwards each, every seventh run with a NaN in `fc`): the run table puts in the DOM only the
// rows in its box's view and OVERSCAN more each side, yet scrolling through it shows every run
// once, in order, with the health `somatize compare --json` gives, no blank in view, and columns
// that keep their width; a shift-click chooses a range through rows not drawn; Tab walks from
// row to row past the rows drawn when it began; the name filter finds runs anywhere in the table;
// a followed store that gains a run rebuilds the table where it was scrolled to, and a followed
// folder that loses the run at the view's top keeps the run below it where it was; rows built
// while the view is hidden (the table is made before the store view is shown) are measured once
// it is shown, so rows taller than the first guess still add up to the table's whole height.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, cpSync, rmSync } from "node:fs";
import { join } from "node:path";
import { serve, launch, openPage, pickerPage, runTableShown, shots, filesUnder, writeOpfs } from "./harness.mjs";
import { cli, root } from "../node/store-fixture.mjs";

const RUNS = 400;
const FORWARDS = 40;
const rel = "target/js-stores/many-runs/store";
let server, origin, browser, want;

before(async () => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  execFileSync("cargo", ["run", "--quiet", "--example", "compare_bench_store", "--", join(root, rel), String(RUNS), String(FORWARDS), "2"],
    { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  want = JSON.parse(execFileSync(cli, ["compare", join(root, rel), "--json"], { encoding: "utf8", maxBuffer: 1 << 26 }));
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

/** What the CLI's rows say each run's health cell shows. */
const healthText = (r) => r.healthy ? "healthy" : r.flags.map((f) => `${f.flag} at ${f.node} since ${f.since}`).join("");

/** The page over the store, once its table has every run's health. */
async function opened() {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(`/${rel}/`)}`);
  await runTableShown(page, RUNS, 120_000);
  await page.waitForSelector("#verdict-headline");
  return { page, seen };
}

/** Two frames: the table's scroll handler has drawn what came into view. */
const frames = (page) => page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));

/** The rows in the DOM: run, health text, row index (the header is 1), and whether the box's view is covered. */
const drawn = (page) => page.evaluate(() => {
  const box = document.querySelector("#runs");
  const trs = [...document.querySelectorAll("#runs-table tbody tr")];
  const view = box.getBoundingClientRect();
  const head = document.querySelector("#runs-table thead").getBoundingClientRect();
  const first = trs[0].getBoundingClientRect();
  const last = trs.at(-1).getBoundingClientRect();
  return {
    rows: trs.map((tr) => ({ run: tr.dataset.run, health: tr.querySelector("[data-health]").textContent, index: Number(tr.getAttribute("aria-rowindex")) })),
    // The drawn rows reach above the view's top (below the sticky header) and below its bottom, or the table ends there.
    covered: (first.top <= Math.max(view.top, head.bottom) + 1 || box.scrollTop === 0) &&
      (last.bottom >= view.bottom - 1 || box.scrollTop + box.clientHeight >= box.scrollHeight - 1),
    widths: [...document.querySelectorAll("#runs-table thead th")].map((th) => Math.round(th.getBoundingClientRect().width)),
    elements: box.querySelectorAll("*").length,
    atEnd: box.scrollTop + box.clientHeight >= box.scrollHeight - 1,
  };
});

const scrollBy = async (page, px) => {
  await page.evaluate((d) => { document.querySelector("#runs").scrollTop += d; }, px);
  await frames(page);
};
const scrollTo = async (page, where) => {
  await page.evaluate((w) => {
    const box = document.querySelector("#runs");
    box.scrollTop = w === "end" ? box.scrollHeight : 0;
  }, where);
  await frames(page);
};
/**
 * Scroll the run table's box from where it is to its end, 300 px at a time, checking at each
 * step that the view is covered by drawn rows, that fewer than 100 are drawn, one run of
 * consecutive rows, and that the columns keep `first`'s widths; gives every row seen, in order.
 */
async function everyRow(page, first, each = async () => {}) {
  const shown = new Map();
  let view = first;
  let steps = 0;
  for (;;) {
    assert.ok(view.covered, `the view is covered by drawn rows at step ${steps}`);
    assert.deepEqual(view.widths, first.widths, `the columns keep their widths at step ${steps}`);
    assert.ok(view.rows.length < 100, `${view.rows.length} rows drawn at step ${steps}`);
    view.rows.forEach((r, k) => assert.equal(r.index, view.rows[0].index + k));
    for (const r of view.rows) {
      if (shown.has(r.run)) assert.equal(shown.get(r.run).health, r.health, `${r.run} drawn twice the same`);
      else shown.set(r.run, r);
    }
    if (view.atEnd) break;
    steps += 1;
    await scrollBy(page, 300);
    view = await drawn(page);
    await each(steps);
  }
  return { rows: [...shown.values()], steps };
}

const rowCell = (page, run) => page.locator(`#runs-table tbody tr[data-run="${run}"] td:nth-child(3)`);

test("400 runs: only the rows in view are drawn, and scrolling through shows every run once, in order, with the CLI's health", async () => {
  assert.equal(want.length, RUNS);
  assert.ok(want.some((r) => r.healthy) && want.some((r) => !r.healthy), "the store has healthy and sick runs");
  const { page, seen } = await opened();
  assert.equal(await page.getAttribute("#runs", "data-runs"), String(RUNS));
  assert.equal(await page.getAttribute("#runs-table", "aria-rowcount"), String(RUNS + 1));
  const top = await drawn(page);
  assert.ok(top.rows.length >= 20 && top.rows.length < 100, `${top.rows.length} rows drawn of ${RUNS}`);
  // Drawn whole, 400 rows were ~8,800 elements.
  assert.ok(top.elements < 3000, `${top.elements} elements in the run table's box`);
  const { rows, steps } = await everyRow(page, top, async (step) => {
    if (step === 20) await page.locator("#store-view").screenshot({ path: join(shots, "compare-many-runs.png") });
  });
  assert.ok(steps > 10, `${steps} scrolls`);
  assert.deepEqual(rows.map((r) => [r.run, r.health, r.index]), want.map((r, i) => [r.run, healthText(r), i + 2]));
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("400 runs: a shift-click chooses through rows not drawn, Tab walks past the drawn rows, the filter finds any run", async () => {
  const { page, seen } = await opened();
  const names = want.map((r) => r.run);
  await rowCell(page, names[5]).click();
  await page.waitForFunction((run) => document.querySelector("#run").value === run, names[5]);
  await scrollTo(page, "end");
  await rowCell(page, names[395]).click({ modifiers: ["Shift"] });
  await page.waitForFunction(() => document.querySelector("#runs-chosen").textContent === "391 runs chosen to compare");
  await page.waitForFunction(() => document.getElementById("fig-compare").data?.length === 391, null, { timeout: 60_000 });
  const chosenDrawn = () => page.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")]
    .map((tr) => [tr.dataset.run, tr.classList.contains("chosen"), tr.querySelector("input.choose").checked]));
  for (const [run, on, ticked] of await chosenDrawn()) {
    const i = names.indexOf(run);
    assert.equal(on, i >= 5 && i <= 395, run);
    assert.equal(ticked, on, run);
  }
  await scrollTo(page, "top");
  for (const [run, on] of await chosenDrawn()) assert.equal(on, names.indexOf(run) >= 5, run);

  // Tab from the first run's box, one frame between presses as a person's are: the focus walks
  // run by run well past the rows drawn when it began, the table still drawing fewer than 100.
  const firstDrawn = (await drawn(page)).rows.length;
  await page.focus(`#runs-table tbody tr[data-run="${names[0]}"] input.choose`);
  const presses = firstDrawn + 30;
  for (let k = 0; k < presses; k++) {
    await page.keyboard.press("Tab");
    await frames(page);
  }
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), `compare run ${names[presses]}`);
  assert.ok((await drawn(page)).rows.length < 100);
  // Shift-Tab walks back the same way.
  for (let k = 0; k < 10; k++) {
    await page.keyboard.press("Shift+Tab");
    await frames(page);
  }
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), `compare run ${names[presses - 10]}`);

  // The filter: a glob of the last group, from the table's top.
  const group = `${names.at(-1).split("-")[0]}-*`;
  await page.fill("#run-filter", group);
  await frames(page);
  const inGroup = names.filter((n) => n.startsWith(group.slice(0, -1)));
  await scrollTo(page, "top");
  const filtered = await drawn(page);
  assert.ok(filtered.rows.length < inGroup.length, `${filtered.rows.length} of the ${inGroup.length} shown drawn`);
  assert.deepEqual((await everyRow(page, filtered)).rows.map((r) => r.run), inGroup);
  assert.equal(await page.textContent("#runs-shown"), `${inGroup.length} of ${RUNS} runs shown`);
  assert.equal(await page.getAttribute("#runs-table", "aria-rowcount"), String(inGroup.length + 1));
  assert.deepEqual(seen.errors, []);
  await page.close();
});

/** The rows reaching below the sticky header: each run and its row's top there (px, rounded). */
const inView = (page) => page.evaluate(() => {
  const box = document.querySelector("#runs").getBoundingClientRect();
  const head = document.querySelector("#runs-table thead th").getBoundingClientRect().bottom;
  return [...document.querySelectorAll("#runs-table tbody tr")]
    .filter((t) => t.getBoundingClientRect().bottom > head + 0.5 && t.getBoundingClientRect().top < box.bottom)
    .map((t) => ({ run: t.dataset.run, top: Math.round(t.getBoundingClientRect().top - head) }));
});

test("400 runs followed live: a run written meanwhile rebuilds the table with the run at the view's top kept there", async () => {
  // A copy of the store, served over HTTP and followed (&live=1); a run is then added to it as a
  // writer adds one: its folder (a copy of the first run's, so its lines are as old: it sorts
  // near the table's top, above the rows in view), then its line in listing.jsonl.
  const grown = "target/js-stores/many-runs/grown";
  rmSync(join(root, grown), { recursive: true, force: true });
  cpSync(join(root, rel), join(root, grown), { recursive: true });
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(`/${grown}/`)}&live=1`);
  await runTableShown(page, RUNS, 120_000);
  await page.waitForSelector("#verdict-headline");
  assert.equal(await page.isChecked("#live"), true, "the store is followed");
  /** The run at the top of the view (the first row reaching below the sticky header) and its row's top there. */
  const atTop = () => page.evaluate(() => {
    const head = document.querySelector("#runs-table thead th").getBoundingClientRect().bottom;
    const tr = [...document.querySelectorAll("#runs-table tbody tr")].find((t) => t.getBoundingClientRect().bottom > head + 0.5);
    return { run: tr.dataset.run, top: Math.round(tr.getBoundingClientRect().top - head) };
  });
  await page.evaluate(() => { document.querySelector("#runs").scrollTop = 4000; });
  await frames(page);
  const before = await atTop();
  const scrolled = await drawn(page);
  cpSync(join(root, grown, "runs", want[0].run), join(root, grown, "runs", "zz-late"), { recursive: true });
  appendFileSync(join(root, grown, "listing.jsonl"), `${JSON.stringify({ run: "zz-late", writer: "w0" })}\n`);
  await page.waitForFunction((n) => document.querySelector("#runs").dataset.runs === String(n), RUNS + 1, { timeout: 60_000 });
  await frames(page);
  const after = await drawn(page);
  const grownWant = JSON.parse(execFileSync(cli, ["compare", join(root, grown), "--json"], { encoding: "utf8", maxBuffer: 1 << 26 }));
  const late = grownWant.findIndex((r) => r.run === "zz-late");
  assert.ok(late >= 0 && late < scrolled.rows[0].index - 2, `the new run (row ${late + 2}) sorts above the rows drawn (from row ${scrolled.rows[0].index})`);
  const now = await atTop();
  assert.equal(now.run, before.run, "the run at the view's top is still there");
  assert.ok(Math.abs(now.top - before.top) <= 1, `as far down (to a pixel): ${now.top} px, was ${before.top} px`);
  assert.ok(after.covered, "the view is covered by drawn rows");
  assert.ok(after.rows.length < 100, `${after.rows.length} rows drawn`);
  // The rows drawn are the CLI's, at their new places (one further down each).
  after.rows.forEach((r, k) => {
    assert.equal(r.index, after.rows[0].index + k);
    assert.equal(r.run, grownWant[r.index - 2].run, `row ${r.index}`);
  });
  // The new run is in the table, judged as the run it copies.
  await scrollTo(page, "top");
  await page.waitForFunction(() => document.querySelector('#runs-table tr[data-run="zz-late"] [data-health]:not([data-health=pending])'), null, { timeout: 60_000 });
  assert.equal(await page.textContent('#runs-table tr[data-run="zz-late"] [data-health]'), healthText(want[0]));
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("400 runs in a followed folder: the run at the view's top deleted, the run below it stays where it was", async () => {
  // The store written into the origin-private file system and opened through "Open a folder…"
  // (a real FileSystemDirectoryHandle; headless Chromium shows no picker, so showDirectoryPicker
  // answers that folder's handle), followed as a folder opened so is; then the folder of the run
  // at the view's top is deleted, as a person tidying a sweep deletes one.
  const { page, seen } = await pickerPage(browser, origin);
  await writeOpfs(page, filesUnder(join(root, rel)).map((f) => [f, `${origin}/${rel}/${f}`, false]));
  await page.click("#pick-dir");
  await runTableShown(page, RUNS, 120_000);
  await page.waitForSelector("#verdict-headline");
  assert.equal(await page.isChecked("#live"), true, "a folder opened by its handle is followed");
  // Scrolled so the top row is cut by the view's top: the run below it begins inside the view.
  await scrollBy(page, 4000);
  for (let k = 0; k < 5; k++) {
    const [a, b] = await inView(page);
    if (a.top < -5 && b.top > 5) break;
    await scrollBy(page, a.top + Math.round((b.top - a.top) / 2));
  }
  const before = await inView(page);
  assert.ok(before.length > 5 && before[0].top < 0 && before[1].top > 0, `rows in view: ${JSON.stringify(before.slice(0, 2))}`);
  const gone = before[0].run;
  await page.evaluate(async (run) => {
    const runs = await (await globalThis.opfsStore()).getDirectoryHandle("runs");
    await runs.removeEntry(run, { recursive: true });
  }, gone);
  await page.waitForFunction((n) => document.querySelector("#runs").dataset.runs === String(n), RUNS - 1, { timeout: 60_000 });
  await frames(page);
  const after = await inView(page);
  // Every run that was below the deleted one in view is where it was (keeping the scroll alone
  // would have moved each up by a row).
  const kept = before.slice(1);
  const at = after.findIndex((r) => r.run === kept[0].run);
  assert.ok(at >= 0, `${kept[0].run} is still in view`);
  // (To a pixel: scrollTop is set in whole device pixels and the rows are fractions high.)
  const moved = after.slice(at, at + kept.length - 1);
  assert.deepEqual(moved.map((r) => r.run), kept.slice(0, -1).map((r) => r.run), "the same runs below the deleted one");
  moved.forEach((r, k) => assert.ok(Math.abs(r.top - kept[k].top) <= 1, `${r.run} at ${r.top} px, was at ${kept[k].top} px`));
  assert.ok(!after.some((r) => r.run === gone), "the deleted run is gone from the view");
  const view = await drawn(page);
  assert.ok(view.covered, "the view is covered by drawn rows");
  const left = want.filter((r) => r.run !== gone);
  view.rows.forEach((r, k) => {
    assert.equal(r.index, view.rows[0].index + k);
    assert.equal(r.run, left[r.index - 2].run, `row ${r.index}`);
    assert.equal(r.health, healthText(left[r.index - 2]), `row ${r.index}'s health`);
  });
  assert.equal(await page.textContent("#error"), "");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("400 runs in larger type: the table built while the view is hidden is measured once it is shown, rows and spacers adding up to every row", async () => {
  // Rows taller than the table's first guess of a row's height (a page or a notebook theme
  // with larger type): set by a constructed style sheet before the page's scripts run.
  const { page, seen } = await openPage(browser, "about:blank");
  await page.addInitScript(() => {
    document.addEventListener("DOMContentLoaded", () => {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync("#runs-table { font-size: 22px; }");
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    });
  });
  await page.goto(`${origin}/www/index.html?store=${encodeURIComponent(`/${rel}/`)}`);
  await runTableShown(page, RUNS, 120_000);
  await page.waitForSelector("#verdict-headline");
  await frames(page);
  const sums = () => page.evaluate(() => {
    const box = document.querySelector("#runs");
    const [above, below] = [...box.querySelectorAll(".spacer")].map((s) => s.getBoundingClientRect().height);
    const hs = [...box.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.getBoundingClientRect().height);
    return { above, below, drawn: hs.reduce((a, b) => a + b, 0), n: hs.length, min: Math.min(...hs), max: Math.max(...hs) };
  });
  const s = await sums();
  assert.ok(s.min > 34, `rows ${s.min} px high, taller than the first guess (28 px)`);
  // Rows differ by a fraction of a pixel (layout rounds each), so every row is `n` rows of the
  // drawn rows' mean height, give or take that spread on each (28 px guessed: 4,800 px short).
  assert.ok(s.max - s.min < 1, `rows ${s.min}–${s.max} px high`);
  const whole = RUNS * (s.drawn / s.n);
  const slack = RUNS * (s.max - s.min) + 2;
  assert.ok(Math.abs(s.above + s.drawn + s.below - whole) < slack,
    `spacers ${s.above} + rows ${s.drawn} + ${s.below} px, every row ${whole} ± ${slack} px`);
  // Scrolled through, the view is covered at every step and every run is seen once, in order.
  const { rows } = await everyRow(page, await drawn(page));
  assert.deepEqual(rows.map((r) => [r.run, r.health]), want.map((r) => [r.run, healthText(r)]));
  assert.deepEqual(seen.errors, []);
  await page.close();
});
