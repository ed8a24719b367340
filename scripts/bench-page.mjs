#!/usr/bin/env node
// The page on a run of 100,000 forwards, in headless Chromium: how long it takes to open the
// store, draw the progress and be fully shown, and how long each interaction takes (hover, zoom,
// choosing a measurement, a node, a forward, editing a threshold). Medians over ROUNDS page
// loads (BENCH_ROUNDS, default 5), each interaction repeated within a load. The baseline,
// measured in the same run: a health figure asked of a store that has read nothing yet (what
// every health question cost before a run's read was kept) against the same asked again.
//
//   node scripts/bench-page.mjs [--forwards N] [--regen]
//
// The store is written by the real writer (`cargo run --example page_bench_store`) into
// target/bench-page/store once and reused (--regen writes it again); it is served as plain
// files by the test harness's static server. Needs `scripts/build-wasm.sh` first.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { serve, launch, root } from "../tests/browser/harness.mjs";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const FORWARDS = Number(flag("--forwards", 100000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REPEAT = 5; // each interaction, per page load
const rel = `target/bench-page/store-${FORWARDS}`;
const store = join(root, rel);

function ensureStore() {
  const index = join(store, "runs/long/w0/index.jsonl");
  const lines = existsSync(index) ? readFileSync(index, "utf8").split("\n").filter(Boolean).length : 0;
  if (lines === FORWARDS && !args.includes("--regen")) return;
  console.error(`writing ${FORWARDS} forwards into ${rel} (the real writer)…`);
  execFileSync("cargo", ["run", "--quiet", "--example", "page_bench_store", "--", store, String(FORWARDS)],
    { cwd: root, stdio: "inherit" });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};

