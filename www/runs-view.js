// The run table with every run's health, choosing runs (click, shift-click, ctrl-click, a name
// filter or glob) and overlaying their curves (smoothing, x axis, log y, groups by prefix or by a
// recorded config field).
import * as adapter from "./store-adapter.js";
import { el, fill, table } from "./dom.js";
import { duration, numData } from "./format.js";
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
    const at = new Map(this.rows.map((r, i) => [r, i]));
    const cols = COLUMNS.filter((key) => key !== "config" || configured).map((key) => ({
      key, label: key, numeric: ["final", "best", "forwards", "broke", "writers", "took_us"].includes(key),
      cell: key === "run" ? (r) => this.runCell(r, at.get(r))
        : key === "health" ? healthCell
          : key === "config" ? (r) => configText(r.config) || "–"
            : (r) => cell(r[key], key),
    }));
    this.healthColumn = cols.findIndex((c) => c.key === "health");
    const n = this.rows.length;
    fill($("runs"), n
      ? table(`${n} run${n === 1 ? "" : "s"}: click one to open it, shift- or ctrl-click (or tick) to choose several to compare`, cols, this.rows, { id: "runs-table", class: "runs" })
      : el("p", {}, "This store has no run yet."));
    const trs = $("runs").querySelectorAll("tbody tr");
    trs.forEach((tr, i) => {
      const run = this.rows[i].run;
      tr.dataset.run = run;
      tr.onclick = (ev) => this.clicked(run, ev);
    });
    this.applyFilter();
    this.markChosen();
    this.markOpened(this.opened);
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

  applyFilter() {
    const text = value("run-filter");
    let shown = 0;
    for (const tr of $("runs").querySelectorAll("tbody tr")) {
      tr.hidden = !passes(text, tr.dataset.run);
      if (!tr.hidden) shown += 1;
    }
    setText("runs-shown", text.trim() ? `${shown} of ${this.rows.length} runs shown` : "");
  }

  markChosen() {
    for (const tr of $("runs").querySelectorAll("tbody tr")) {
      const on = this.chosen.has(tr.dataset.run);
      tr.classList.toggle("chosen", on);
      const box = tr.querySelector("input.choose");
      if (box) box.checked = on;
    }
  }

  /** Mark the run whose verdict is shown below. */
  markOpened(run) {
    this.opened = run;
    for (const tr of $("runs").querySelectorAll("tbody tr")) {
      if (tr.dataset.run === run) tr.setAttribute("aria-current", "true");
      else tr.removeAttribute("aria-current");
    }
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
        const tr = $("runs").querySelector(`tbody tr:nth-child(${i + 1})`);
        const col = this.healthColumn ?? 1;
        if (tr?.children[col]) fill(tr.children[col], healthCell(this.rows[i]));
      }
    } finally {
      this.judging = false;
    }
    $("runs").dataset.judged = "true";
  }
}

/** The most lines the overlay draws with a legend. */
export const LEGEND_LINES = 20;

/** How often a run being written is judged again while the store is followed. */
const REJUDGE_MS = 30_000;

/** The health part of a compare row. */
const healthOf = (r) => ({ healthy: r.healthy, flags: r.flags, nonfinite_at: r.nonfinite_at, judged: r.judged, judged_last: r.judged_last, error: r.error });

/** What a run's lazily judged health is kept for: its forwards and last line written. */
const keyOf = (r) => `${r.forwards}/${r.last_written_us}`;
