// The store view: runs table, and for a run its progress, verdict, profile, overlaid graph, spent, gantt and machines.
import * as adapter from "./store-adapter.js";
import { el, fill, table } from "./dom.js";
import { duration, numData } from "./format.js";
import { draw } from "./figure.js";
import { verdict as verdictOf } from "../pkg/browser.js";
import { showVerdict } from "./verdict-view.js";

const $ = (id) => document.getElementById(id);
let current = null; // {store, run, ctx, timer}

/** Close the open store (if any) and stop following it. */
export function stopStore() {
  if (!current) return;
  clearInterval(current.timer);
  current.store.close?.().catch(() => {});
  current = null;
}

/** A cell for a value of unknown type from a store: times and durations readable, numbers
 * readable, the rest as text. */
function cell(v, key = "") {
  const when = typeof v === "number" && /written_us$/.test(key) ? new Date(v / 1000) : null;
  if (when && Number.isFinite(when.getTime())) {
    const iso = when.toISOString();
    return el("time", { datetime: iso }, `${iso.slice(0, 10)} ${iso.slice(11, 19)}`);
  }
  if (typeof v === "number" && /_us$/.test(key)) {
    const d = numData(v);
    d.textContent = duration(v);
    return d;
  }
  if (typeof v === "number") return numData(v);
  if (v === null || v === undefined) return "–";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** Draw figure `name` into `container`, or say there why it could not be drawn. */
async function figureInto(container, name, options) {
  try {
    await draw(container, await adapter.figure(current.store, name, options));
  } catch (e) {
    delete container.dataset.drawn;
    globalThis.Plotly?.purge(container); // plotly keeps state on the element; start afresh next time
    fill(container, el("p", { class: "error" }, `${name}: ${e.message}`));
  }
}

/** The numeric metric names seen in a run (`{node: {metric: v}}` or `[{name, kind, metrics}]`), for the profile's select. */
function metricsOf(seen) {
  const nodes = Array.isArray(seen) ? seen.map((n) => n.metrics ?? {}) : Object.values(seen ?? {});
  const names = new Set();
  for (const n of nodes) for (const [k, v] of Object.entries(n)) if (typeof v === "number") names.add(k);
  return [...names].sort();
}

/** Throw the core's message when it would refuse these thresholds (judging nothing costs nothing). */
function validThresholds(thresholds) {
  verdictOf([], thresholds);
}

function options(select, values, label = String) {
  const keep = select.value;
  fill(select, values.map((v) => el("option", { value: String(v) }, label(v))));
  if (values.map(String).includes(keep)) select.value = keep;
}

/** A skipped part of a store in words: where, then the store's reason. */
function skipText(s) {
  const where = [s.run, s.writer, s.forward !== undefined ? `forward ${s.forward}` : null, s.line !== undefined ? `line ${s.line}` : null];
  return `${where.filter((w) => w !== null && w !== undefined).join(", ")}: ${s.reason ?? JSON.stringify(s)}`;
}

/** The progress figure's options from the controls. */
const progressOptions = (run) => ({
  run, of: $("field").value || undefined, smooth: Math.max(0, Math.floor(Number($("smooth").value) || 0)),
});

/** Open `source` and show its runs; the first run is chosen. */
export async function showStore(source, label, ctx) {
  stopStore();
  const store = await ctx.busy(`Opening ${label}…`, () => adapter.openStore(source));
  current = { store, run: null, ctx, label };
  adapter.onSkipped((what, skipped) => {
    $("status").textContent = `${what}: ${skipped.length} unreadable part${skipped.length === 1 ? "" : "s"} left out (${skipped.slice(0, 3).map(skipText).join("; ")}${skipped.length > 3 ? "; …" : ""})`;
  });
  const runs = await ctx.busy(`Listing the runs of ${label}…`, () => adapter.runs(store));
  $("store-title").textContent = `Store: ${label}`;
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r)))];
  const cols = keys.map((k) => ({ key: k, label: k, numeric: runs.some((r) => typeof r[k] === "number"), cell: (r) => cell(r[k], k) }));
  fill($("runs"), runs.length ? table(`${runs.length} run${runs.length === 1 ? "" : "s"}`, cols, runs, { id: "runs-table" }) : el("p", {}, "This store has no run yet."));
  options($("run"), runs.map((r) => r.run ?? r.name));
  if (runs.length) $("run").value = String(runs.at(-1).run ?? runs.at(-1).name); // the latest written
  $("store-view").hidden = false;
  $("run").onchange = () => showRun($("run").value);
  $("measure").onchange = () => {
    $("measure").dataset.chosen = "true";
    figureInto($("fig-profile"), "profile", { run: current.run, of: $("measure").value, thresholds: current.thresholds, last: lastN() });
  };
  $("last").onchange = () => showRun(current.run);
  $("forward").onchange = () => figureInto($("fig-gantt"), "gantt", { run: current.run, forward: Number($("forward").value) });
  $("field").onchange = () => {
    $("field").dataset.chosen = "true";
    figureInto($("fig-progress"), "progress", progressOptions(current.run));
  };
  $("smooth").onchange = () => figureInto($("fig-progress"), "progress", progressOptions(current.run));
  $("live").checked = ctx.live;
  $("live").onchange = () => follow($("live").checked);
  follow(ctx.live);
  $("status").textContent = `Opened ${label}: ${runs.length} run${runs.length === 1 ? "" : "s"}.`;
  if (runs.length) await showRun($("run").value);
}