/** Milliseconds `f` takes, by the page's clock. */
async function timed(f) {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Where on the screen a drawn point of trace 0 of a figure is (the fraction `f` along it). */
function pointAt(page, id, f) {
  return page.evaluate(([id, f]) => {
    const gd = document.getElementById(id);
    const t = gd._fullData[0];
    const i = Math.floor(f * (t.x.length - 1));
    const { xaxis, yaxis, margin } = gd._fullLayout;
    const box = gd.getBoundingClientRect();
    return { x: box.left + margin.l + xaxis.l2p(t.x[i]), y: box.top + margin.t + yaxis.l2p(t.y[i]) };
  }, [id, f]);
}

/** Hover a point of a figure (a different one each time) until its hover label shows. */
async function hover(page, id, k) {
  const p = await pointAt(page, id, 0.3 + 0.1 * k);
  await page.mouse.move(0, 0);
  await page.waitForFunction((id) => !document.querySelector(`#${id} .hoverlayer .hovertext`), id);
  return timed(async () => {
    await page.mouse.move(p.x, p.y);
    await page.waitForSelector(`#${id} .hoverlayer .hovertext`);
  });
}

/** Zoom a figure to a tenth of its x range and back (as a drag and a double click do), in the page. */
function zoom(page, id, k) {
  return page.evaluate(async ([id, k]) => {
    const gd = document.getElementById(id);
    const [lo, hi] = gd._fullLayout.xaxis.range;
    const w = (hi - lo) / 10;
    const a = lo + (hi - lo) * (0.1 + 0.15 * k);
    const t0 = performance.now();
    await Plotly.relayout(gd, { "xaxis.range": [a, a + w] });
    await new Promise((r) => requestAnimationFrame(() => r()));
    const t1 = performance.now();
    await Plotly.relayout(gd, { "xaxis.autorange": true });
    await new Promise((r) => requestAnimationFrame(() => r()));
    return [t1 - t0, performance.now() - t1];
  }, [id, k]);
}

/**
 * The same interaction timed by the page's own clock, without playwright's round trips: from
 * setting control `id` to `value` (and its `event`) to what `until` says, each of:
 * `{title: [figureId, text]}` (the figure's title includes the text), `{changed: figureId}` (its
 * data changed), `{judged: true}` (the page counted one more judgement shown: the verdict and
 * the health figures on screen drawn, those off screen waiting) or `{text: elementId}` (its text
 * changed).
 * Covers the handler, the worker's answer and plotly's drawing. One time per condition, in the
 * order given. The control is first scrolled to the middle of the window, as a person sees it.
 */
function inPage(page, id, value, event, ...until) {
  return page.evaluate(async ([id, value, event, until]) => {
    const data = (f) => JSON.stringify(document.getElementById(f).data);
    const text = (e) => document.getElementById(e)?.textContent;
    const judged = () => document.getElementById("verdict").dataset.judged;
    const before = until.map((u) => (u.changed ? data(u.changed) : u.judged ? judged() : u.text ? text(u.text) : null));
    const done = (u, i) => (u.title
      ? document.querySelector(`#${u.title[0]} .gtitle`)?.textContent.includes(u.title[1])
      : u.changed ? data(u.changed) !== before[i]
        : u.judged ? judged() !== before[i] : text(u.text) !== before[i]);
    const control = document.getElementById(id);
    control.scrollIntoView({ block: "center" });
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const times = until.map(() => null);
    const t0 = performance.now();
    control.value = value;
    control.dispatchEvent(new Event(event, { bubbles: true }));
    while (times.includes(null)) {
      until.forEach((u, i) => {
        if (times[i] === null && done(u, i)) times[i] = performance.now() - t0;
      });
      if (times.includes(null)) await new Promise((r) => setTimeout(r, 0));
    }
    return times.length === 1 ? times[0] : times;
  }, [id, value, event, until]);
}

/** Scroll control `sel` to the middle of the window, as a person has it when using it (the page
 * draws only the figures on screen). */
const center = (page, sel) => page.locator(sel).evaluate((el) => el.scrollIntoView({ block: "center" }));

/** The health figures a threshold edit changes. */
const HEALTH = ["fig-profile", "fig-flags", "fig-overlaid"];

/** Each health figure left waiting off screen, scrolled into view: ms (the page's clock) from
 * the scroll to the figure drawn. Then back to the top of the page. */
async function scrolledIn(page) {
  const times = await page.evaluate(async (ids) => {
    const out = [];
    for (const f of ids.map((id) => document.getElementById(id))) {
      if (f.dataset.drawn !== "waiting") continue;
      const t0 = performance.now();
      f.scrollIntoView({ block: "center" });
      while (f.dataset.drawn === "waiting") await new Promise((r) => setTimeout(r, 0));
      out.push(performance.now() - t0);
    }
    return out;
  }, HEALTH);
  await page.evaluate(() => scrollTo(0, 0));
  return times;
}

/** One page load: open, then each interaction REPEAT times. */
async function round(browser, origin) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${origin}/www/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  const out = {};
  const t0 = performance.now();
  await page.fill("#store-url", `${origin}/${rel}/`);
  await page.click("#url-form button");
  await page.waitForSelector("#runs-table");
  out.open = performance.now() - t0;
  // The progress sits below the opened run's verdict: it is drawn when it comes into view (asked
  // for, then waiting), so "progress drawn" is its figure given to the page.
  await page.waitForSelector("#fig-progress[data-drawn=true], #fig-progress[data-drawn=waiting]", { timeout: 600_000 });
  out.progress = performance.now() - t0;
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Showing run"), null, { timeout: 600_000 });
  out.shown = performance.now() - t0;
  if (errors.length || (await page.textContent("#error"))) throw new Error(`the page failed: ${errors.join("; ")} ${await page.textContent("#error")}`);
  const acts = { hover: [], zoomIn: [], zoomOut: [], measure: [], node: [], forward: [], threshold: [], hoverHistory: [],
    measureIn: [], nodeIn: [], forwardIn: [], verdictIn: [], thresholdIn: [], onScreen: [], scrolled: [] };
  const measures = await page.locator("#measure option").allTextContents();
  const nodes = await page.locator("#history-node option").allTextContents();
  const forwards = await page.locator("#forward option").allTextContents();
  for (let k = 0; k < REPEAT; k++) {
    await page.locator("#fig-progress").scrollIntoViewIfNeeded();
    acts.hover.push(await hover(page, "fig-progress", k));
    const [zin, zout] = await zoom(page, "fig-progress", k);
    acts.zoomIn.push(zin);
    acts.zoomOut.push(zout);
    const m = measures[(k + 1) % measures.length];
    await center(page, "#measure");
    acts.measure.push(await timed(async () => {
      await page.selectOption("#measure", m);
      await page.waitForFunction((m) => document.querySelector("#fig-profile .gtitle")?.textContent.includes(m), m);
    }));
    const n = nodes[(k + 1) % nodes.length];
    await center(page, "#history-node");
    acts.node.push(await timed(async () => {
      await page.selectOption("#history-node", n);
      await page.waitForFunction((n) => document.querySelector("#fig-history .gtitle")?.textContent.includes(` of ${n} `), n);
    }));
    await page.locator("#fig-history").scrollIntoViewIfNeeded();
    acts.hoverHistory.push(await hover(page, "fig-history", k));
    const f = forwards[forwards.length - 1 - k];
    await center(page, "#forward");
    acts.forward.push(await timed(async () => {
      await page.selectOption("#forward", f);
      await page.waitForFunction((f) => document.querySelector("#fig-gantt .gtitle")?.textContent.includes(f), f);
    }));
    // A threshold edit: the verdict and the health figures on screen redrawn (those off screen
    // wait to be scrolled into view).
    const before = await page.getAttribute("#verdict", "data-judged");
    await center(page, "#t-vanishing_mean_abs");
    acts.threshold.push(await timed(async () => {
      await page.fill("#t-vanishing_mean_abs", String(k % 2 ? 1e-3 : 1));
      await page.waitForFunction((b) => document.getElementById("verdict").dataset.judged !== b, before);
    }));
    acts.onScreen.push(await page.evaluate((ids) => ids.filter((f) => document.getElementById(f).dataset.drawn === "true").length, HEALTH));
    acts.scrolled.push(...await scrolledIn(page));
    // The same four, timed in the page (other values, so nothing is answered from a cache).
    await page.waitForTimeout(1100); // as a person would: past the second a freshness check is trusted
    const m2 = measures[(k + 3) % measures.length];
    acts.measureIn.push(await inPage(page, "measure", m2, "change", { title: ["fig-profile", m2] }));
    await page.waitForTimeout(1100);
    const n2 = nodes[(k + 3) % nodes.length];
    acts.nodeIn.push(await inPage(page, "history-node", n2, "change", { title: ["fig-history", ` of ${n2} `] }));
    const f2 = forwards[forwards.length - 1 - REPEAT - k];
    acts.forwardIn.push(await inPage(page, "forward", f2, "change", { title: ["fig-gantt", f2] }));
    await page.waitForTimeout(1100);
    // A third bound (no VANISHING at all), unlike both that playwright sets in turn.
    const [verdictShown, figuresShown] = await inPage(page, "t-vanishing_mean_abs", "1e-12", "input",
      { text: "verdict-summary" }, { judged: true });
    acts.verdictIn.push(verdictShown);
    acts.thresholdIn.push(figuresShown);
    acts.scrolled.push(...await scrolledIn(page));
  }
  out.decimated = await page.getAttribute("#fig-progress", "data-decimated");
  for (const [k, v] of Object.entries(acts)) out[k] = median(v);
  out.baseline = await baseline(page, origin);
  await page.close();
  return out;
}

