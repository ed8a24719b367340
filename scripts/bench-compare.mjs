#!/usr/bin/env node
// Many runs on the page, in headless Chromium over HTTP: a store of RUNS runs × FORWARDS forwards
// (default 1,000 × 10,000). Times, by the page's clock: the run table shown with every run's
// health; the overlay of 50 runs drawn; and interactions on it (smoothing changed, a run taken
// out and put back, a zoom). Medians over BENCH_ROUNDS page loads (default 3), each interaction
// repeated 5 times per load, printed with the date and the machine's load.
//
//   node scripts/bench-compare.mjs [--runs N] [--forwards N] [--regen] [--page DIR] [--store DIR] [--profile] [--stand-in] [--folder | --handle]
//
// --folder opens the store as a person picks a folder (the page's folder input, files read
// lazily through the browser's File objects: no HTTP); the table is timed from the pick.
// --handle opens it as "Open a folder…" does (showDirectoryPicker: a FileSystemDirectoryHandle
// read lazily, no FileList): headless Chromium cannot be driven through that dialog, so the
// store is first copied (not timed, once per run of this script) into the origin-private file
// system of a profile on disk (navigator.storage.getDirectory(), a real directory handle of the
// same kind, read through the same code), showDirectoryPicker is made to answer that copy's
// handle, and the table is timed from the click on "Open a folder…".
// Each load also reads the page's memory at its end: the proportional set size (PSS,
// /proc/PID/smaps_rollup) of the renderer holding the page and its worker (the only one with
// a dedicated worker), against the page's bound of 200 MiB (docs/benchmarks.md). Playwright
// keeps DevTools' copy of every HTTP response in that renderer, so over HTTP it reads high;
// from a folder nothing goes over the network. It is read twice: as it is (garbage not yet
// collected included: V8 collects its old generation only when that reaches its limit) and
// after DevTools' HeapProfiler.collectGarbage in its worker, then in the page too (what is
// still held); in between, after --idle S seconds (default 20) in which nothing is done (what the
// browser gives back by itself). From a folder, the table is also timed from the input's change event (the page's own
// part: before it, the browser enumerates the folder and makes its FileList).
//
// --stand-in draws every figure of the page with a stand-in for plotly (installed before the
// page's scripts as globalThis.Plotly, which the page uses when it is there): each trace's
// points stroked on one canvas, no axes, no hover, nothing kept but the traces. Not a renderer
// for the page: a floor, measuring what the rest of the page (the table, the worker's answers,
// the figures' JSON) leaves in memory when drawing costs next to nothing.
//
// --store DIR (under the checkout) opens that store instead, as it is; --page DIR opens DIR/index.html instead of www/ (a copy of an earlier page and its pkg/ put
// side by side under the checkout, to measure before and after in one session); --profile
// prints where the time went: each call to the package's worker (by the page's clock, from
// posting it to its answer) and the main thread's busy time between.
//
// The store is written once into target/bench-compare/store (cargo run --example
// compare_bench_store: the last 1,000 forwards of each run with blobs through the real writer,
// the rest as index lines; each run finished, so its summary is in summaries.jsonl) and reused
// (--regen writes it again). Needs scripts/build-wasm.sh first.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { serve, launch, root, runTableShown } from "../tests/browser/harness.mjs";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const RUNS = Number(flag("--runs", 1000));
const FORWARDS = Number(flag("--forwards", 10000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PAGE = flag("--page", "www").replace(/\/+$/, "");
const PROFILE = args.includes("--profile");
const REPEAT = 5;
/** Seconds the page is left alone after the interactions before its memory is read again. */
const IDLE_S = Number(flag("--idle", 20));
const STAND_IN = args.includes("--stand-in");
const FOLDER = args.includes("--folder");
const HANDLE = args.includes("--handle");
if (FOLDER && HANDLE) throw new Error("--folder or --handle, not both");
const FROM = FOLDER ? "from a folder" : HANDLE ? "from a directory handle" : "over HTTP";

const readText = (path) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
};
/** The PSS in bytes of the Chromium renderer running a dedicated worker (the page under test). */
function pageMemory() {
  for (const p of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    if (!readText(`/proc/${p}/cmdline`).includes("--type=renderer")) continue;
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    if (!tasks.some((t) => readText(`/proc/${p}/task/${t}/comm`).trim() === "DedicatedWorker")) continue;
    return Number(/^Pss:\s+(\d+) kB/m.exec(readText(`/proc/${p}/smaps_rollup`))?.[1] ?? 0) * 1024;
  }
  return NaN;
}
const rel = flag("--store", `target/bench-compare/store-${RUNS}x${FORWARDS}`).replace(/\/+$/, "");
const store = join(root, rel);

function ensureStore() {
  const summaries = join(store, "summaries.jsonl");
  const have = existsSync(summaries)
    ? readFileSync(summaries, "utf8").split("\n").filter((l) => l.includes('"summary"')).length : 0;
  const lines = existsSync(join(store, "runs/g00-s000/w0/index.jsonl"))
    ? readFileSync(join(store, "runs/g00-s000/w0/index.jsonl"), "utf8").split("\n").filter(Boolean).length : 0;
  if (have === RUNS && lines === FORWARDS && !args.includes("--regen")) return;
  console.error(`writing ${RUNS} runs × ${FORWARDS} forwards into ${rel}…`);
  execFileSync("cargo", ["run", "--quiet", "--example", "compare_bench_store", "--", store, String(RUNS), String(FORWARDS)],
    { cwd: root, stdio: "inherit" });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};

/** In the page: run `act` (a function body's source, given `gd`, the overlay) and resolve with the
 * milliseconds until `done` (source of a predicate over `gd` and `before`) holds, by the page's clock
 * (checked every animation frame). */
function inPage(page, act, done) {
  return page.evaluate(async ([act, done]) => {
    const gd = document.getElementById("fig-compare");
    const key = () => JSON.stringify((gd.data ?? []).map((t) => [t.name, t.y?.length, t.y?.[t.y.length >> 1]]));
    const before = key();
    const t0 = performance.now();
    await window.__bench[act](gd);
    await new Promise((resolve) => {
      const tick = () => (window.__bench[done](gd, before, key) ? resolve() : requestAnimationFrame(tick));
      tick();
    });
    return performance.now() - t0;
  }, [act, done]);
}

/** The actions and predicates, installed in the page as plain functions (no eval under its CSP). */
function install(page) {
  return page.evaluate(() => {
    const $ = (id) => document.getElementById(id);
    const fire = (id, type = "change") => $(id).dispatchEvent(new Event(type, { bubbles: true }));
    let weight = 0.5;
    window.__bench = {
      choose50: () => {
        $("run-filter").value = "g00-*";
        fire("run-filter", "input");
        $("choose-shown").click();
      },
      drawn50: (gd) => gd.dataset.drawn === "true" && gd.data?.length === 50,
      ema: () => {
        weight = weight >= 0.9 ? 0.5 : weight + 0.1;
        $("compare-smooth-kind").value = "ema";
        $("compare-smooth").value = String(weight);
        fire("compare-smooth");
      },
      changed: (gd, before, key) => gd.dataset.drawn === "true" && key() !== before,
      out: () => document.querySelector('#runs-table tbody tr[data-run="g00-s007"] td:nth-child(3)')
        .dispatchEvent(new MouseEvent("click", { bubbles: true, ctrlKey: true })),
      drawn49: (gd) => gd.dataset.drawn === "true" && gd.data?.length === 49,
      back: () => document.querySelector('#runs-table tbody tr[data-run="g00-s007"] td:nth-child(3)')
        .dispatchEvent(new MouseEvent("click", { bubbles: true, ctrlKey: true })),
      zoom: async (gd) => {
        const n = Number(gd.data[0].x.at(-1));
        await globalThis.Plotly.relayout(gd, { "xaxis.range": [n * 0.4, n * 0.5] });
      },
      unzoom: async (gd) => {
        await globalThis.Plotly.relayout(gd, { "xaxis.autorange": true });
      },
      always: () => true,
    };
  });
}

/** Installed before the page's scripts (--profile): times every message to the package's worker
 * and the main thread's long tasks, and reports them per phase. */
function profiler() {
  const calls = [];
  const longTasks = [];
  const Real = globalThis.Worker;
  globalThis.Worker = class extends Real {
    constructor(...a) {
      super(...a);
      const pending = new Map();
      const post = this.postMessage.bind(this);
      this.postMessage = (msg, ...rest) => {
        if (msg?.id === undefined) return post(msg, ...rest); // an answer to the worker (a folder's Files it asked for)
        const what = msg?.method === "call" ? `${msg.args?.[1]}${msg.args?.[2]?.kind ? `:${msg.args[2].kind}` : ""}` : msg?.method;
        pending.set(msg?.id, { what, t0: performance.now() });
        return post(msg, ...rest);
      };
      this.addEventListener("message", ({ data }) => {
        const p = pending.get(data?.id);
        if (!p) return;
        pending.delete(data.id);
        calls.push({ ...p, t1: performance.now() });
      });
    }
  };
  new PerformanceObserver((l) => longTasks.push(...l.getEntries().map((e) => [e.startTime, e.duration])))
    .observe({ type: "longtask", buffered: true });
  window.__profile = {
    report() {
      const ms = (x) => `${x.toFixed(0)} ms`;
      const lines = calls.map((c) => `  ${ms(c.t0).padStart(8)} +${ms(c.t1 - c.t0).padStart(8)}  worker ${c.what}`);
      lines.push(...longTasks.filter(([, d]) => d >= 30).map(([t, d]) => `  ${ms(t).padStart(8)} +${ms(d).padStart(8)}  main thread busy`));
      return lines.sort((a, b) => parseFloat(a) - parseFloat(b)).join("\n");
    },
  };
}

/** Installed before the page's scripts (--stand-in): a plotly that only strokes each trace's
 * points on a canvas (its x range the layout's, or the traces'), so that drawing allocates next
 * to nothing; what the page and the bench read of a drawn figure (`data`, `layout`) is kept. */
function plotlyStandIn() {
  const paint = (gd) => {
    let c = gd.querySelector(":scope > canvas");
    if (!c) {
      gd.replaceChildren();
      c = document.createElement("canvas");
      c.width = Math.max(100, gd.clientWidth || 600);
      c.height = gd.layout?.height ?? 400;
      gd.append(c);
    }
    const ctx = c.getContext("2d");
    ctx.clearRect(0, 0, c.width, c.height);
    const range = gd.layout?.xaxis?.range;
    let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
    for (const t of gd.data) {
      for (let i = 0; i < (t.x?.length ?? 0); i++) {
        const x = Number(t.x[i]);
        const y = t.y[i];
        if (range && (x < range[0] || x > range[1])) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
    const sx = c.width / (x1 - x0 || 1);
    const sy = c.height / (y1 - y0 || 1);
    for (const t of gd.data) {
      ctx.beginPath();
      ctx.strokeStyle = t.line?.color ?? "#36c";
      for (let i = 0; i < (t.x?.length ?? 0); i++) {
        const px = (Number(t.x[i]) - x0) * sx;
        const py = c.height - (t.y[i] - y0) * sy;
        if (i) ctx.lineTo(px, py);
        else ctx.moveTo(px, py);
      }
      ctx.stroke();
    }
  };
  globalThis.Plotly = {
    async react(gd, data, layout) {
      gd.data = data;
      gd.layout = layout;
      paint(gd);
    },
    async restyle(gd, update, indices) {
      indices.forEach((k, j) => Object.keys(update).forEach((key) => { gd.data[k][key] = update[key][j]; }));
      paint(gd);
    },
    async relayout(gd, update) {
      const xaxis = { ...gd.layout?.xaxis };
      if (update["xaxis.autorange"]) delete xaxis.range;
      if (update["xaxis.range"]) xaxis.range = update["xaxis.range"];
      gd.layout = { ...gd.layout, xaxis };
      paint(gd);
    },
    purge(gd) {
      delete gd.data;
      delete gd.layout;
      gd.replaceChildren();
    },
  };
}

if (!args.includes("--store")) ensureStore();
/**
 * A browser whose contexts keep the origin-private file system on disk (--handle: a profile of
 * its own in a temporary folder, removed at the end), and the store copied into it (folder
 * `bench-store` of the origin's OPFS) through a folder input of a blank page of the origin.
 */
async function handleBrowser(origin) {
  const dir = mkdtempSync(join(tmpdir(), "bench-compare-handle-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const t0 = Date.now();
  const page = await context.newPage();
  await page.goto(`${origin}/${PAGE}/index.html`); // the origin (its document then replaced)
  await page.setContent('<input type="file" id="copy" webkitdirectory multiple>');
  await page.setInputFiles("#copy", realpathSync(store));
  // A copy that hangs (the browser's storage stuck) says so instead of waiting for ever.
  const stuck = new Promise((_, reject) => setTimeout(() => reject(new Error("copying the store into the origin-private file system took over 10 minutes")), 600_000).unref());
  const copied = await Promise.race([stuck, page.evaluate(async () => {
    const top = await navigator.storage.getDirectory();
    await top.removeEntry("bench-store", { recursive: true }).catch(() => {});
    const dirs = new Map([["", await top.getDirectoryHandle("bench-store", { create: true })]]);
    const dirOf = async (path) => {
      if (dirs.has(path)) return dirs.get(path);
      const i = path.lastIndexOf("/");
      const d = await (await dirOf(i < 0 ? "" : path.slice(0, i))).getDirectoryHandle(path.slice(i + 1), { create: true });
      dirs.set(path, d);
      return d;
    };
    const files = [...document.getElementById("copy").files];
    let bytes = 0;
    const copy = async (f) => {
      const path = f.webkitRelativePath.split("/").slice(1); // under the folder picked
      const d = await dirOf(path.slice(0, -1).join("/"));
      const w = await (await d.getFileHandle(path.at(-1), { create: true })).createWritable();
      await f.stream().pipeTo(w);
      bytes += f.size;
    };
    for (let i = 0; i < files.length; i += 16) await Promise.all(files.slice(i, i + 16).map(copy));
    return { files: files.length, bytes };
  })]);
  await page.close();
  console.error(`copied ${copied.files} files (${(copied.bytes / 2 ** 20).toFixed(0)} MiB) into the origin-private file system in ${((Date.now() - t0) / 1000).toFixed(1)} s (not timed)`);
  const browser = context.browser();
  return {
    browser,
    newPage: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Installed before the page's scripts (--handle): "Open a folder…" is answered the OPFS copy's handle. */
function pickerAnswersCopy() {
  window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle("bench-store");
}

const { server, origin } = await serve();
const handled = HANDLE ? await handleBrowser(origin) : null;
const browser = handled?.browser ?? await launch();
const newPage = () => handled?.newPage() ?? browser.newPage({ viewport: { width: 1280, height: 800 } });
const got = { table: [], fromChange: [], overlay50: [], ema: [], out: [], back: [], zoom: [], unzoom: [], pssTable: [], pss: [], pssIdle: [], pssWorkerGc: [], pssGc: [] };
// DevTools sessions to the page's worker (for its garbage collection), through the browser's.
const devtools = await browser.newBrowserCDPSession();
const answers = new Map();
let nextCall = 1;
devtools.on("Target.receivedMessageFromTarget", ({ message }) => {
  const m = JSON.parse(message);
  answers.get(m.id)?.(m);
  answers.delete(m.id);
});
/** Collect the garbage of every worker, then of the page (its main thread); gives the PSS in
 * between (what the worker's garbage alone was). */
async function collectGarbage(page) {
  const { targetInfos } = await devtools.send("Target.getTargets");
  for (const w of targetInfos.filter((t) => t.type === "worker")) {
    const { sessionId } = await devtools.send("Target.attachToTarget", { targetId: w.targetId, flatten: false });
    const id = nextCall++;
    const done = new Promise((resolve) => answers.set(id, resolve));
    await devtools.send("Target.sendMessageToTarget", { sessionId, message: JSON.stringify({ id, method: "HeapProfiler.collectGarbage" }) });
    await done;
    await devtools.send("Target.detachFromTarget", { sessionId });
  }
  await new Promise((resolve) => setTimeout(resolve, 500)); // freed pages given back
  const workerCollected = pageMemory();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.detach();
  await new Promise((resolve) => setTimeout(resolve, 500));
  return workerCollected;
}
try {
  for (let round = 0; round < ROUNDS; round++) {
    const page = await newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    if (PROFILE) await page.addInitScript(profiler);
    if (HANDLE) await page.addInitScript(pickerAnswersCopy);
    if (STAND_IN) await page.addInitScript(plotlyStandIn);
    let t0 = 0;
    if (HANDLE) {
      await page.goto(`${origin}/${PAGE}/index.html`);
      await page.waitForFunction(() => !document.querySelector("#pick-dir-box")?.hidden);
      t0 = await page.evaluate(() => {
        const t = performance.now();
        document.getElementById("pick-dir").click();
        return t;
      });
    } else if (FOLDER) {
      await page.goto(`${origin}/${PAGE}/index.html`);
      await page.waitForFunction(() => document.querySelector("#pick-folder"));
      t0 = await page.evaluate(() => {
        document.querySelector("#pick-folder").addEventListener("change", () => { window.__changed = performance.now(); }, { capture: true });
        return performance.now();
      });
      await page.setInputFiles("#pick-folder", realpathSync(store));
    } else {
      await page.goto(`${origin}/${PAGE}/index.html?store=/${rel}/`);
    }
    // The run table with every run's health: RUNS runs, none still being judged.
    await runTableShown(page, RUNS);
    const shown = await page.evaluate(() => [performance.now(), window.__changed]);
    got.table.push(shown[0] - t0);
    if (FOLDER) got.fromChange.push(shown[0] - shown[1]);
    got.pssTable.push(pageMemory());
    await page.waitForFunction(() => document.querySelector("#verdict-headline"), null, { timeout: 600_000 });
    await page.locator("#fig-compare").scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector("#fig-compare").dataset.drawn === "true", null, { timeout: 600_000 });
    await install(page);
    got.overlay50.push(await inPage(page, "choose50", "drawn50"));
    for (let k = 0; k < REPEAT; k++) {
      got.ema.push(await inPage(page, "ema", "changed"));
      got.out.push(await inPage(page, "out", "drawn49"));
      got.back.push(await inPage(page, "back", "drawn50"));
      got.zoom.push(await inPage(page, "zoom", "always"));
      got.unzoom.push(await inPage(page, "unzoom", "always"));
    }
    got.pss.push(pageMemory());
    // Then nothing is done for IDLE_S seconds: what the browser gives back by itself (V8's
    // memory reducer collects a page that stopped allocating; nothing is forced).
    await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
    got.pssIdle.push(pageMemory());
    got.pssWorkerGc.push(await collectGarbage(page));
    got.pssGc.push(pageMemory());
    if (errors.length) throw new Error(`the page failed: ${errors.join("; ")}`);
    if (PROFILE) console.error(`picked at ${t0.toFixed(0)} ms, change event at ${(await page.evaluate(() => window.__changed ?? NaN)).toFixed(0)} ms\n${await page.evaluate(() => window.__profile.report())}`);
    await page.close();
    const mb = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    console.error(`round ${round + 1}: table ${got.table.at(-1).toFixed(0)} ms${FOLDER ? ` (${got.fromChange.at(-1).toFixed(0)} ms from the change event)` : ""}, overlay of 50 ${got.overlay50.at(-1).toFixed(0)} ms, page ${mb(got.pssTable.at(-1))} PSS with the table, ${mb(got.pss.at(-1))} at the end, ${mb(got.pssIdle.at(-1))} ${IDLE_S} s later, ${mb(got.pssWorkerGc.at(-1))} after the worker's garbage collection, ${mb(got.pssGc.at(-1))} after the page's too`);
  }
} finally {
  await (handled ?? browser).close();
  server.close();
}
const ms = (x) => `${x.toFixed(0)} ms`;
console.log(`bench-compare ${new Date().toISOString()} (load average ${loadavg().map((l) => l.toFixed(1)).join(", ")}), ${RUNS} runs × ${FORWARDS} forwards ${FROM}${STAND_IN ? ", every figure drawn by the stand-in for plotly (--stand-in)" : ""}, medians of ${ROUNDS} page loads (interactions ${REPEAT} times each per load)`);
const rows = [
  [`run table with every run's health shown (from ${FOLDER ? "picking the folder" : HANDLE ? "the click on Open a folder…" : "opening the URL"})`, median(got.table), 2000],
  ...(FOLDER ? [["… from the input's change event (the folder's FileList made)", median(got.fromChange), 2000]] : []),
  ["overlay of 50 runs drawn (filter g00-*, choose the runs shown)", median(got.overlay50), 300],
  ["smoothing changed (EMA weight), 50 runs redrawn", median(got.ema), 100],
  ["one run taken out (ctrl-click), 49 redrawn", median(got.out), 100],
  ["put back, 50 redrawn", median(got.back), 100],
  ["zoom in (plotly relayout)", median(got.zoom), 100],
  ["zoom out", median(got.unzoom), 100],
];
for (const [what, t, target] of rows) console.log(`| ${what} | ${ms(t)} | < ${target} ms | ${(t / target).toFixed(2)}× the target |`);
const pssTable = median(got.pssTable);
console.log(`| the page's memory with the table shown (PSS of its renderer${FOLDER || HANDLE ? "" : ", DevTools' copies of the responses included"}) | ${(pssTable / 2 ** 20).toFixed(1)} MiB | < 200 MiB | ${(pssTable / 2 ** 20 / 200).toFixed(2)}× the bound |`);
const pss = median(got.pss);
console.log(`| the page's memory at the end (PSS of its renderer${FOLDER || HANDLE ? "" : ", DevTools' copies of the responses included"}) | ${(pss / 2 ** 20).toFixed(1)} MiB | < 200 MiB | ${(pss / 2 ** 20 / 200).toFixed(2)}× the bound |`);
const pssIdle = median(got.pssIdle);
console.log(`| the page's memory ${IDLE_S} s after the end, nothing done (PSS of its renderer${FOLDER || HANDLE ? "" : ", DevTools' copies of the responses included"}) | ${(pssIdle / 2 ** 20).toFixed(1)} MiB | < 200 MiB | ${(pssIdle / 2 ** 20 / 200).toFixed(2)}× the bound |`);
const pssWorkerGc = median(got.pssWorkerGc);
console.log(`| … after the worker's garbage collection alone (PSS of its renderer${FOLDER || HANDLE ? "" : ", DevTools' copies of the responses included"}) | ${(pssWorkerGc / 2 ** 20).toFixed(1)} MiB | < 200 MiB | ${(pssWorkerGc / 2 ** 20 / 200).toFixed(2)}× the bound |`);
const pssGc = median(got.pssGc);
console.log(`| the page's memory at the end after garbage collection (PSS of its renderer${FOLDER || HANDLE ? "" : ", DevTools' copies of the responses included"}) | ${(pssGc / 2 ** 20).toFixed(1)} MiB | < 200 MiB | ${(pssGc / 2 ** 20 / 200).toFixed(2)}× the bound |`);
