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
 * The rows of the flags table: from `alerts` (`[{node, flag, first_forward, means, advice}]`, a
 * list in the verdict's order, which is the nodes' declaration order) when given, else from
 * `verdict` (`{node: [flag, …]}`) in its key order.
 */
function rowsOf(verdict, alerts) {
  if (Array.isArray(alerts)) {
    return alerts.map((a) => {
      const about = aboutOrUnknown(a.flag);
      return { node: String(a.node), flag: String(a.flag), since: a.first_forward,
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
    ? `${rows.length} flag${rows.length === 1 ? "" : "s"} raised on ${nodes} node${nodes === 1 ? "" : "s"}.`
    : "No flag raised.";
  const judgedAt = (about) => about.bounds.length
    ? el("ul", { class: "bounds" }, about.bounds.map((b) =>
      el("li", {}, el("code", {}, b.name), " = ", num(thresholds[b.name]),
        thresholds[b.name] !== b.default ? el("span", { class: "changed" }, ` (default ${num(b.default)})`) : null)))
    : "no bound (any count above 0)";
  const live = document.getElementById("verdict-live");
  if (live) live.textContent = summary; // announced once, not the whole table
  fill(container,
    el("p", { class: "verdict-summary", id: "verdict-summary" }, summary, context ? ` ${context}` : ""),
    rows.length ? table("Flags raised, with advice", [
      { key: "node", label: "Node" },
      { key: "flag", label: "Flag", cell: (r) => el("strong", { class: "flag" }, r.flag) },
      ...(alerts ? [{ key: "since", label: "Since forward", numeric: true, cell: (r) => numData(r.since) }] : []),
      { key: "means", label: "What it means", cell: (r) => r.about.means },
      { key: "todo", label: "What to do", cell: (r) => r.about.todo },
      { key: "bounds", label: "Judged at", cell: (r) => judgedAt(r.about) },
    ], rows, { id: "flags-table", class: "flags" }) : null);
}
