// The page's helpers in Node: number formatting, the escaping of figure strings, the
// decimation of long lines, and `draw` over stand-ins for the DOM and plotly (overlapping
// drawings, a figure waiting below the window, a drawing that throws).
import { test } from "node:test";
import assert from "node:assert/strict";
import { duration, num, pct, shape } from "../../www/format.js";
import { decimate, draw, escapeText, safeFigure } from "../../www/figure.js";

test("numbers read short, and NaN and infinities are never hidden", () => {
  const cases = [
    [0, "0"], [128, "128"], [1234567, "1,234,567"], [0.6931471805, "0.6931"], [-0.07089038772, "−0.07089"],
    [8.825617e-5, "8.826e−5"], [1e-7, "1e−7"], [2.5e9 + 0.5, "2.5e+9"], [NaN, "NaN"],
    [Infinity, "∞"], [-Infinity, "−∞"], [undefined, "–"], [null, "–"],
  ];
  for (const [v, want] of cases) assert.equal(num(v), want, `num(${v})`);
  assert.equal(pct(0.529296875), "52.9 %");
  assert.equal(pct(NaN), "NaN");
  assert.deepEqual([shape([16, 8]), shape([]), shape([4])], ["16 × 8", "scalar", "4"]);
  assert.deepEqual([duration(80), duration(240), duration(69250), duration(3.5e6), duration(NaN)],
    ["80 µs", "240 µs", "69.25 ms", "3.5 s", "NaN"]);
});

test("every string of a figure is escaped; line breaks stay, styling tags go (the CSP refuses their styles)", () => {
  const hostile = "<img src=x onerror=alert(1)>&";
  assert.equal(escapeText(hostile), "&lt;img src=x onerror=alert(1)&gt;&amp;");
  const fig = safeFigure({
    data: [{ type: "bar", name: hostile, x: [hostile, 1], y: new Float64Array([1, 2]), text: [`fc1<br><i>Linear</i>`],
      hovertemplate: `%{x}<br><b>${hostile}</b><extra></extra>`, marker: { color: "#c00000" } }],
    layout: { title: { text: `run ${hostile}<br>next` }, xaxis: { title: "a<br>b <script>" },
      annotations: [{ text: `<a href="javascript:x">a</a><span style="x">s</span><B>b</B><br/>` }] },
  });
  const t = fig.data[0];
  assert.equal(t.name, escapeText(hostile));
  assert.deepEqual(t.x, [escapeText(hostile), 1]);
  assert.ok(t.y instanceof Float64Array, "typed arrays pass untouched");
  assert.deepEqual(t.text, ["fc1<br>Linear"], "the core's line break is kept, its italic dropped");
  assert.equal(t.hovertemplate, `%{x}<br>${escapeText(hostile)}<extra></extra>`);
  assert.equal(t.marker.color, "#c00000");
  assert.equal(fig.layout.title.text, `run ${escapeText(hostile)}<br>next`);
  assert.equal(fig.layout.xaxis.title, "a<br>b &lt;script&gt;");
  assert.equal(fig.layout.annotations[0].text,
    "&lt;a href=\"javascript:x\"&gt;a&lt;/a&gt;&lt;span style=\"x\"&gt;s&lt;/span&gt;&lt;B&gt;b&lt;/B&gt;&lt;br/&gt;",
    "links, styles, other spellings stay text");
});

test("a long line is decimated to real points keeping every bucket's extremes and gaps; a zoom gets them all", () => {
  const n = 100_000;
  const x = Array.from({ length: n }, (_, i) => i);
  const y = x.map((i) => Math.sin(i / 500));
  y[31_337] = 7; // a spike
  y[77_000] = -7; // a dip
  y[50_000] = null; // a gap (a forward that broke)
  const d = decimate(x, y);
  assert.ok(d.x.length <= 4 * 1000 + 2 && d.x.length > 1000, `${d.x.length} points`);
  for (let i = 1; i < d.x.length; i++) assert.ok(d.x[i] > d.x[i - 1], "in order, no repeats");
  for (let i = 0; i < d.x.length; i++) assert.equal(d.y[i], y[d.x[i]], "every point drawn is a recorded one");
  assert.deepEqual([d.x[0], d.x.at(-1)], [0, n - 1], "the ends are kept");
  assert.ok(d.x.includes(31_337) && d.x.includes(77_000), "the spike and the dip are kept");
  assert.ok(d.x.includes(50_000) && d.y[d.x.indexOf(50_000)] === null, "the gap is kept");
  // Zoomed to 1,000 forwards: every point in view, and one beyond each edge.
  const z = decimate(x, y, 40_000, 41_000);
  assert.deepEqual([z.x[0], z.x.at(-1), z.x.length], [39_999, 41_001, 1003]);
  // Few points: as they are.
  assert.deepEqual(decimate([1, 2, 3], [4, 5, 6]), { x: [1, 2, 3], y: [4, 5, 6] });
});

/**
 * `draw` with stand-ins for the DOM and plotly: a container whose place on screen the test sets,
 * an IntersectionObserver the test fires, and a `Plotly.react` that takes the data at once (as
 * plotly does) and finishes when the test says.
 */
let observed = null; // figure.js makes one observer, the first time a figure waits
function stage() {
  const finishers = [];
  globalThis.innerHeight = 800;
  globalThis.addEventListener ??= () => {};
  globalThis.IntersectionObserver = class {
    constructor(callback) { observed = callback; }
    observe() {}
    unobserve() {}
  };
  globalThis.Plotly = {
    react(el, data) {
      el.data = data;
      return new Promise((resolve, reject) => finishers.push({ resolve, reject }));
    },
    purge() {},
  };
  const container = { dataset: {}, top: 0, getBoundingClientRect() { return { width: 600, top: this.top, bottom: this.top + 300 }; } };
  const tick = () => new Promise((r) => setTimeout(r, 0));
  return { container, finishers, tick, intoView: () => observed([{ isIntersecting: true, target: container }]) };
}

const fig = (y) => ({ data: [{ type: "scatter", x: [0, 1], y: [y, y] }], layout: {} });

test("overlapping drawings of one figure: the latest is what the figure says it shows", async () => {
  const { container, finishers, tick } = stage();
  const first = draw(container, fig(1));
  const second = draw(container, fig(2));
  await tick();
  finishers[1].resolve();
  await second;
  finishers[0].resolve(); // the first drawing finishes last
  await first;
  assert.equal(container.somatizeKey, JSON.stringify(safeFigure(fig(2))), "got the first drawing's key");
  assert.equal(container.dataset.drawn, "true");
});

test("a drawing that finishes while a newer figure waits below the window leaves it waiting", async () => {
  const { container, finishers, tick } = stage();
  const first = draw(container, fig(1));
  container.top = 5000; // scrolled away
  await draw(container, fig(3));
  assert.equal(container.dataset.drawn, "waiting");
  await tick();
  finishers[0].resolve();
  await first;
  assert.equal(container.dataset.drawn, "waiting", "marked drawn while fig(3) was never drawn");
});

test("a waiting figure whose drawing throws is marked error, not left waiting", async () => {
  const { container, finishers, tick, intoView } = stage();
  container.top = 5000;
  const failed = [];
  await draw(container, fig(4), (e) => failed.push(e.message));
  assert.equal(container.dataset.drawn, "waiting");
  container.top = 0;
  intoView();
  await tick();
  finishers[0].reject(new Error("plotly refused"));
  await tick();
  await tick();
  assert.deepEqual(failed, ["plotly refused"]);
  assert.equal(container.dataset.drawn, "error");
});