/** The baselines, each pair timed in the page in the same run without drawing:
 * - what choosing a measurement cost before health reads were kept — the profile figure asked
 *   of a store with nothing read yet (one blob fetch per forward judged) — against the same
 *   question asked again of it (the kept read);
 * - a threshold edit as six questions at once (diagnose, alerts, where, three figures; what the
 *   page asked before `judge`) against one `judge`, each after a pause past the second a
 *   freshness check is trusted;
 * - a forward's gantt found by bisecting the index (nothing kept) against one among the lines a
 *   `scan({last: 1000})` kept (what the page offers). */
function baseline(page, origin) {
  return page.evaluate(async (url) => {
    const pkg = await import("/pkg/browser.js");
    const store = await pkg.openStore(url);
    const run = "long";
    const time = async (f) => {
      const t0 = performance.now();
      await f();
      return performance.now() - t0;
    };
    const pause = () => new Promise((r) => setTimeout(r, 1100));
    const ask = (of) => store.figure({ kind: "profile", run, of, last: 1000 });
    const unkept = await time(() => ask("grad_norm"));
    const kept = await time(() => ask("update_ratio"));
    const six = [];
    const judged = [];
    for (let k = 0; k < 3; k++) {
      const thresholds = { vanishing_mean_abs: 10 ** -(k + 2) };
      const o = { run, thresholds, last: 1000 };
      await pause();
      six.push(await time(() => Promise.all([store.diagnose(o), store.alerts(o), store.where(o),
        store.figure({ kind: "profile", of: "grad_norm", ...o }), store.figure({ kind: "flags", ...o }),
        store.figure({ kind: "overlaid", ...o })])));
      await pause();
      judged.push(await time(() => store.judge({ ...o, thresholds: { vanishing_mean_abs: 10 ** -(k + 6) }, of: "grad_norm" })));
    }
    const { rows } = await store.scan({ run, last: 1 });
    const end = rows[0].forward;
    const bisected = [];
    const found = [];
    for (let k = 0; k < 3; k++) bisected.push(await time(() => store.figure({ kind: "gantt", run, forward: end - 1 - k })));
    await store.scan({ run, last: 1000 });
    for (let k = 0; k < 3; k++) found.push(await time(() => store.figure({ kind: "gantt", run, forward: end - 11 - k })));
    await store.close();
    const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    return { unkept, kept, six: med(six), judged: med(judged), bisected: med(bisected), found: med(found) };
  }, `${origin}/${rel}/`);
}

