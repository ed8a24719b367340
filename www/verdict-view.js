// The verdict as a table: each raised flag with what it means, what to do, and the bounds it was judged at.
import { el, fill, table } from "./dom.js";
import { aboutFlag } from "./flags.js";
import { num } from "./format.js";

/**
 * Show `verdict` (`{node: [flag, …]}`) in `container`, judged at `thresholds` (`{name: value}`).
 * `context` is a sentence saying what was judged.
 */
export function showVerdict(container, verdict, thresholds, context) {
  const rows = [];
  for (const [node, flags] of Object.entries(verdict)) {
    for (const flag of flags) rows.push({ node, flag, about: aboutFlag(flag) });
  }
  const summary = rows.length
    ? `${rows.length} flag${rows.length === 1 ? "" : "s"} raised on ${Object.keys(verdict).length} node${Object.keys(verdict).length === 1 ? "" : "s"}.`
    : "No flag raised.";
  const judgedAt = (about) => about.bounds.length
    ? el("ul", { class: "bounds" }, about.bounds.map((b) =>
      el("li", {}, el("code", {}, b.name), " = ", num(thresholds[b.name]),
        thresholds[b.name] !== b.default ? el("span", { class: "changed" }, ` (default ${num(b.default)})`) : null)))
    : "no bound (any count above 0)";
  fill(container,
    el("p", { class: "verdict-summary", id: "verdict-summary" }, summary, context ? ` ${context}` : ""),
    rows.length ? table("Flags raised, with advice", [
      { key: "node", label: "Node" },
      { key: "flag", label: "Flag", cell: (r) => el("strong", { class: "flag" }, r.flag) },
      { key: "means", label: "What it means", cell: (r) => r.about.means },
      { key: "todo", label: "What to do", cell: (r) => r.about.todo },
      { key: "bounds", label: "Judged at", cell: (r) => judgedAt(r.about) },
    ], rows, { id: "flags-table", class: "flags" }) : null);
}
