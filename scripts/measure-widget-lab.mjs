// The notebook widget's open time in a real JupyterLab, several times over one server (docs/notebooks.md,
// "Measured"): `jupyter lab` started as tests/browser/jupyter.test.mjs starts it, the cells above the
// `somatize.show` cell run once, then ROUNDS times: a new browser window opens the notebook and runs
// the show cell (a window's first view: the page and wasm come from the kernel), then runs it again
// (the window has them). Each time is the cell's run to the verdict drawn, from the widget's marks.
// Prints each round, the medians and the load average.
//
//   node scripts/measure-widget-lab.mjs [--app lab|notebook] [--rounds N] [--trace out.json] [--variant NAME:page=P,wasm=W,esm=E …]
//
// --app notebook measures Notebook 7 (`jupyter notebook`, as tests/browser/notebook7.test.mjs) instead.
//
// --trace writes a Chrome trace (CDP tracing: timeline, V8, user timing) of the first round's first
// view, and prints where its main thread's time went between the cell's run and the verdict, and the
// frame's CPU profile.
//
// --variant (given twice or more) compares builds of the widget in one session, alternating: each
// round runs every variant in turn, the kernel first told to send that variant's page (a
// page.html.gz), wasm (a page.wasm.gz) and widget module (a widget.js) in place of the package's
// (those not named stay the package's); medians are printed per variant. Before/after measured
// back to back this way share the machine's load.
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { launch } from "../tests/browser/harness.mjs";
import { rerunShowCell, runCellsAbove, showCellIndex, startJupyter } from "../tests/browser/jupyter-harness.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const rounds = Number(arg("--rounds", 5));
const app = arg("--app", "lab");
if (!["lab", "notebook"].includes(app)) throw new Error(`--app ${app}: lab or notebook`);
const tracePath = arg("--trace", null);
/** The variants to alternate: [{name, page?, wasm?, esm?}] (one, the package's, when none is named). */
const variants = process.argv.flatMap((a, i) => (a === "--variant" ? [process.argv[i + 1]] : [])).map((v) => {
  const [name, rest = ""] = v.split(/:(.*)/s);
  const out = { name };
  for (const kv of rest.split(",").filter(Boolean)) {
    const [k, path] = kv.split(/=(.*)/s);
    if (!["page", "wasm", "esm"].includes(k)) throw new Error(`--variant ${v}: ${k} is not page, wasm or esm`);
    out[k] = resolve(path);
  }
  return out;
});
if (!variants.length) variants.push({ name: "package" });

/** Tell the kernel which page, wasm and widget module the next view gets (the package's unless named). */
async function useVariant(page, v) {
  const code = `import somatize.widget as _w
_w._measure_orig = getattr(_w, "_measure_orig", None) or (_w._page_and_wasm(), _w.StoreView._esm)
_w._assets = (${v.page ? `open(${JSON.stringify(v.page)}, "rb").read()` : "_w._measure_orig[0][0]"}, ${v.wasm ? `open(${JSON.stringify(v.wasm)}, "rb").read()` : "_w._measure_orig[0][1]"})
_w.StoreView._esm = ${v.esm ? `open(${JSON.stringify(v.esm)}).read()` : "_w._measure_orig[1]"}`;
  await page.evaluate(async (code) => {
    const kernel = window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel;
    const reply = await kernel.requestExecute({ code, silent: true, store_history: false }).done;
    if (reply.content.status !== "ok") throw new Error(`the kernel refused the variant: ${reply.content.evalue}`);
  }, code);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : Math.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2);
};

const line = (label, r) => {
  const t = r.times;
  const f = t.frame ?? {};
  return `${label} ${r.openMs} ms, whole view ${r.shownMs} ms (render +${Math.round(r.openMs - t.verdict)}; page ${t.page}, wasm here ${t.wasmHere}, asked ${t.wasmAsked}, sent ${t.wasm}, ready ${t.ready}, shown ${t.shown}, ` +
    `verdict ${t.verdict}; frame: wasm ready ${f["somatize:wasm-ready"]}, init ${f["somatize:init"]}, verdict ${f["somatize:verdict"]}; ` +
    `${t.kernel?.trips ?? 0} round trips, ${t.kernel?.ms ?? 0} ms waited on the kernel; primed +${t.primed?.ms} ms, ${((t.primed?.bytes ?? 0) / 1048576).toFixed(2)} MiB)` +
    (process.env.MARKS ? `\n    ${Object.entries(f).sort((a, b) => a[1] - b[1]).map(([k, v]) => `${k.replace("somatize:", "")} ${v}`).join(", ")}` : "");
};