async function main() {
  ensureStore();
  const { server, origin } = await serve();
  const browser = await launch();
  const rounds = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      rounds.push(await round(browser, origin));
      console.error(`round ${r + 1}/${ROUNDS}: ${JSON.stringify(rounds.at(-1))}`);
    }
  } finally {
    await browser.close();
    server.close();
  }
  const med = (f) => median(rounds.map(f));
  const ms = (v) => `${v.toFixed(v < 10 ? 1 : 0)} ms`.padStart(10);
  console.log(`page on a run of ${FORWARDS.toLocaleString("en-US")} forwards (median of ${ROUNDS} page loads, ${REPEAT} of each interaction per load)`);
  console.log(`  the progress drawn decimated: ${rounds[0].decimated} (the core bins a long run's progress)`);
  for (const [name, f] of [
    ["open: runs table shown", (r) => r.open],
    ["progress drawn", (r) => r.progress],
    ["everything shown (health judged)", (r) => r.shown],
  ]) console.log(`  ${name.padEnd(40)} ${ms(med(f))}`);
  console.log("  interactions, by playwright's clock (each includes ~20-40 ms of its own round trips):");
  for (const [name, key] of [
    ["hover on the progress", "hover"],
    ["zoom in (a tenth of the run)", "zoomIn"],
    ["zoom out (autorange)", "zoomOut"],
    ["choose a measurement (profile)", "measure"],
    ["choose a node (history)", "node"],
    ["hover on the history", "hoverHistory"],
    ["choose a forward (gantt)", "forward"],
    ["edit a threshold (verdict, figures on screen)", "threshold"],
  ]) console.log(`  ${name.padEnd(40)} ${ms(med((r) => r[key]))}`);
  console.log("  the same, by the page's clock (from the change to plotly's drawing; after a pause of 1.1 s):");
  for (const [name, key] of [
    ["choose a measurement (profile)", "measureIn"],
    ["choose a node (history)", "nodeIn"],
    ["choose a forward (gantt)", "forwardIn"],
    ["edit a threshold: the verdict table shown", "verdictIn"],
    ["edit a threshold: figures on screen drawn", "thresholdIn"],
    ["a waiting figure scrolled into view, drawn", "scrolled"],
  ]) console.log(`  ${name.padEnd(40)} ${ms(med((r) => r[key]))}`);
  console.log(`  health figures on screen at a threshold edit (playwright's): ${med((r) => r.onScreen)} of ${HEALTH.length}`);
  const unkept = med((r) => r.baseline.unkept);
  const kept = med((r) => r.baseline.kept);
  console.log("  baseline, the profile asked of the worker without drawing (last 1,000 forwards):");
  console.log(`  ${"nothing read yet (as before: every time)".padEnd(40)} ${ms(unkept)}`);
  console.log(`  ${"the read kept".padEnd(40)} ${ms(kept)}   ${(unkept / kept).toFixed(0)}x faster`);
  const pair = (title, a, b, [ka, kb]) => {
    const va = med((r) => r.baseline[ka]);
    const vb = med((r) => r.baseline[kb]);
    console.log(`  ${title}:`);
    console.log(`  ${a.padEnd(40)} ${ms(va)}`);
    console.log(`  ${b.padEnd(40)} ${ms(vb)}   ${(va / vb).toFixed(1)}x faster`);
  };
  pair("a threshold edit's answers, in the worker (kept read, last 1,000)", "six questions at once (before)", "one judge", ["six", "judged"]);
  pair("a forward's gantt, in the worker", "found by bisecting the index (before)", "among the lines kept by scan({last})", ["bisected", "found"]);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
