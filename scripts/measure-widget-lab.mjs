// The notebook widget's open time in a real JupyterLab, several times over one server (docs/notebooks.md,
// "Measured"): `jupyter lab` started as tests/browser/jupyter.test.mjs starts it, the cells above the
// `somatize.show` cell run once, then ROUNDS times: a new browser window opens the notebook and runs
// the show cell (a window's first view: the page and wasm come from the kernel), then runs it again
// (the window has them). Each time is the cell's run to the verdict drawn, from the widget's marks.
// Prints each round, the medians and the load average.
//
//   node scripts/measure-widget-lab.mjs [--rounds N] [--trace out.json]
//
// --trace writes a Chrome trace (CDP tracing: timeline, V8, user timing) of the first round's first
// view, and prints where its main thread's time went between the cell's run and the verdict.
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { launch } from "../tests/browser/harness.mjs";
import { rerunShowCell, runCellsAbove, showCellIndex, startJupyter } from "../tests/browser/jupyter-harness.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const rounds = Number(arg("--rounds", 5));
const tracePath = arg("--trace", null);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : Math.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2);
};

const line = (label, r) => {
  const t = r.times;
  const f = t.frame ?? {};
  return `${label} ${r.openMs} ms (render +${Math.round(r.openMs - t.verdict)}; page ${t.page}, wasm ${t.wasm}, ready ${t.ready}, shown ${t.shown}, ` +
    `verdict ${t.verdict}; frame: wasm ready ${f["somatize:wasm-ready"]}, init ${f["somatize:init"]}, verdict ${f["somatize:verdict"]}; ` +
    `${t.kernel?.trips ?? 0} round trips, ${t.kernel?.ms ?? 0} ms waited on the kernel; primed +${t.primed?.ms} ms, ${((t.primed?.bytes ?? 0) / 1048576).toFixed(2)} MiB)` +
    (process.env.MARKS ? `\n    ${Object.entries(f).sort((a, b) => a[1] - b[1]).map(([k, v]) => `${k.replace("somatize:", "")} ${v}`).join(", ")}` : "");
};

/** Where the trace's main-thread time went: top-level tasks' self time by event name, from `t0` to `t1` (µs). */
function summarise(trace, t0, t1) {
  const events = trace.traceEvents ?? trace;
  const byName = new Map();
  for (const e of events) {
    if (e.ph !== "X" || e.ts < t0 || e.ts > t1 || !e.dur) continue;
    if (!["RunTask", "ThreadControllerImpl::RunTask"].includes(e.name) && !/v8\.|V8\.|Compile|wasm|Parse|Layout|Paint|Evaluate|FunctionCall|GC|UpdateLayer|Style/i.test(e.name)) continue;
    const key = `${e.name}`;
    const v = byName.get(key) ?? { ms: 0, n: 0 };
    v.ms += e.dur / 1000;
    v.n += 1;
    byName.set(key, v);
  }
  return [...byName].sort((a, b) => b[1].ms - a[1].ms).slice(0, 30).map(([k, v]) => `  ${v.ms.toFixed(0).padStart(6)} ms ${String(v.n).padStart(5)}× ${k}`).join("\n");
}

const load0 = loadavg();
const jupyter = await startJupyter("lab", "measure-widget-lab");
const browser = await launch();
const first = [];
const again = [];
try {
  // The cells above the show cell, once.
  let page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(jupyter.url);
  const i = await showCellIndex(page);
  await runCellsAbove(page, i);
  await page.close();
  for (let r = 0; r < rounds; r++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    page = await context.newPage();
    await page.goto(jupyter.url);
    await showCellIndex(page);
    await page.waitForTimeout(1000); // JupyterLab settled
    const trace = tracePath && r === 0;
    if (trace) {
      await browser.startTracing(page, { path: tracePath, screenshots: false,
        categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.wasm", "blink.user_timing", "toplevel", "disabled-by-default-v8.compile"] });
    }
    const a = await rerunShowCell(page, i);
    if (trace) {
      await browser.stopTracing();
      const data = JSON.parse(readFileSync(tracePath, "utf8"));
      const events = data.traceEvents ?? data;
      // The cell's run is the first user-timing-free anchor we have: the trace's clock is not the page's,
      // so take the window from the widget's render (its first mark) minus the time before it.
      const marks = events.filter((e) => e.cat?.includes("blink.user_timing") && e.name?.startsWith("somatize:"));
      const verdict = marks.find((e) => e.name === "somatize:verdict");
      const endUs = verdict ? verdict.ts : Math.max(...events.map((e) => e.ts || 0));
      const startUs = endUs - a.openMs * 1000;
      console.log(`trace of round 1's first view (${a.openMs} ms): the main threads' events from the cell's run to the verdict, by self time:`);
      console.log(summarise(data, startUs, endUs));
      writeFileSync(tracePath, JSON.stringify(data));
    }
    console.log(line(`round ${r + 1}, first view:`, a));
    first.push(a.openMs);
    const b = await rerunShowCell(page, i);
    console.log(line(`round ${r + 1}, run again:`, b));
    again.push(b.openMs);
    await context.close();
  }
} finally {
  await browser.close();
  await jupyter.stop();
}
const load1 = loadavg();
console.log(`first view: median ${median(first)} ms (${first.join(", ")}); run again: median ${median(again)} ms (${again.join(", ")}); ` +
  `load average ${load0.map((x) => x.toFixed(2)).join(" ")} before, ${load1.map((x) => x.toFixed(2)).join(" ")} after`);
