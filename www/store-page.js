// The store view: runs table, and for a run its progress, verdict, profile, overlaid graph, spent, gantt and machines.
import * as adapter from "./store-adapter.js";
import { el, fill, table } from "./dom.js";
import { clear, draw } from "./figure.js";
import { verdict as verdictOf } from "../pkg/browser.js";
import { showVerdict } from "./verdict-view.js";
import { RunsView } from "./runs-view.js";

const $ = (id) => document.getElementById(id);
/** A run of more forwards than this is long: its forwards are offered, and it is judged, over the last BIG_WINDOW unless asked otherwise. */
export const BIG_RUN = 5000;
const BIG_WINDOW = 1000;
let current = null; // {store, run, ctx, timer}

/** Close the open store (if any) and stop following it. */
export function stopStore() {
  if (!current) return;
  clearTimeout(current.timer);
  current.following = false;
  current.view?.close();
  current.store.close?.().catch(() => {});
  current = null;
}

/** After the browser painted what the DOM holds now (a frame, then the task after it); at most
 * 50 ms later where frames do not come (a hidden tab, or an iframe scrolled out of the window,
 * as a notebook widget's often is: 60 Hz gives three frames in that time). */
const nextPaint = () => new Promise((resolve) => {
  requestAnimationFrame(() => setTimeout(resolve, 0));
  setTimeout(resolve, 50);
});

/** Draw figure `name` into `container`, or say there why it could not be drawn. */
function figureInto(container, name, options) {
  return drawInto(container, name, () => adapter.figure(current.store, name, options));
}

