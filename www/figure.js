// Drawing figure JSON with plotly.js: every string that could come from a store is escaped first.
//
// plotly renders its strings (names, tick labels, hover text, titles) through a small HTML-like
// markup and decodes entities, so `&lt;img …&gt;` shows as the text `<img …>` and no tag is made.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
/** Markup plotly draws itself and the figures in Rust use in templates and titles; nothing else. */
const ALLOWED = /&lt;(\/?(?:br|b|i|sup|sub|extra))&gt;/g;
/** Keys whose strings are templates or titles written by the core (data is still escaped in them). */
const TEMPLATES = new Set(["hovertemplate", "texttemplate"]);

/** `<`, `>` and `&` as entities. */
export function escapeText(s) {
  return String(s).replace(/[&<>]/g, (c) => ESCAPES[c]);
}

/** A copy of `value` with every string escaped; in templates and titles the tags in ALLOWED stay. */
export function safeFigure(value, key = "", inTitle = false) {
  if (typeof value === "string") {
    const escaped = escapeText(value);
    return TEMPLATES.has(key) || (inTitle && (key === "text" || key === "title"))
      ? escaped.replace(ALLOWED, "<$1>")
      : escaped;
  }
  if (Array.isArray(value)) return value.map((v) => safeFigure(v, key, inTitle));
  if (value && typeof value === "object" && !ArrayBuffer.isView(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = safeFigure(v, k, inTitle || k === "title");
    return out;
  }
  return value;
}

/** plotly's options for every figure on the page: no link to plotly's cloud, a responsive size. */
export const CONFIG = { displaylogo: false, showSendToCloud: false, showEditInChartStudio: false, responsive: true };

/** Draw `figure` into `container` (again: plotly.react updates in place). */
export async function draw(container, figure) {
  const Plotly = globalThis.Plotly;
  if (!Plotly) throw new Error("plotly.js did not load (www/vendor/plotly.min.js; run scripts/build-wasm.sh)");
  const safe = safeFigure(figure);
  await Plotly.react(container, safe.data ?? [], safe.layout ?? {}, CONFIG);
  container.dataset.drawn = "true";
}