/** The frame's CPU profile (V8's sampled profile in the trace, of the renderer that set the
 * widget's marks) from `t0` to `t1` (µs): self time by function (url:line), the top 40. */
function profileOf(events, t0, t1) {
  const pid = events.find((e) => e.name === "somatize:verdict")?.pid;
  const nodes = new Map(); // id -> {name}
  const self = new Map();
  for (const e of events) {
    if (e.pid !== pid || (e.name !== "Profile" && e.name !== "ProfileChunk")) continue;
    const chunk = e.args?.data;
    let at = e.name === "Profile" ? chunk?.startTime : null;
    for (const n of chunk?.cpuProfile?.nodes ?? []) {
      const f = n.callFrame ?? {};
      nodes.set(`${e.id}:${n.id}`, `${f.functionName || "(anonymous)"} ${(f.url || "").slice(-30)}:${f.lineNumber ?? ""}:${f.columnNumber ?? ""} [${f.codeType ?? ""}]`);
    }
    const samples = chunk?.cpuProfile?.samples ?? [];
    const deltas = chunk?.timeDeltas ?? [];
    self.chunks ??= [];
    self.chunks.push({ id: e.id, samples, deltas });
  }
  // Chunks of one profile carry time deltas from the profile's start.
  const starts = new Map(events.filter((e) => e.pid === pid && e.name === "Profile").map((e) => [e.id, e.args.data.startTime]));
  const clock = new Map();
  const by = new Map();
  for (const c of self.chunks ?? []) {
    let t = clock.get(c.id) ?? starts.get(c.id) ?? 0;
    for (let i = 0; i < c.samples.length; i++) {
      const dt = c.deltas[i] ?? 0;
      t += dt;
      if (t < t0 || t > t1) continue;
      const name = nodes.get(`${c.id}:${c.samples[i]}`) ?? "?";
      by.set(name, (by.get(name) ?? 0) + Math.max(0, c.deltas[i + 1] ?? dt) / 1000);
    }
    clock.set(c.id, t);
  }
  return [...by].sort((a, b) => b[1] - a[1]).slice(0, 40).map(([k, v]) => `  ${v.toFixed(0).padStart(6)} ms ${k}`).join("\n");
}

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
const jupyter = await startJupyter(app, `measure-widget-${app}`);
const browser = await launch();
const first = Object.fromEntries(variants.map((v) => [v.name, []]));
const again = Object.fromEntries(variants.map((v) => [v.name, []]));
const firstShown = Object.fromEntries(variants.map((v) => [v.name, []]));
try {
  // The cells above the show cell, once.
  let page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(jupyter.url);
  const i = await showCellIndex(page);
  await runCellsAbove(page, i);
  await page.close();
  for (let r = 0; r < rounds; r++) for (const v of variants) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    page = await context.newPage();
    page.on("console", (m) => m.type() === "error" && console.log(`  (console error in the window: ${m.text().slice(0, 300)})`));
    await page.goto(jupyter.url);
    await showCellIndex(page);
    await useVariant(page, v);
    await page.waitForTimeout(1000); // JupyterLab settled
    const trace = tracePath && r === 0 && v === variants[0];
    if (trace) {
      await browser.startTracing(page, { path: tracePath, screenshots: false,
        categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.wasm", "blink.user_timing", "toplevel", "disabled-by-default-v8.compile", "disabled-by-default-v8.cpu_profiler"] });
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
      console.log("the frame's CPU profile (self time by function, sampled):");
      console.log(profileOf(events, startUs, endUs));
      writeFileSync(tracePath, JSON.stringify(data));
    }
    const label = variants.length > 1 ? `round ${r + 1} (${v.name})` : `round ${r + 1}`;
    console.log(line(`${label}, first view:`, a));
    first[v.name].push(a.openMs);
    firstShown[v.name].push(a.shownMs);
    const b = await rerunShowCell(page, i);
    console.log(line(`${label}, run again:`, b));
    again[v.name].push(b.openMs);
    await context.close();
  }
} finally {
  await browser.close();
  await jupyter.stop();
}
const load1 = loadavg();
for (const v of variants) {
  const f = first[v.name];
  const g = again[v.name];
  const w = firstShown[v.name];
  console.log(`${variants.length > 1 ? `${v.name}: ` : ""}first view: median ${median(f)} ms (${f.join(", ")}); run again: median ${median(g)} ms (${g.join(", ")}); ` +
    `first view to the whole view shown: median ${median(w)} ms (${w.join(", ")})`);
}
console.log(`${app === "lab" ? "JupyterLab" : "Notebook 7"}; load average ${load0.map((x) => x.toFixed(2)).join(" ")} before, ${load1.map((x) => x.toFixed(2)).join(" ")} after`);
