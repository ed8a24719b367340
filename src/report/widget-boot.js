// The notebook widget's boot module, inside its sandboxed iframe: the page, told by the widget's
// module in the parent window (python/somatize/_widget/widget.js) what to show.
//
// Messages with the parent (postMessage; only the parent's are heard):
//   up:   {somatize: "wasm"} (asked by the page's first script, widget-wasm.js), {somatize: "ready"},
//         {somatize: "ask", id, asks: [{op: "list"|"stat"|"range", path, offset?, length?}]},
//         {somatize: "shown", what}, {somatize: "drawn", marks, reads} (the verdict on screen),
//         {somatize: "failed", message}
//   down: {somatize: "wasm", gzip | error} (gzip: the wasm as the kernel sent it),
//         {somatize: "init", mode: "store"|"live", store, run, live, title, smooth, primed: answers | null},
//         {somatize: "answers", id, answers, error?}, {somatize: "rows", packed: Float64Array, errors}
import { openEmbedded } from "somatize/www/app.js";
import { Live, kernelSource, setKernelChannel } from "somatize/pkg/report.js";
import { draw } from "somatize/www/figure.js";

const up = (message) => parent.postMessage({ ...message }, "*");
const waiting = new Map(); // id -> {resolve, reject}
let nextAsk = 1;
const reads = { roundTrips: 0, asks: 0 };

/** Ask the kernel (through the parent) for what a store read needs. */
function ask(asks) {
  const id = nextAsk++;
  reads.roundTrips += 1;
  reads.asks += asks.length;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    up({ somatize: "ask", id, asks });
  });
}

/** Wait until the page's status says `text` (a run being shown), at most `ms`. */
async function statusSays(text, ms = 60000) {
  const t0 = performance.now();
  while (!document.getElementById("status").textContent.startsWith(text)) {
    if (performance.now() - t0 > ms) throw new Error(`the page did not show ${text} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function showStore(init) {
  setKernelChannel(ask);
  document.body.dataset.mode = "store";
  const source = kernelSource();
  // What the kernel sent unasked as the view rendered (the listing, the named run's files).
  if (Array.isArray(init.primed)) source.take(init.primed);
  performance.mark("somatize:primed");
  // Watched from now: the verdict is drawn before the rest of the view (the progress, the other
  // figures, the runs overlaid), which openEmbedded also waits for.
  verdictDrawn(init.run || null);
  await openEmbedded(source, init.store, Boolean(init.live), init.run || null);
  const error = document.getElementById("error").textContent;
  if (error) throw new Error(error);
  const select = document.getElementById("run");
  if (init.run && select.value !== init.run) {
    if (![...select.options].some((o) => o.value === init.run)) throw new Error(`no run ${JSON.stringify(init.run)} in ${init.store}`);
    select.value = init.run;
    select.dispatchEvent(new Event("change"));
    await statusSays(`Showing run ${init.run} `);
  }
  performance.mark("somatize:shown");
  document.body.dataset.widget = "ready";
  up({ somatize: "shown", what: "store" });
}

/** Tell the parent when the verdict (of `run`, when one was named) is on screen — judged, its
 * tables painted and its figures on screen drawn (www/store-page.js's `judged`), then painted:
 * the first frame after that, or 50 ms when no frame comes (a frame out of the window) —, with
 * this frame's marks (ms since its start) and the reads it took: the open time of
 * docs/notebooks.md. The verdict's tables, painted before its figures are drawn, are marked
 * `somatize:verdict-tables`. */
async function verdictDrawn(run) {
  const verdict = document.getElementById("verdict");
  const ours = () => !run || document.getElementById("run")?.value === run;
  const painted = () => new Promise((resolve) => {
    requestAnimationFrame(() => resolve());
    setTimeout(resolve, 50);
  });
  const seen = (test) => new Promise((resolve) => {
    if (test()) return resolve();
    const watch = new MutationObserver(() => {
      if (!test()) return;
      watch.disconnect();
      resolve();
    });
    watch.observe(verdict, { childList: true, attributes: true, attributeFilter: ["data-judged"] });
  });
  const judged = () => Number(verdict.dataset.judged ?? 0) >= 1 && ours();
  seen(() => verdict.childElementCount > 0 && ours()).then(painted).then(() => performance.mark("somatize:verdict-tables"));
  await seen(judged);
  await painted();
  performance.mark("somatize:verdict");
  const marks = Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, Math.round(m.startTime)]));
  up({ somatize: "drawn", marks, reads: { ...reads } });
}

/** Live: rows of numbers per forward arrive; the figure is redrawn at most twice a second. */
function showLive(init) {
  document.body.dataset.mode = "live";
  const box = document.createElement("div");
  box.id = "fig-live";
  box.className = "figure";
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Progress, live");
  document.getElementById("main").append(box);
  const live = new Live({ title: init.title ?? "live", smooth: init.smooth ?? 0 });
  let scheduled = false;
  let drawing = Promise.resolve();
  const redraw = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      drawing = drawing.then(() => draw(box, live.figure())).catch((e) => up({ somatize: "failed", message: e.message }));
      drawing.then(() => {
        box.dataset.forwards = String(live.seen().forwards);
      });
    }, 500);
  };
  window.somatizeLive = live; // for tests: what has arrived
  redraw();
  document.body.dataset.widget = "ready";
  up({ somatize: "shown", what: "live" });
  let have = 0; // rows had: a row message starting before it repeats some (a view's hello)
  return (rows) => {
    const start = Number(rows.start ?? have);
    const n = rows.packed.length / 4;
    if (start > have) {
      up({ somatize: "failed", message: `rows ${have}–${start - 1} never arrived` });
      return;
    }
    const skip = have - start;
    if (skip >= n) return;
    const errors = {};
    for (const [k, v] of Object.entries(rows.errors ?? {})) if (Number(k) >= skip) errors[String(Number(k) - skip)] = v;
    have += live.pushRows(rows.packed.subarray(4 * skip), errors);
    redraw();
  };
}

let onRows = null;
const early = [];
window.addEventListener("message", async ({ data, source }) => {
  if (source !== parent || !data || typeof data.somatize !== "string") return;
  if (data.somatize === "answers") {
    const w = waiting.get(data.id);
    waiting.delete(data.id);
    if (!w) return;
    if (data.error) w.reject(new Error(data.error));
    else w.resolve(data.answers);
  } else if (data.somatize === "rows") {
    if (onRows) onRows(data);
    else early.push(data);
  } else if (data.somatize === "init") {
    performance.mark("somatize:init");
    try {
      if (data.mode === "live") {
        onRows = showLive(data);
        for (const r of early.splice(0)) onRows(r);
      } else await showStore(data);
    } catch (e) {
      document.body.dataset.widget = "failed";
      up({ somatize: "failed", message: e?.message ?? String(e) });
    }
  }
});
performance.mark("somatize:ready");
up({ somatize: "ready" });
