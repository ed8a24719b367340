// The run table with every run's health, choosing runs (click, shift-click, ctrl-click, a name
// filter or glob) and overlaying their curves (smoothing, x axis, log y, groups by prefix or by a
// recorded config field).
import * as adapter from "./store-adapter.js";
import { el, fill, headRow, tableRow } from "./dom.js";
import { duration, num, numData } from "./format.js";
import { clear, draw } from "./figure.js";

const $ = (id) => document.getElementById(id);
// A page embedding these modules may leave out the overlay's controls (a widget showing only
// the table): a missing control reads as its default and is not wired.
const value = (id, fallback = "") => $(id)?.value ?? fallback;
const setText = (id, text) => {
  const e = $(id);
  if (e) e.textContent = text;
};
const wire = (id, prop, f) => {
  const e = $(id);
  if (e) e[prop] = f;
};
/** With more runs than this, the newest this many are chosen when a store opens. */
export const CHOSEN_AT_OPEN = 20;

/** Whether `name` matches a glob (`*` any characters, `?` one), as the core's `compare`. */
export function globMatch(pattern, name) {
  const p = [...pattern];
  const n = [...name];
  let i = 0;
  let j = 0;
  let star = null;
  while (j < n.length) {
    if (p[i] === "*") {
      star = [i, j];
      i += 1;
    } else if (i < p.length && (p[i] === "?" || p[i] === n[j])) {
      i += 1;
      j += 1;
    } else if (star) {
      star[1] += 1;
      [i, j] = [star[0] + 1, star[1]];
    } else return false;
  }
  return p.slice(i).every((c) => c === "*");
}

/** Whether run `name` passes the filter `text`: a glob when it has `*` or `?`, else a part of the name (any case). */
export function passes(text, name) {
  const t = text.trim();
  if (!t) return true;
  if (/[*?]/.test(t)) return globMatch(t, name);
  return name.toLowerCase().includes(t.toLowerCase());
}

/** The prefixes of the group-by field (separated by spaces or commas). */
export const prefixes = (text) => text.split(/[\s,]+/).filter(Boolean);

/** A run's health at a glance: healthy, each fault's root (flag, node, since), or not judged yet. */
export function healthCell(r) {
  if (r.healthy === true) return el("span", { class: "health ok", dataset: { health: "healthy" } }, "healthy");
  if (r.healthy === false && r.error) return el("span", { class: "health unjudged", dataset: { health: "unjudged" } }, `not judged: ${r.error}`);
  if (r.healthy === false) {
    return el("ul", { class: "health sick", dataset: { health: "sick" } }, (r.flags ?? []).map((f) =>
      el("li", { title: f.advice }, el("strong", { class: "flag" }, f.flag), " at ", el("code", {}, f.node), ` since ${f.since}`)));
  }
  return el("span", { class: "health pending", dataset: { health: "pending" } }, "judging…");
}

