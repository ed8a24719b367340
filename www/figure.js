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

/** plotly's options for every figure on the page: no link to plotly's cloud, a responsive size,
 * and a modebar without the box and lasso selection (the page does nothing with a selection:
 * two tab stops fewer per figure for keyboard users). */
export const CONFIG = {
  displaylogo: false, showSendToCloud: false, showEditInChartStudio: false, responsive: true,
  modeBarButtonsToRemove: ["select2d", "lasso2d"],
};

/** The options for `layout`: "Autoscale" is dropped too when no axis sets its own range (it
 * would do what "Reset axes" does). */
function configFor(layout) {
  const ranged = Object.entries(layout ?? {}).some(([k, v]) => /^[xy]axis\d*$/.test(k) && Array.isArray(v?.range) && !v.fixedrange);
  return ranged ? CONFIG : { ...CONFIG, modeBarButtonsToRemove: [...CONFIG.modeBarButtonsToRemove, "autoScale2d"] };
}

// ---- long lines drawn decimated ----
//
// A line of more points than a chart has pixels draws slowly and hovers slowly. Such a trace is
// drawn min–max decimated: per bucket of x, its first, lowest, highest and last points (real
// points: hover shows recorded values, and no peak is lost). On zoom the visible range is
// decimated again from the full trace kept on the element, so detail appears down to every
// point; nothing is asked of the store.

/** Traces with more points than this are drawn decimated. */
export const DECIMATE_OVER = 20000;
/** Buckets across the visible range (a bucket gives at most 4 points). */
const BUCKETS = 1000;

/** Whether `t` is a plain line over ascending numeric x, whose points carry nothing else. */
function decimable(t) {
  const { x, y } = t;
  if ((t.type ?? "scatter") !== "scatter" || t.mode !== "lines") return false;
  if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length || x.length <= DECIMATE_OVER) return false;
  if (["text", "hovertext", "customdata", "ids"].some((k) => Array.isArray(t[k]))) return false;
  for (let i = 1; i < x.length; i++) if (!(x[i] >= x[i - 1])) return false;
  return typeof x[0] === "number";
}

/** The first index whose x is at least `v` (beyond `v` with `after`); x ascending. */
function bound(x, v, after = false) {
  let lo = 0;
  let hi = x.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x[mid] < v || (after && x[mid] === v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The points of (x, y) to draw over [lo, hi] (x ascending): all of them when few, else per
 * bucket of x its first, lowest, highest and last point and its first gap (a null or NaN y,
 * so that a line still breaks there), in order. One point beyond each end is kept so that the
 * line reaches the edges.
 */
export function decimate(x, y, lo = -Infinity, hi = Infinity, buckets = BUCKETS) {
  const a = Math.max(0, bound(x, lo) - 1);
  const b = Math.min(x.length, bound(x, hi, true) + 1);
  if (b - a <= 4 * buckets) return { x: x.slice(a, b), y: y.slice(a, b) };
  const x0 = x[a];
  const width = (x[b - 1] - x0) / buckets || 1;
  const keep = [];
  let i = a;
  while (i < b) {
    const bucket = Math.floor((x[i] - x0) / width);
    let min = -1;
    let max = -1;
    let gap = -1;
    const first = i;
    for (; i < b && Math.floor((x[i] - x0) / width) === bucket; i++) {
      const v = y[i];
      if (v === null || Number.isNaN(v)) {
        if (gap < 0) gap = i;
      } else {
        if (min < 0 || v < y[min]) min = i;
        if (max < 0 || v > y[max]) max = i;
      }
    }
    keep.push(...[...new Set([first, min, max, gap, i - 1])].filter((k) => k >= 0).sort((p, q) => p - q));
  }
  return { x: keep.map((k) => x[k]), y: keep.map((k) => y[k]) };
}

/** The visible x range after a zoom, `null` for "everything", `undefined` when x did not change. */
function xRange(ev) {
  if (ev["xaxis.autorange"]) return null;
  const lo = ev["xaxis.range[0]"] ?? ev["xaxis.range"]?.[0];
  const hi = ev["xaxis.range[1]"] ?? ev["xaxis.range"]?.[1];
  return typeof lo === "number" && typeof hi === "number" ? [lo, hi] : undefined;
}

/** Decimate the kept full traces of `container` again for its visible x range. */
function redecimate(container, ev) {
  const range = xRange(ev);
  const full = container.somatizeFull;
  if (range === undefined || !full?.length) return;
  const [lo, hi] = range ?? [-Infinity, Infinity];
  const update = { x: [], y: [] };
  for (const f of full) {
    const d = decimate(f.x, f.y, lo, hi);
    update.x.push(d.x);
    update.y.push(d.y);
  }
  globalThis.Plotly.restyle(container, update, full.map((f) => f.index));
}

// ---- drawn once, on screen ----
//
// A figure is drawn only when it changed since it was last drawn into its container (the
// figure's JSON is kept per container), and only when it is on screen or within MARGIN of it:
// one further down waits, marked `data-drawn="waiting"` (never "true": what it shows is not
// what it was asked to show), and is drawn when it scrolls into view. So an edit that changes
// several figures costs only the drawing of those in sight.

/** How far outside the window (px, above and below) a figure counts as on screen. */
const MARGIN = 200;
let observer = null;

/** Whether `el` is shown and within MARGIN of the window. */
function onScreen(el) {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.bottom > -MARGIN && r.top < innerHeight + MARGIN;
}

/** Draw each waiting figure that came into view. */
function cameIntoView(entries) {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    observer.unobserve(e.target);
    const w = e.target.somatizeWaiting;
    delete e.target.somatizeWaiting;
    if (w) drawNow(e.target, w.figure, w.key).catch(w.fail);
  }
}

/** Draw every waiting figure now (before printing, where the whole page is seen). */
function drawWaiting() {
  for (const el of document.querySelectorAll("[data-drawn=waiting]")) cameIntoView([{ isIntersecting: true, target: el }]);
}

/** Keep `figure` for `container` until it scrolls into view. */
function wait(container, figure, key, fail) {
  if (!observer) {
    observer = new IntersectionObserver(cameIntoView, { rootMargin: `${MARGIN}px 0px` });
    addEventListener("beforeprint", drawWaiting);
  }
  container.somatizeWaiting = { figure, key, fail };
  container.dataset.drawn = "waiting";
  observer.observe(container);
}

let loading = null;

/**
 * plotly.js, loaded on first use (its vendored files beside this module: `vendor/plotly-csp.js`
 * then `vendor/plotly.min.js`), or the one the page already has. Evaluating plotly costs the
 * main thread most of a second on a slow machine: a page that loads it on first use shows its
 * tables first.
 */
export function plotly() {
  if (globalThis.Plotly) return Promise.resolve(globalThis.Plotly);
  // The notebook widget's page loads its own plotly, off the HTML parse (src/report/widget-plotly.js).
  if (globalThis.somatizePlotly) return (loading ??= globalThis.somatizePlotly);
  loading ??= (async () => {
    for (const name of ["plotly-csp.js", "plotly.min.js"]) {
      await new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = new URL(`vendor/${name}`, import.meta.url).href;
        s.onload = resolve;
        s.onerror = () => reject(new Error(`plotly.js did not load (www/vendor/${name}; run scripts/build-wasm.sh)`));
        document.head.append(s);
      });
    }
    if (!globalThis.Plotly) throw new Error("plotly.js did not load (www/vendor/plotly.min.js; run scripts/build-wasm.sh)");
    return globalThis.Plotly;
  })().catch((e) => {
    loading = null; // asked again, tried again
    throw e;
  });
  return loading;
}

