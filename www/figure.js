// Drawing figure JSON with plotly.js: every string that could come from a store is escaped first.
//
// plotly renders its strings (names, tick labels, hover text, titles) through a small HTML-like
// markup and decodes entities, so `&lt;img …&gt;` shows as the text `<img …>` and no tag is made.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
/**
 * The markup the core's figures use: line breaks and the hover box's <extra> are restored after
 * escaping, exactly and without attributes. Bold, italic, super- and subscript are dropped (their
 * text stays): plotly draws them with style attributes, which the page's CSP refuses. Anything
 * else, such as `<img …>`, `<a href=…>` or `<span style=…>`, stays text.
 */
const KEPT = /&lt;(br|\/?extra)&gt;/g;
const DROPPED = /&lt;\/?(?:b|i|sup|sub)&gt;/g;

/** `<`, `>` and `&` as entities. */
export function escapeText(s) {
  return String(s).replace(/[&<>]/g, (c) => ESCAPES[c]);
}

/** A copy of `value` with every string escaped, line breaks kept and styling tags dropped. */
export function safeFigure(value) {
  if (typeof value === "string") return escapeText(value).replace(KEPT, "<$1>").replace(DROPPED, "");
  if (Array.isArray(value)) return value.map(safeFigure);
  if (value && typeof value === "object" && !ArrayBuffer.isView(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = safeFigure(v);
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