/** A cell for a value of unknown type from a store: times and durations readable, numbers readable, the rest as text. */
export function cell(v, key = "") {
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

/** The columns of the run table, in order (labels are the keys, as `somatize compare --json` names them); `config` only when a run records one. */
const COLUMNS = ["run", "health", "config", "final", "best", "forwards", "broke", "writers", "last_written_us", "took_us", "ended_ok"];

/** A run's config as `key=value` pairs (a string as it is, anything else as JSON). */
export function configText(config) {
  return Object.entries(config ?? {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
}

/**
 * How wide (in characters, the `ch` of the table's font) column `key`'s widest cell of `rows`
 * is: the run table draws only the rows in view, so each column is given the width its widest
 * cell needs over every run, and scrolling never changes a column's width.
 */
export function columnChars(key, rows) {
  const longest = (texts) => texts.reduce((m, t) => Math.max(m, t.length), key.length);
  switch (key) {
    case "run": return longest(rows.map((r) => String(r.run))) + 3; // and its checkbox
    case "health": return Math.ceil(1.15 * longest(rows.flatMap((r) => r.healthy === true ? ["healthy"]
      : r.healthy === false && !r.error ? (r.flags ?? []).map((f) => `${f.flag} at ${f.node} since ${f.since}`) : ["judging…"])));
    case "config": return Math.min(40, longest(rows.map((r) => configText(r.config) || "–")));
    case "last_written_us": return 19;
    case "took_us": return longest(rows.map((r) => duration(r[key])));
    default: return longest(rows.map((r) => typeof r[key] === "number" ? num(r[key]) : String(r[key] ?? "–")));
  }
}

/** The rows the run table draws past the part of its box in view, above and below (so a scroll
 * or a Tab lands on rows already drawn). */
export const OVERSCAN = 20;
/** A run row's height in px until one is measured. */
const ROW_PX = 28;

/** The config fields runs can be grouped by: every key of their configs (`a.b` for a key of an object), sorted. */
export function configFields(rows) {
  const keys = new Set();
  for (const r of rows) {
    for (const [k, v] of Object.entries(r.config ?? {})) {
      if (v && typeof v === "object" && !Array.isArray(v)) for (const k2 of Object.keys(v)) keys.add(`${k}.${k2}`);
      else keys.add(k);
    }
  }
  return [...keys].sort();
}

/**
 * The run table and the overlay of the chosen runs, over an open store. `onOpen(run)` is called
 * when a run is opened (clicked); `busy(what, work)` shows long work.
 */
export class RunsView {
  constructor(store, { onOpen, onStatus = () => {} }) {
    this.store = store;
    this.onOpen = onOpen;
    this.onStatus = onStatus;
    this.rows = [];
    this.chosen = new Set();
    this.anchor = null; // the run a shift-click extends from
    this.opened = null;
    this.judging = false;
    this.closed = false;
    this.judged = new Map(); // run -> {key, row}: lazily judged health, kept while the run is unchanged
    for (const id of ["compare-of", "compare-smooth-kind", "compare-smooth", "compare-x", "compare-log", "compare-group", "compare-group-config"]) {
      wire(id, "onchange", () => this.drawOverlay());
    }
    wire("run-filter", "oninput", () => {
      this.applyFilter();
      this.drawOverlay();
    });
    wire("choose-shown", "onclick", () => {
      this.chosen = new Set(this.shown());
      this.markChosen();
      this.drawOverlay();
    });
    wire("choose-none", "onclick", () => {
      this.chosen.clear();
      this.markChosen();
      this.drawOverlay();
    });
  }

  /** Stop judging and drawing (the store was closed). */
  close() {
    this.closed = true;
    this.resized?.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
  }

  /** The rows' names that pass the filter, in table order. */
  shown() {
    const text = value("run-filter");
    return this.rows.map((r) => r.run).filter((name) => passes(text, name));
  }

  /** Show `rows` (compare's, newest last), keeping what is chosen and what was judged. The
   * same rows as last shown (a store followed live that did not change) leave the table as it
   * is: building 1,000 rows again cost the main thread ~150 ms per look, and its garbage. */
  show(rows) {
    const key = JSON.stringify(rows);
    if (key === this.shownKey && $("runs-table")) return;
    this.shownKey = key;
    // A store followed live shows its new rows where its table was scrolled to: the runs in
    // view stay there, however many rows came or went above them.
    const place = this.inView($("runs"));
    const first = this.rows.length === 0;
    // A run judged here keeps its health while unchanged; one being written is judged again
    // at most every REJUDGE_MS (its health shown meanwhile is that of the forwards judged).
    this.rows = rows.map((r) => {
      if (r.healthy !== null) return r;
      const kept = this.judged.get(r.run);
      return kept && (kept.key === keyOf(r) || Date.now() - kept.at < REJUDGE_MS) ? { ...r, ...healthOf(kept.row) } : r;
    });
    if (first) for (const r of this.rows.slice(-CHOSEN_AT_OPEN)) this.chosen.add(r.run);
    const names = new Set(this.rows.map((r) => r.run));
    for (const c of [...this.chosen]) if (!names.has(c)) this.chosen.delete(c);
    const configured = this.rows.some((r) => r.config && Object.keys(r.config).length);
    this.offerConfigFields(configured ? configFields(this.rows) : []);
    this.index = new Map(this.rows.map((r, i) => [r, i])); // row -> its place, for its checkbox's id
    const cols = COLUMNS.filter((key) => key !== "config" || configured).map((key) => ({
      key, label: key, numeric: ["final", "best", "forwards", "broke", "writers", "took_us"].includes(key),
      cell: key === "run" ? (r) => this.runCell(r, this.index.get(r))
        : key === "health" ? healthCell
          : key === "config" ? (r) => configText(r.config) || "–"
            : (r) => cell(r[key], key),
    }));
    this.healthColumn = cols.findIndex((c) => c.key === "health");
    this.cols = cols;
    const n = this.rows.length;
    const box = $("runs");
    box.dataset.runs = String(n);
    this.countPending();
    this.trs = new Map(); // run -> its row, for the rows drawn
    this.heights ??= new Map(); // run -> its row's height measured (px), kept while the store is open
    this.heightSum ??= 0;
    if (!n) {
      this.body = null;
      fill(box, el("p", {}, "This store has no run yet."));
      setText("runs-shown", "");
      return;
    }
    // Only the rows in view (and OVERSCAN more each side) are in the DOM: 1,000 runs drawn
    // whole were 22,000 elements, most of the page's memory and of its time to show the table.
    // The room of the rows not drawn is kept by two spacers, so the box scrolls as over them all.
    const head = headRow(cols);
    cols.forEach((c, i) => { head.children[i].style.minWidth = `${columnChars(c.key, this.rows)}ch`; });
    this.body = el("tbody");
    this.caption = el("p", { class: "caption", id: "runs-caption" },
      `${n} run${n === 1 ? "" : "s"}: click one to open it, shift- or ctrl-click (or tick) to choose several to compare`);
    this.above = el("div", { class: "spacer", "aria-hidden": "true" });
    this.below = el("div", { class: "spacer", "aria-hidden": "true" });
    this.tableEl = el("table", { id: "runs-table", class: "runs", "aria-labelledby": "runs-caption" }, el("thead", {}, head), this.body);
    fill(box, this.caption, this.above, this.tableEl, this.below);
    box.onscroll = () => this.later();
    this.resized?.disconnect();
    // Shown, resized or given room (the store view unhidden, a widget's frame resized): draw what is in view.
    this.resized = typeof ResizeObserver === "function" ? new ResizeObserver(() => this.later()) : null;
    this.resized?.observe(box);
    this.applyFilter();
    if (place) {
      // The first of the runs that were in view still shown stays where it was (the run at the
      // top gone from the store, the one below it takes its place); none: the scroll is kept.
      const shownAt = new Map(this.list.map((i, k) => [this.rows[i].run, k]));
      const mark = place.marks.find((m) => shownAt.has(m.run));
      box.scrollTop = mark ? this.spacerTop() + this.placed(this.estimate())[shownAt.get(mark.run)] - mark.off : place.scrollTop;
      this.render();
    }
    this.markOpened(this.opened);
  }

  /** A row's height until it is measured: the mean of those measured. */
  estimate() {
    return this.heights.size ? this.heightSum / this.heights.size : ROW_PX;
  }

  /** Where the rows' part of the box begins (px from the top of its content, as scrollTop):
   * below the caption with its margins, the upper spacer's top, and the header (sticky: it
   * stays at the box's top, over the rows scrolled under it). */
  rowsTop() {
    return this.spacerTop() + (this.tableEl.tHead?.offsetHeight ?? 0);
  }

  /** Where the upper spacer begins in the box's content, from layout (the caption's margin is
   * not in its offsetHeight: counting that alone put every row 8 px off). */
  spacerTop() {
    const box = $("runs");
    return this.above.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientTop + box.scrollTop;
  }

  /** The shown runs in the box's view from its top one down (the first is the one reaching
   * below the sticky header: what a person sees at the top), each with where its row begins
   * (px from the header's bottom: the first at or above it), and the box's scrollTop; none when
   * the table is at its top (or not built). */
  inView(box) {
    if (!box || !this.body || !this.list?.length || !(box.scrollTop > 0)) return null;
    const at = box.scrollTop - this.spacerTop();
    const tops = this.placed(this.estimate());
    const k = Math.min(rowAt(tops, at), this.list.length - 1);
    const end = at + Math.max(box.clientHeight, 1);
    const marks = [];
    for (let j = k; j < this.list.length && (j === k || tops[j] < end); j += 1) marks.push({ run: this.rows[this.list[j]].run, off: tops[j] - at });
    return { marks, scrollTop: box.scrollTop };
  }

  /** Draw the rows in view at the next frame (once however often asked before it). */
  later() {
    if (this.frame || this.closed) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Where each shown row begins (px from the first; rows not measured yet `est` high), and the end of the last. */
  placed(est) {
    const tops = new Array(this.list.length + 1);
    let y = 0;
    for (let k = 0; k < this.list.length; k += 1) {
      tops[k] = y;
      y += this.heights.get(this.rows[this.list[k]].run) ?? est;
    }
    tops[this.list.length] = y;
    return tops;
  }

  /**
   * Put in the DOM the shown rows that are in the box's view and OVERSCAN rows each side, and
   * only those: rows still in view stay the same nodes (a focused checkbox keeps its focus),
   * rows leaving it are removed, rows entering it made; the spacers take the room of the rest.
   */
  render() {
    if (!this.body || this.closed) return;
    const box = $("runs");
    const est = this.estimate();
    let tops = this.placed(est);
    const y0 = this.rowsTop();
    const view = Math.max(box.clientHeight, 600); // before the box has its height, enough to fill it
    const from = box.scrollTop - y0 - OVERSCAN * est;
    const to = box.scrollTop - y0 + view + OVERSCAN * est;
    const len = this.list.length;
    let a = rowAt(tops, from);
    let b = a;
    while (b < len && tops[b] < to) b += 1;
    if (b - a < Math.min(len, 2 * OVERSCAN)) a = Math.max(0, Math.min(a, len - 2 * OVERSCAN)); // scrolled past the end (the list got shorter)
    b = Math.max(b, Math.min(len, a + 2 * OVERSCAN));
    const want = this.list.slice(a, b);
    const names = new Set(want.map((i) => this.rows[i].run));
    for (const [run, tr] of this.trs) {
      if (!names.has(run)) {
        tr.remove();
        this.trs.delete(run);
      }
    }
    let next = this.body.firstChild;
    want.forEach((i, k) => {
      const run = this.rows[i].run;
      let tr = this.trs.get(run);
      if (tr && tr === next) next = next.nextSibling;
      else {
        if (!tr) {
          tr = this.row(i);
          this.trs.set(run, tr);
        }
        this.body.insertBefore(tr, next);
      }
      tr.setAttribute("aria-rowindex", String(a + k + 2)); // the header is row 1
    });
    this.tableEl.setAttribute("aria-rowcount", String(len + 1));
    // Rows not measured yet (just made, or made while the view was hidden) are measured (one
    // layout), and the spacers set from what is known: the rows never drawn at the estimate
    // that includes these measures, not the one this drawing began with.
    let measuredNow = false;
    for (const [run, tr] of this.trs) if (!this.heights.has(run)) measuredNow = this.measure(run, tr) || measuredNow;
    if (measuredNow) tops = this.placed(this.estimate());
    this.above.style.height = `${tops[a]}px`;
    this.below.style.height = `${tops[len] - tops[b]}px`;
  }

  /** Keep row `tr`'s height as run `run`'s (not while it is hidden: no height); whether it was kept. */
  measure(run, tr) {
    const h = tr.getBoundingClientRect().height;
    if (!(h > 0)) return false;
    this.heightSum += h - (this.heights.get(run) ?? 0);
    this.heights.set(run, h);
    return true;
  }

  /** The table row of run `this.rows[i]`, marked chosen or opened as it is. */
  row(i) {
    const r = this.rows[i];
    const tr = tableRow(this.cols, r);
    tr.dataset.run = r.run;
    tr.onclick = (ev) => this.clicked(r.run, ev);
    this.markRow(tr);
    return tr;
  }

  /** Mark row `tr` chosen (its box ticked) or not, and opened or not. */
  markRow(tr) {
    const on = this.chosen.has(tr.dataset.run);
    tr.classList.toggle("chosen", on);
    const box = tr.querySelector("input.choose");
    if (box) box.checked = on;
    if (tr.dataset.run === this.opened) tr.setAttribute("aria-current", "true");
    else tr.removeAttribute("aria-current");
  }

  /** How many runs still wait for their health (the box's `data-pending`). */
  countPending() {
    const box = $("runs");
    if (box) box.dataset.pending = String(this.rows.filter((r) => r.healthy === null && !this.failedRuns?.has(r.run)).length);
  }

  /** Offer `fields` to group the overlay by (the one chosen stays chosen while offered). */
  offerConfigFields(fields) {
    const select = $("compare-group-config");
    if (!select) return;
    const keep = select.value;
    if (select.options.length - 1 === fields.length && fields.every((f, i) => select.options[i + 1].value === f)) return;
    fill(select, [el("option", { value: "" }, "none"), ...fields.map((f) => el("option", { value: f }, f))]);
    select.value = fields.includes(keep) ? keep : "";
  }

  /** The run's cell: a checkbox (chosen to compare) and its name (the cell's only text). */
  runCell(r, i) {
    const box = el("input", { type: "checkbox", class: "choose", id: `choose-run-${i}`, "aria-label": `compare run ${r.run}` });
    box.onclick = (ev) => {
      ev.stopPropagation();
      this.toggle(r.run, box.checked);
    };
    return [box, r.run];
  }

  toggle(run, on) {
    if (on) this.chosen.add(run);
    else this.chosen.delete(run);
    this.anchor = run;
    this.markChosen();
    this.drawOverlay();
  }

  /** A click on a row: alone opens the run and chooses it alone; ctrl/cmd toggles it; shift chooses the range from the last clicked. */
  clicked(run, ev) {
    if (ev.shiftKey && this.anchor) {
      const shown = this.shown();
      const [a, b] = [shown.indexOf(this.anchor), shown.indexOf(run)].sort((x, y) => x - y);
      if (a >= 0) for (const name of shown.slice(a, b + 1)) this.chosen.add(name);
      this.markChosen();
      this.drawOverlay();
      return;
    }
    if (ev.ctrlKey || ev.metaKey) return this.toggle(run, !this.chosen.has(run));
    this.anchor = run;
    this.chosen = new Set([run]);
    this.markChosen();
    this.drawOverlay();
    this.onOpen(run);
  }

  /** Show only the runs the filter passes (the table draws those in view). */
  applyFilter() {
    const text = value("run-filter");
    this.list = [];
    this.rows.forEach((r, i) => {
      if (passes(text, r.run)) this.list.push(i);
    });
    setText("runs-shown", text.trim() ? `${this.list.length} of ${this.rows.length} runs shown` : "");
    this.render();
  }

  markChosen() {
    for (const tr of this.trs?.values() ?? []) this.markRow(tr);
  }

  /** Mark the run whose verdict is shown below. */
  markOpened(run) {
    this.opened = run;
    for (const tr of this.trs?.values() ?? []) this.markRow(tr);
  }

  /** The runs drawn: those chosen and shown, in table order. */
  drawn() {
    return this.shown().filter((r) => this.chosen.has(r));
  }

  /** The overlay's options from its controls. */
  overlayOptions() {
    const kind = value("compare-smooth-kind", "none");
    const v = Number(value("compare-smooth", "0.6"));
    const o = { kind: "compare", runs: this.drawn(), of: value("compare-of") || "loss.value", x: value("compare-x", "forward") };
    if (kind === "ema") o.ema = Number.isFinite(v) ? Math.min(Math.max(v, 0), 0.999) : 0.6;
    if (kind === "mean") o.smooth = Math.max(1, Math.floor(v) || 1);
    if ($("compare-log")?.checked) o.logY = true;
    // A config field chosen groups by it (the prefixes are then not used: one grouping at a time).
    const field = value("compare-group-config");
    const groups = prefixes(value("compare-group"));
    if (field) o.groupConfig = field;
    else if (groups.length) o.groupBy = groups;
    return o;
  }

  /** Draw the chosen runs' curves overlaid (nothing chosen: say so). */
  async drawOverlay() {
    const box = $("fig-compare");
    if (!box) return;
    const o = this.overlayOptions();
    setText("runs-chosen", `${o.runs.length} run${o.runs.length === 1 ? "" : "s"} chosen to compare`);
    if (!o.runs.length) {
      clear(box);
      fill(box, el("p", {}, "No run chosen: tick runs in the table (or click, shift-click) to compare them."));
      return;
    }
    try {
      const { kind, ...options } = o;
      const figure = await adapter.figure(this.store, kind, options);
      if (this.closed) return;
      // A height of its own: drawn at once, the container has none yet to size it by. Past
      // LEGEND_LINES lines the legend is left out (hovering a line names its run): plotly lays
      // out every entry again on each redraw, a large part of redrawing many runs.
      const legend = (figure.data ?? []).length <= LEGEND_LINES ? {} : { showlegend: false };
      figure.layout = { ...figure.layout, height: figure.layout?.height ?? 440, ...legend };
      await draw(box, figure, (e) => this.failed(box, e));
    } catch (e) {
      this.failed(box, e);
    }
  }

  failed(box, e) {
    clear(box);
    fill(box, el("p", { class: "error" }, `compare: ${e.message}`));
  }

  /** Offer `fields` (summarised in the opened run's index) for the overlay; loss.value first. */
  setFields(fields) {
    const select = $("compare-of");
    if (!select) return;
    const keep = select.value;
    const list = fields.length ? fields : ["loss.value"];
    fill(select, list.map((f) => el("option", { value: f }, f)));
    select.value = list.includes(keep) ? keep : list.includes("loss.value") ? "loss.value" : list[0];
  }

  /**
   * Judge, one at a time, every run the store has no summary of (its health cell says
   * "judging…" until then): the page's column is filled lazily, newest run first, while the
   * rest of the page stays usable (each is one question to the store).
   */
  async fillHealth() {
    if (this.judging) return;
    this.judging = true;
    try {
      for (;;) {
        const pending = [...this.rows].reverse().find((r) => r.healthy === null && !this.failedRuns?.has(r.run));
        if (!pending || this.closed) break;
        let got;
        try {
          got = (await adapter.compare(this.store, { runs: pending.run })).find((r) => r.run === pending.run);
        } catch (e) {
          (this.failedRuns ??= new Set()).add(pending.run);
          this.onStatus(`Judging run ${pending.run}: ${e.message}`);
          continue;
        }
        if (this.closed) break;
        if (!got || got.healthy === null) {
          // No answer for it (a package without compare): leave it, and do not ask again.
          (this.failedRuns ??= new Set()).add(pending.run);
          continue;
        }
        this.judged.set(got.run, { key: keyOf(pending), row: got, at: Date.now() });
        const i = this.rows.findIndex((r) => r.run === got.run);
        if (i < 0) continue;
        this.rows[i] = { ...this.rows[i], ...got };
        this.index?.set(this.rows[i], i);
        this.countPending();
        const tr = this.trs?.get(got.run);
        const col = this.healthColumn ?? 1;
        if (tr?.children[col]) {
          fill(tr.children[col], healthCell(this.rows[i]));
          this.measure(got.run, tr);
        }
      }
    } finally {
      this.judging = false;
      this.countPending();
    }
    $("runs").dataset.judged = "true";
  }
}

/** The first row (of `tops`, [`RunsView.placed`]'s) that ends below `y`: the row at `y`, or the
 * number of rows when `y` is past the last. */
function rowAt(tops, y) {
  let k = 0;
  while (k < tops.length - 1 && tops[k + 1] <= y) k += 1;
  return k;
}

/** The most lines the overlay draws with a legend. */
export const LEGEND_LINES = 20;

/** How often a run being written is judged again while the store is followed. */
const REJUDGE_MS = 30_000;

/** The health part of a compare row. */
const healthOf = (r) => ({ healthy: r.healthy, flags: r.flags, nonfinite_at: r.nonfinite_at, judged: r.judged, judged_last: r.judged_last, error: r.error });

/** What a run's lazily judged health is kept for: its forwards and last line written. */
const keyOf = (r) => `${r.forwards}/${r.last_written_us}`;
