// The verdict as a table: each raised flag with what it means, what to do, and the bounds it was judged at.
import { el, fill, table } from "./dom.js";
import { aboutFlag } from "./flags.js";
import { num, numData } from "./format.js";

/** What the core says of a flag; a name this page's core does not know is said to be unknown. */
function aboutOrUnknown(flag) {
  try {
    return aboutFlag(flag);
  } catch (e) {
    return { means: e.message, todo: "", bounds: [] };
  }
}

/**
 * The rows of the flags table: from `alerts` (one per fault: `[{node, flag, first_forward,
 * until, held, window: [held, of], evidence: {metric: value}, folded: [text], means,
 * advice}]`, the head first) when given, else from `verdict` (`{node: [flag, …]}`) in its key
 * order.
 */
function rowsOf(verdict, alerts) {
  if (Array.isArray(alerts)) {
    return alerts.map((a) => {
      const about = aboutOrUnknown(a.flag);
      return { node: String(a.node), flag: String(a.flag), since: a.first_forward, until: a.until,
        held: a.held, window: Array.isArray(a.window) ? a.window : null,
        evidence: a.evidence && typeof a.evidence === "object" ? Object.entries(a.evidence) : [],
        folded: Array.isArray(a.folded) ? a.folded.map(String) : [],
        about: { ...about, means: a.means || about.means, todo: a.advice || about.todo } };
    });
  }
  const rows = [];
  for (const [node, flags] of Object.entries(verdict ?? {})) {
    for (const flag of Array.isArray(flags) ? flags : [flags]) rows.push({ node, flag: String(flag), about: aboutOrUnknown(flag) });
  }
  return rows;
}

/**
 * Show `verdict` (`{node: [flag, …]}`) in `container`, judged at `thresholds` (`{name: value}`).
 * `context` is a sentence saying what was judged. With `alerts` (a store's run) the rows are
 * the alerts, each with the first forward whose own numbers raise it.
 */
export function showVerdict(container, verdict, thresholds, context, alerts = null) {
  const rows = rowsOf(verdict, alerts);
  const nodes = new Set(rows.map((r) => r.node)).size;
  const summary = rows.length
    ? (alerts
      ? `${rows.length} fault${rows.length === 1 ? "" : "s"}, on ${nodes} node${nodes === 1 ? "" : "s"}.`
      : `${rows.length} flag${rows.length === 1 ? "" : "s"} raised on ${nodes} node${nodes === 1 ? "" : "s"}.`)
    : "No flag raised.";
  // How sure: on how many of the last window's forwards it held, and the numbers it was taken on.
  const sure = (r) => el("div", {},
    r.window ? el("p", {}, `held on ${r.window[0]} of the last ${r.window[1]} forwards measured (${r.held} in all), until forward `, numData(r.until)) : null,
    r.evidence.length ? el("ul", { class: "evidence" }, r.evidence.map(([k, v]) => el("li", {}, el("code", {}, k), " = ", v === null ? "NaN" : num(v)))) : null);
  const explains = (r) => r.folded.length ? el("ul", { class: "folded" }, r.folded.map((f) => el("li", {}, f))) : "—";
  const judgedAt = (about) => about.bounds.length
    ? el("ul", { class: "bounds" }, about.bounds.map((b) =>
      el("li", {}, el("code", {}, b.name), " = ", num(thresholds[b.name]),
        thresholds[b.name] !== b.default ? el("span", { class: "changed" }, ` (default ${num(b.default)})`) : null)))
    : "no bound (any count above 0)";
  // The answer first: healthy, or one line per fault (flag, node, since when, one sentence of
  // advice); everything else about each flag one click away.
  const headline = rows.length
    ? el("ul", { id: "verdict-headline", class: "headline" }, rows.map((r) => el("li", {},
      el("strong", { class: "flag" }, r.flag), " at ", el("code", {}, r.node),
      r.since !== undefined ? [" since forward ", numData(r.since)] : null,
      r.about.todo ? ` — ${firstSentence(r.about.todo)}` : null)))
    : el("p", { id: "verdict-headline", class: "headline ok" }, "Healthy: no flag raised.");
  const live = document.getElementById("verdict-live");
  if (live) live.textContent = summary; // announced once, not the whole table
  fill(container,
    headline,
    el("p", { class: "verdict-summary", id: "verdict-summary" }, summary, context ? ` ${context}` : ""),
    rows.length ? el("details", { id: "verdict-details" },
      el("summary", {}, "What each flag means, what it was taken on, what it explains, and the bounds it was judged at"),
      el("div", { class: "scroll" }, table("Flags raised, with advice", [
      { key: "node", label: "Node" },
      { key: "flag", label: "Flag", cell: (r) => el("strong", { class: "flag" }, r.flag) },
      ...(alerts ? [{ key: "since", label: "Since forward", numeric: true, cell: (r) => numData(r.since) },
        { key: "sure", label: "Taken on", cell: sure },
        { key: "explains", label: "Explains", cell: explains }] : []),
      { key: "means", label: "What it means", cell: (r) => r.about.means },
      { key: "todo", label: "What to do", cell: (r) => r.about.todo },
      { key: "bounds", label: "Judged at", cell: (r) => judgedAt(r.about) },
    ], rows, { id: "flags-table", class: "flags" }))) : null);
}

/** The first sentence of a text: up to the first full stop (or ! ?) followed by a capital or the end. */
export function firstSentence(text) {
  const m = /^(.*?[.!?])(?=\s+[A-Z]|\s*$)/s.exec(String(text));
  return m ? m[1] : String(text);
}