/** The window judged: `last` forwards, or every forward when the field is empty. */
function lastN() {
  const n = Math.floor(Number($("last").value));
  return $("last").value.trim() !== "" && n >= 1 ? n : undefined;
}

/** Show one run: progress, verdict and health figures (re-judged by the thresholds editor), and the rest. */
async function showRun(run) {
  const { store, ctx } = current;
  current.run = run;
  await ctx.busy(`Reading run ${run}…`, async () => {
    const [seen, forwards] = await Promise.all([
      adapter.seen(store, run, lastN()).catch(() => []),
      adapter.forwards(store, run).catch(() => []),
    ]);
    const measures = metricsOf(seen);
    options($("measure"), measures);
    if (!measures.includes($("measure").value) || $("measure").dataset.chosen !== "true") {
      if (measures.includes("grad_norm")) $("measure").value = "grad_norm";
    }
    // One entry per forward number (several writers may each have written one).
    options($("forward"), [...new Set(forwards.map((f) => f.forward ?? f.number).filter((n) => n !== undefined))]);
    const fields = [...new Set(forwards.flatMap((f) => Object.keys(f).filter((k) => k.includes("."))))].sort();
    options($("field"), fields.length ? fields : ["loss.value"]);
    if (fields.includes("loss.value") && $("field").dataset.chosen !== "true") $("field").value = "loss.value";
    await figureInto($("fig-progress"), "progress", progressOptions(run));
    $("store-figures").hidden = false;
    await ctx.setJudge((thresholds) => judgeRun(run, thresholds));
    await figureInto($("fig-spent"), "spent", { run, last: lastN() });
    await figureInto($("fig-gantt"), "gantt", { run, forward: Number($("forward").value) });
    await figureInto($("fig-machines"), "machines", { run, last: lastN() });
  });
  $("status").textContent = `Showing run ${run} of ${current.label}.`;
}

/**
 * The verdict on the run at `thresholds` and the figures that draw it (profile, flags, overlaid).
 * Thresholds the core refuses throw (the editor shows the message); a store that cannot answer
 * is said in the verdict's place.
 */
async function judgeRun(run, thresholds) {
  validThresholds(thresholds);
  current.thresholds = thresholds;
  const last = lastN();
  try {
    const got = await adapter.diagnose(current.store, run, thresholds, last);
    const f = got.forwards;
    const over = typeof f?.count === "number"
      ? `${f.count} forward${f.count === 1 ? "" : "s"}${f.count ? ` (${f.first}–${f.last})` : ""} of run ${run}`
      : `run ${run}`;
    showVerdict($("verdict"), got.verdict, got.thresholds, `Judged over ${over}${last ? ` (the last ${last})` : ""}.`);
  } catch (e) {
    fill($("verdict"), el("p", { class: "error" }, `diagnose: ${e.message}`));
  }
  await Promise.all([
    figureInto($("fig-profile"), "profile", { run, of: $("measure").value, thresholds, last }),
    figureInto($("fig-flags"), "flags", { run, thresholds, last }),
    figureInto($("fig-overlaid"), "overlaid", { run, thresholds, last }),
  ]);
}

/** Follow the store live: every 2 s, see new files and redraw the progress. */
function follow(on) {
  clearInterval(current?.timer);
  if (!on || !current) return;
  current.timer = setInterval(async () => {
    if (!current?.run) return;
    await adapter.refresh(current.store);
    await figureInto($("fig-progress"), "progress", progressOptions(current.run));
  }, 2000);
}