/**
 * Draw `figure` into `container` (again: plotly.react updates in place); long lines decimated.
 * Nothing is done when it is the figure last drawn there; a container off screen is drawn when
 * it scrolls into view, and `fail(error)` is called if that drawing throws (drawing now throws).
 */
export async function draw(container, figure, fail = (e) => console.error(e)) {
  if (!globalThis.Plotly) await plotly(); // once loaded, a drawing begins at once (no await before it)
  const key = JSON.stringify(figure);
  if (key === container.somatizeKey) {
    delete container.somatizeWaiting;
    container.dataset.drawn = "true";
    return;
  }
  if (typeof IntersectionObserver === "function" && !onScreen(container)) return wait(container, figure, key, fail);
  delete container.somatizeWaiting;
  await drawNow(container, figure, key);
}

/** Forget what `container` drew or waits to draw, and empty it (to show a message instead). */
export function clear(container) {
  delete container.somatizeWaiting;
  delete container.somatizeKey;
  delete container.dataset.drawn;
  globalThis.Plotly?.purge(container); // plotly keeps state on the element; start afresh next time
}

/**
 * Draw `figure` (whose JSON is `key`) into `container` now. Drawings of one container may
 * overlap (a run chosen while the last one is still being drawn): only the latest started marks
 * the container drawn, and not while a newer figure waits to scroll into view; one that throws
 * marks it `data-drawn="error"` (no longer waiting) if it is still the latest.
 */
async function drawNow(container, figure, key) {
  const turn = (container.somatizeTurn ?? 0) + 1;
  container.somatizeTurn = turn;
  try {
    await drawLatest(container, figure, key, turn);
  } catch (e) {
    if (container.somatizeTurn === turn && container.dataset.drawn === "waiting" && !container.somatizeWaiting) {
      container.dataset.drawn = "error";
    }
    throw e;
  }
}

/** The colours a figure is drawn in when the system asks for a dark mode (text 7:1 on the paper). */
const DARK = {
  paper_bgcolor: "#141414", plot_bgcolor: "#141414", font: { color: "#ececec" },
  legend: { bgcolor: "rgba(0,0,0,0)" },
};
const DARK_AXIS = { gridcolor: "#3a3a3a", zerolinecolor: "#666", linecolor: "#888" };

/** `layout` in the dark mode's colours when the system asks for it (the core's figures are light). */
export function themed(layout, dark = globalThis.matchMedia?.("(prefers-color-scheme: dark)").matches) {
  if (!dark) return layout;
  const out = { ...layout, ...DARK, font: { ...(layout?.font ?? {}), ...DARK.font }, legend: { ...(layout?.legend ?? {}), ...DARK.legend } };
  for (const [k, v] of Object.entries(layout ?? {})) if (/^[xy]axis\d*$/.test(k)) out[k] = { ...DARK_AXIS, ...v };
  return out;
}

async function drawLatest(container, figure, key, turn) {
  const Plotly = globalThis.Plotly;
  const safe = safeFigure(figure);
  safe.layout = themed(safe.layout ?? {});
  const full = [];
  const data = (safe.data ?? []).map((t, index) => {
    if (!decimable(t)) return t;
    full.push({ index, x: t.x, y: t.y });
    return { ...t, ...decimate(t.x, t.y) };
  });
  container.somatizeFull = full;
  delete container.somatizeKey;
  await Plotly.react(container, data, safe.layout ?? {}, configFor(safe.layout));
  if (container.somatizeTurn !== turn) return; // a later drawing of this container took over
  container.removeAllListeners?.("plotly_relayout");
  if (full.length) container.on("plotly_relayout", (ev) => redecimate(container, ev));
  container.somatizeKey = key;
  if (!container.somatizeWaiting) container.dataset.drawn = "true";
  container.dataset.decimated = full.length ? "true" : "false";
}