/** Draw the figure `get()` gives into `container`, or say there why it could not be drawn. */
async function drawInto(container, name, get) {
  const failed = (e) => {
    clear(container);
    fill(container, el("p", { class: "error" }, `${name}: ${e.message}`));
  };
  try {
    await draw(container, await get(), failed);
  } catch (e) {
    failed(e);
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
  const same = select.options.length === values.length &&
    values.every((v, i) => select.options[i].value === String(v) && select.options[i].textContent === label(v));
  if (same) return; // unchanged (a store followed live): what is chosen stays, nothing rebuilt
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

/** A figure of one node's measurement over the forwards (`[[forward, value]]` from `history`),
 * laid out as the core's figures are. */
export function historyFigure(pairs, run, node, of) {
  return {
    data: [{
      type: "scatter", mode: pairs.length > 1 ? "lines" : "markers", name: of,
      x: pairs.map((p) => p[0]), y: pairs.map((p) => p[1]),
      line: { color: "#0072b2", width: 1.5 }, marker: { color: "#0072b2" },
      hovertemplate: `forward %{x}<br>${of} %{y}<extra>${node}</extra>`,
    }],
    layout: {
      title: { text: `${of} of ${node} over the forwards of run ${run}` },
      font: { family: "system-ui, sans-serif", size: 13 },
      margin: { l: 64, r: 24, t: 56, b: 56 },
      hovermode: "closest", showlegend: false,
      xaxis: { title: { text: "forward" }, automargin: true },
      yaxis: { title: { text: of }, automargin: true },
    },
  };
}

/** The node names of `seen` (`{node: {…}}` or `[{name, …}]`), in its order. */
function nodesOf(seen) {
  return Array.isArray(seen) ? seen.map((n) => n.name) : Object.keys(seen ?? {});
}

/** The numeric metrics `seen` has for `node`, sorted. */
function metricsOfNode(seen, node) {
  const row = Array.isArray(seen) ? seen.find((n) => n.name === node)?.metrics : seen?.[node];
  return Object.entries(row ?? {}).filter(([, v]) => typeof v === "number" || v === null).map(([k]) => k).filter((k) => k !== "kind").sort();
}

/** Offer the measurements of the chosen node, keeping the one chosen when it has it. */
function historyOptions() {
  const node = $("history-node").value;
  const ms = metricsOfNode(current.seen, node);
  const keep = $("history-of").value;
  options($("history-of"), ms);
  if (!ms.includes(keep)) $("history-of").value = ms.includes($("measure").value) ? $("measure").value : (ms[0] ?? "");
}

/** Draw the chosen node's chosen measurement over the run. */
async function drawHistory() {
  const { store, run } = current;
  const node = $("history-node").value;
  const of = $("history-of").value;
  const box = $("fig-history");
  if (!node || !of) {
    clear(box);
    fill(box, el("p", {}, "No node measured in this run."));
    return;
  }
  await drawInto(box, "history", async () => historyFigure(await adapter.history(store, run, node, of, lastN()), run, node, of));
}

/** The verdict folded onto the graph's nodes (`[[node, [flag]]]`), as a table. */
function showWhere(folded) {
  fill($("where"), folded.length
    ? table("Where: the verdict folded onto the graph's nodes", [
      { key: "node", label: "Node" },
      { key: "flags", label: "Flags", cell: (r) => r.flags.join(", ") },
    ], folded.map(([node, flags]) => ({ node, flags: (Array.isArray(flags) ? flags : [flags]).map(String) })), { id: "where-table" })
    : el("p", { id: "where-none" }, "Where: no node is flagged."));
}

/** The run table (every run's health; choosing runs to compare) and the run select (the chosen run stays chosen). */
function showRuns(runs) {
  current.view.show(runs);
  options($("run"), runs.map((r) => r.run ?? r.name));
}

/** Open `source` and show its runs; the first run is chosen. */
export async function showStore(source, label, ctx) {
  stopStore();
  const store = await ctx.busy(`Opening ${label}…`, () => adapter.openStore(source));
  current = { store, run: null, ctx, label };
  current.view = new RunsView(store, {
    onOpen: (run) => {
      $("run").value = run;
      showRun(run);
    },
    onStatus: (text) => { $("status").textContent = text; },
  });
  adapter.onSkipped((what, skipped) => {
    $("status").textContent = `${what}: ${skipped.length} unreadable part${skipped.length === 1 ? "" : "s"} left out (${skipped.slice(0, 3).map(skipText).join("; ")}${skipped.length > 3 ? "; …" : ""})`;
  });
  // Every run with its health where the store keeps a summary (one read); the others are
  // judged one by one once the chosen run is shown.
  const runs = await ctx.busy(`Listing the runs of ${label}…`, () => adapter.compare(store, { lazy: true }));
  $("store-title").textContent = `Store: ${label}`;
  showRuns(runs);
  current.runs = runs;
  if (runs.length) $("run").value = String(runs.at(-1).run ?? runs.at(-1).name); // the latest written
  if (ctx.run && runs.some((r) => String(r.run ?? r.name) === ctx.run)) $("run").value = ctx.run; // the one asked for
  $("store-view").hidden = false;
  $("run").onchange = () => showRun($("run").value);
  if ($("progress-section")) $("progress-section").hidden = false; // a page embedding these modules may have none
  $("measure").onchange = () => {
    $("measure").dataset.chosen = "true";
    figureInto($("fig-profile"), "profile", { run: current.run, of: $("measure").value, thresholds: current.thresholds, last: lastN() });
  };
  $("last").onchange = () => {
    $("last").dataset.chosen = "true";
    delete $("last").dataset.auto;
    showRun(current.run);
  };
  $("history-node").onchange = () => {
    $("history-node").dataset.chosen = "true";
    historyOptions();
    drawHistory();
  };
  $("history-of").onchange = () => drawHistory();
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
  const view = current?.view;
  if (view && current.store === store) {
    await view.drawOverlay();
    view.fillHealth().catch((e) => { $("status").textContent = `Judging the runs: ${e.message}`; });
  }
}

/** The window judged: `last` forwards, or every forward when the field is empty. */
function lastN() {
  const n = Math.floor(Number($("last").value));
  return $("last").value.trim() !== "" && n >= 1 ? n : undefined;
}

/** Offer the run's forwards (the last BIG_WINDOW of a long run) for the gantt, and the fields
 * they summarise for the progress; what was chosen stays chosen. */
async function forwardChoices(run) {
  const info = current.runs?.find((r) => String(r.run ?? r.name) === run);
  const big = (info?.forwards ?? 0) > BIG_RUN;
  $("forward-note").textContent = big ? `(the last ${BIG_WINDOW.toLocaleString("en-US")} of ${info.forwards.toLocaleString("en-US")})` : "";
  const forwards = await (big ? adapter.lastForwards(current.store, run, BIG_WINDOW) : adapter.forwards(current.store, run)).catch(() => []);
  // One entry per forward number (several writers may each have written one).
  options($("forward"), [...new Set(forwards.map((f) => f.forward ?? f.number).filter((n) => n !== undefined))]);
  const fields = [...new Set(forwards.flatMap((f) => Object.keys(f).filter((k) => k.includes("."))))].sort();
  options($("field"), fields.length ? fields : ["loss.value"]);
  current.view.setFields(fields);
  if (fields.includes("loss.value") && $("field").dataset.chosen !== "true") $("field").value = "loss.value";
}

/** Show one run: progress, verdict and health figures (re-judged by the thresholds editor), and the rest. */
async function showRun(run) {
  const { store, ctx } = current;
  current.run = run;
  await ctx.busy(`Reading run ${run}…`, async () => {
    // A long run: its forwards are offered and judged over the last BIG_WINDOW unless asked.
    const info = current.runs?.find((r) => String(r.run ?? r.name) === run);
    const big = (info?.forwards ?? 0) > BIG_RUN;
    if (big && $("last").dataset.chosen !== "true" && $("last").value.trim() === "") {
      $("last").value = String(BIG_WINDOW);
      $("last").dataset.auto = "true";
    } else if (!big && $("last").dataset.auto === "true") {
      $("last").value = "";
      delete $("last").dataset.auto;
    }
    current.view.markOpened(run);
    await forwardChoices(run);
    $("last-note").textContent = big && $("last").dataset.auto === "true"
      ? `Run ${run} has ${info.forwards.toLocaleString("en-US")} forwards: its health is judged over the last ${BIG_WINDOW.toLocaleString("en-US")} (empty the field to judge them all).`
      : "";
    const seen = await adapter.seen(store, run, lastN()).catch(() => []);
    current.seen = seen;
    const measures = metricsOf(seen);
    options($("measure"), measures);
    if (!measures.includes($("measure").value) || $("measure").dataset.chosen !== "true") {
      if (measures.includes("grad_norm")) $("measure").value = "grad_norm";
    }
    $("store-figures").hidden = false;
    const nodes = nodesOf(seen);
    options($("history-node"), nodes);
    if (!nodes.includes($("history-node").value) || $("history-node").dataset.chosen !== "true") {
      $("history-node").value = nodes.find((n) => metricsOfNode(seen, n).includes($("measure").value)) ?? nodes[0] ?? "";
    }
    historyOptions();
    // The verdict first, then progress, then where and when.
    await ctx.setJudge((thresholds) => judgeRun(run, thresholds));
    await nextPaint(); // the verdict's figures painted before the rest is worked out
    await figureInto($("fig-progress"), "progress", progressOptions(run));
    await drawHistory();
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
  // One question (the package's judge: one read, one verdict, one check that the run did not
  // grow), then the verdict and where tables, then the three figures.
  const got = await adapter.judge(current.store, run, thresholds, last, $("measure").value);
  const { diagnose: d, alerts, where } = got;
  if (d.error) fill($("verdict"), el("p", { class: "error" }, `diagnose: ${d.error.message}`));
  else {
    const f = d.ok.forwards;
    const over = typeof f?.count === "number"
      ? `${f.count} forward${f.count === 1 ? "" : "s"}${f.count ? ` (${f.first}–${f.last})` : ""} of run ${run}`
      : `run ${run}`;
    showVerdict($("verdict"), d.ok.verdict, d.ok.thresholds, `Judged over ${over}${last ? ` (the last ${last})` : ""}.`, alerts.ok ?? null);
  }
  if (where.error) fill($("where"), el("p", { class: "error" }, `where: ${where.error.message}`));
  else showWhere(where.ok);
  // The tables first (the answer people read) and painted, then the figures.
  await nextPaint();
  const part = (p) => () => (p.error ? Promise.reject(p.error) : p.ok);
  await Promise.all([
    drawInto($("fig-profile"), "profile", part(got.profile)),
    drawInto($("fig-flags"), "flags", part(got.flags)),
    drawInto($("fig-overlaid"), "overlaid", part(got.overlaid)),
  ]);
  // Judged and shown (the figures on screen drawn, the others waiting to be): counted, so that a
  // test or benchmark can tell one judgement from the next.
  $("verdict").dataset.judged = String(Number($("verdict").dataset.judged ?? 0) + 1);
}

/** Follow the store live: 2 s after each look, see new files, and redraw the runs table and
 * the progress (a look that takes longer delays the next; looks never overlap). A look that
 * finds nothing changed asks nothing more: with 1,000 runs each answer asked again cost the
 * worker up to a second, which the overlay's redraws waited behind. */
function follow(on) {
  clearTimeout(current?.timer);
  if (!current) return;
  current.following = on;
  if (!on) return;
  const followed = current;
  const look = async () => {
    if (current !== followed || !followed.following) return;
    try {
      // Nothing the page read changed (a directory handle can tell): nothing to ask again.
      if ((await adapter.refresh(followed.store))?.unchanged) {
        if (current === followed && followed.following) followed.timer = setTimeout(look, 2000);
        return;
      }
      const runs = await adapter.compare(followed.store, { lazy: true });
      if (current !== followed) return;
      showRuns(runs);
      followed.runs = runs;
      followed.view.fillHealth().catch(() => {});
      if (!followed.run && runs.length) await showRun(String(runs.at(-1).run ?? runs.at(-1).name));
      else if (followed.run) {
        $("run").value = followed.run;
        await forwardChoices(followed.run);
        await figureInto($("fig-progress"), "progress", progressOptions(followed.run));
      }
    } catch (e) {
      $("status").textContent = `Following ${followed.label}: ${e.message}`;
    }
    if (current === followed && followed.following) followed.timer = setTimeout(look, 2000);
  };
  followed.timer = setTimeout(look, 2000);
}
