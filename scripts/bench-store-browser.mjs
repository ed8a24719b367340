// Scale benchmark (not a test): a 2 GiB snapshot served over HTTP, opened in headless Chromium
// through the package's worker; its runs and one loss curve listed. Prints, as medians over
// RUNS launches (5 by default), the time, the fraction of the file read, and "the page's
// memory": the proportional set size (PSS) of the one renderer process holding the page and
// its worker, in total and over an empty page's renderer measured in the same launch, with a
// breakdown by kind of mapping and the JS heaps (page, worker) and wasm memory inside it.
//
// Chromium is driven over --remote-debugging-pipe with only Target, Runtime and Memory calls:
// Playwright enables DevTools' Network domain on every page and worker, which keeps a copy of
// each response body in the renderer (~1.4x the bytes read, growing with every scan) — memory
// a page never has without DevTools open. The renderer is found by its "DedicatedWorker" thread.
// Usage: node scripts/bench-store-browser.mjs [FORWARDS=100000] [BLOB_GIB=2]   (after scripts/build-wasm.sh;
// RUNS=n launches; KEEP=1 keeps target/bench-store-browser/ for the next time)
import { execFileSync, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serve } from "../tests/browser/harness.mjs";
import { root, cli } from "../tests/node/store-fixture.mjs";

const forwards = Number(process.argv[2] ?? 100000);
const blobBytes = Math.round(Number(process.argv[3] ?? 2) * 2 ** 30);
const runs = Number(process.env.RUNS ?? 5);
const rel = "target/bench-store-browser";
const dir = join(root, rel);
const stamp = JSON.stringify({ forwards, blobBytes, version: 1 });

/** A store with one run: `forwards` index lines (loss.value summarised), forward 0 holding a
 * `blobBytes` blob (a sparse file of zeros; only its length matters here), exported as big.zip.
 * A snapshot left by an earlier KEEP=1 run with the same sizes is used again. */
function makeStore() {
  if (existsSync(join(dir, "stamp.json")) && readFileSync(join(dir, "stamp.json"), "utf8") === stamp) return;
  rmSync(dir, { recursive: true, force: true });
  const w = join(dir, "store/runs/big/w0");
  mkdirSync(join(w, "blobs"), { recursive: true });
  writeFileSync(join(dir, "store/somatize-store.json"), '{"format":"somatize-store","version":"1.1"}');
  writeFileSync(join(dir, "store/listing.jsonl"), '{"run":"big","writer":"w0"}\n');
  const blob = join(w, "blobs/000000000000.npz");
  closeSync(openSync(blob, "w"));
  truncateSync(blob, blobBytes);
  const t0 = 1764500000000000;
  const lines = [];
  for (let i = 0; i < forwards; i++) {
    const loss = 2 / (1 + i * 0.001);
    const blobPart = i === 0 ? `,"blob":"blobs/000000000000.npz","len":${blobBytes},"crc32":0` : "";
    lines.push(`{"forward":${i},"written_us":${t0 + i * 1000},"took_us":900,"broke":false,"fields":{"loss.value":${loss}}${blobPart}}`);
  }
  writeFileSync(join(w, "index.jsonl"), lines.join("\n") + "\n");
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  execFileSync(cli, ["export", join(dir, "store"), "-o", join(dir, "big.zip")], { stdio: "inherit" });
  rmSync(join(dir, "store"), { recursive: true, force: true });
  writeFileSync(join(dir, "empty.html"), "<!doctype html><title>empty page (memory baseline)</title>\n");
  writeFileSync(join(dir, "stamp.json"), stamp);
}

/** Chromium over --remote-debugging-pipe: `send(method, params, session)` answers CDP results;
 * nothing is enabled that the calls below do not ask for. */
function launch(args) {
  const proc = spawn(process.env.CHROMIUM ?? "/usr/bin/chromium", ["--remote-debugging-pipe", ...args, "about:blank"], {
    stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"],
  });
  const [toBrowser, fromBrowser] = [proc.stdio[3], proc.stdio[4]];
  const waiting = new Map();
  const events = [];
  let next = 1;
  let text = "";
  fromBrowser.on("data", (d) => {
    text += d.toString();
    for (let i; (i = text.indexOf("\0")) >= 0; text = text.slice(i + 1)) {
      const m = JSON.parse(text.slice(0, i));
      const w = waiting.get(m.id);
      if (!w) events.push(m);
      else if (m.error) w[1](new Error(`${w[2]}: ${m.error.message}`));
      else w[0](m.result);
      waiting.delete(m.id);
    }
  });
  const send = (method, params = {}, sessionId) =>
    new Promise((ok, bad) => {
      const id = next++;
      waiting.set(id, [ok, bad, method]);
      toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
    });
  return { send, events, close: () => proc.kill() };
}

/** A new tab in its own browser context (so its own renderer process) at `url`. */
async function openTab(browser, url) {
  const { browserContextId } = await browser.send("Target.createBrowserContext");
  const { targetId } = await browser.send("Target.createTarget", { url: "about:blank", browserContextId });
  const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
  const evaluate = async (expression) => {
    const r = await browser.send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, sessionId);
    if (r.exceptionDetails) throw new Error(`${expression.slice(0, 60)}…: ${JSON.stringify(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text)}`);
    return r.result.value;
  };
  await browser.send("Target.activateTarget", { targetId });
  await browser.send("Page.navigate", { url }, sessionId);
  for (let i = 0; i < 600 && (await evaluate("document.readyState").catch(() => "")) !== "complete"; i++) await sleep(50);
  return { targetId, browserContextId, sessionId, evaluate };
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const procs = () => readdirSync("/proc").filter((p) => /^\d+$/.test(p));
const read = (path) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
};

/** Renderer processes of the browser whose command line carries `marker`. */
const renderers = (marker) => procs().filter((p) => read(`/proc/${p}/cmdline`).includes(marker) && read(`/proc/${p}/cmdline`).includes("--type=renderer"));
/** The renderer running a dedicated worker (the page under test has the only one). */
const withWorker = (marker) => renderers(marker).filter((p) => readdirSync(`/proc/${p}/task`).some((t) => read(`/proc/${p}/task/${t}/comm`).trim() === "DedicatedWorker"));

/** A renderer's PSS in bytes by kind of mapping (/proc/PID/smaps), its total, and its peak resident size. */
function memoryOf(pid) {
  const kinds = { anonymous: 0, "chromium binary": 0, "shared libraries": 0, "shared memory": 0, "other files": 0 };
  let kind = "anonymous";
  for (const line of read(`/proc/${pid}/smaps`).split("\n")) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const name = m[1];
      kind = !name.startsWith("/") ? "anonymous" : /memfd:|\/dev\/shm/.test(name) ? "shared memory" : /chromium/.test(name) ? "chromium binary" : /\.so/.test(name) ? "shared libraries" : "other files";
      continue;
    }
    const pss = /^Pss:\s+(\d+) kB/.exec(line);
    if (pss) kinds[kind] += Number(pss[1]) * 1024;
  }
  const total = Object.values(kinds).reduce((a, b) => a + b, 0);
  const status = read(`/proc/${pid}/status`);
  const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
  return { total, kinds, rss, hwm };
}

/** The JS heap of a session's isolate: used and committed bytes, and ArrayBuffer backing stores. */
async function heap(browser, sessionId) {
  const h = await browser.send("Runtime.getHeapUsage", {}, sessionId);
  return { used: h.usedSize, committed: h.totalSize, buffers: h.backingStorageSize ?? 0 };
}

/** One launch: the empty page's renderer, then the store page's before and after the work. */
async function measure(origin, served, source) {
  const marker = `--user-agent=somatize-bench-${process.pid}-${Date.now()}`;
  // Playwright's scheduling flags (a background tab's renderer would otherwise run at low
  // priority); they keep the renderer from purging memory as a backgrounded one would.
  const browser = launch(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--js-flags=--expose-gc",
    "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows", "--disable-renderer-backgrounding", marker]);
  try {
    await browser.send("Target.setDiscoverTargets", { discover: false }).catch(() => {});
    // The baseline: an empty page of the same origin, measured, then given a worker only to find its process.
    const empty = await openTab(browser, `${origin}/${rel}/empty.html`);
    await sleep(500);
    const before = new Map(renderers(marker).map((p) => [p, memoryOf(p)]));
    await empty.evaluate(`globalThis.w = new Worker(URL.createObjectURL(new Blob([""], {type: "text/javascript"}))); new Promise((ok) => setTimeout(ok, 300))`);
    const [emptyPid] = withWorker(marker);
    const baseline = before.get(emptyPid);
    await browser.send("Target.disposeBrowserContext", { browserContextId: empty.browserContextId });
    await sleep(300);

    const tab = await openTab(browser, `${origin}/tests/browser/store.html`);
    for (let i = 0; i < 600 && !(await tab.evaluate("document.body.dataset.ready === 'true'")); i++) await sleep(50);
    await sleep(500);
    if (source === "file") {
      // The snapshot as a File, as a person picking or dropping it gives it to the page.
      const { root: doc } = await browser.send("DOM.getDocument", {}, tab.sessionId);
      const { nodeId } = await browser.send("DOM.querySelector", { nodeId: doc.nodeId, selector: "#snapshot" }, tab.sessionId);
      await browser.send("DOM.setFileInputFiles", { files: [join(dir, "big.zip")], nodeId }, tab.sessionId);
    }
    const loaded = new Map(renderers(marker).map((p) => [p, memoryOf(p)]));
    // The worker's own DevTools session, to read its heap (nothing enabled on it).
    await browser.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true }, tab.sessionId);
    const url = `/${rel}/big.zip`;
    // The peak: the renderer's PSS sampled every 50 ms while the page works (from smaps_rollup).
    let peak = 0;
    const sampler = setInterval(() => {
      const [p] = withWorker(marker);
      if (p) peak = Math.max(peak, Number(/^Pss:\s+(\d+)/m.exec(read(`/proc/${p}/smaps_rollup`))?.[1] ?? 0) * 1024);
    }, 50);
    const result = await tab.evaluate(`(async () => {
      const t = performance.now();
      const source = ${JSON.stringify(source)} === "file" ? document.querySelector("#snapshot").files[0] : ${JSON.stringify(url)};
      const store = await somatize.openStore(source);
      const opened = performance.now() - t;
      const runs = (await store.runs()).rows.map((r) => r.run);
      const listed = performance.now() - t;
      const { rows } = await store.curve({ run: runs[0] });
      const curve = rows.map(([, value]) => value);
      const scanned = performance.now() - t;
      const stats = await store.stats();
      const { wasm } = await somatize.background.memory(); // collects the worker's garbage first
      globalThis.gc?.();
      globalThis.kept = { store, curve }; // the page keeps what it asked for while it is measured
      return { wasm, runs, points: curve.length, first: curve[0], last: curve.at(-1), opened, listed, scanned, stats };
    })()`);
    clearInterval(sampler);
    await sleep(1000);
    const [pid] = withWorker(marker);
    const after = { ...memoryOf(pid), peak };
    const worker = browser.events.find((e) => e.method === "Target.attachedToTarget" && e.params.targetInfo.type === "worker");
    const pageHeap = await heap(browser, tab.sessionId);
    const workerHeap = worker ? await heap(browser, worker.params.sessionId) : null;
    const dom = await browser.send("Memory.getDOMCounters", {}, tab.sessionId);
    const all = renderers(marker).map((p) => memoryOf(p).total);
    const sent = source === "file" ? result.stats.bytes : (served.get(url) ?? 0);
    return { result, baseline, loaded: loaded.get(pid), after, pageHeap, workerHeap, dom, all, sent };
  } finally {
    browser.close();
  }
}

const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

makeStore();
const size = statSync(join(dir, "big.zip")).size;
const { server, origin, served } = await serve();
const sources = (process.env.SOURCES ?? "http,file").split(",");
const results = new Map(sources.map((s) => [s, []]));
try {
  for (let i = 0; i < runs; i++) {
    for (const source of sources) {
      served.clear();
      const m = await measure(origin, served, source);
      results.get(source).push(m);
      console.log(`launch ${i + 1}, ${source}: page renderer ${mib(m.after.total)} (empty page ${mib(m.baseline.total)}, over it ${mib(m.after.total - m.baseline.total)}), at its peak ${mib(m.after.peak)}; runs + curve ${m.result.scanned.toFixed(0)} ms; read ${((100 * m.sent) / size).toFixed(3)} %`);
    }
  }
} finally {
  server.close();
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
}
for (const [source, ms] of results) report(source, ms);

/** The medians of one source's launches. */
function report(source, ms) {
  const med = (f) => median(ms.map(f));
  const r = ms[0].result;
  const how = source === "file" ? "a File given to the page (read with FileReaderSync)" : "served over HTTP (Range requests by synchronous XMLHttpRequest)";
  console.log(`\n## snapshot ${how}: ${mib(size)} (${forwards} forwards, one blob of ${mib(blobBytes)}); medians of ${ms.length} launches`);
  console.log(`runs ${JSON.stringify(r.runs)}; curve of ${r.points} points (${r.first} … ${r.last})`);
  console.log(`time: open ${med((m) => m.result.opened).toFixed(0)} ms, + runs ${med((m) => m.result.listed).toFixed(0)} ms, + curve ${med((m) => m.result.scanned).toFixed(0)} ms`);
  console.log(`read: ${mib(med((m) => m.sent))} (${((100 * med((m) => m.sent)) / size).toFixed(3)} % of the file) in ${med((m) => m.result.stats.reads)} reads`);
  console.log(`the page's memory (PSS of its renderer: page + worker): ${mib(med((m) => m.after.total))}; an empty page's renderer ${mib(med((m) => m.baseline.total))}; over it ${mib(med((m) => m.after.total - m.baseline.total))}; at its peak while working ${mib(med((m) => m.after.peak))} (over the empty page ${mib(med((m) => m.after.peak - m.baseline.total))}); the store page before opening ${mib(med((m) => m.loaded.total))}`);
  console.log(`resident (RSS, counting every shared page whole): page renderer ${mib(med((m) => m.after.rss))} now, ${mib(med((m) => m.after.hwm))} at its peak; empty page's ${mib(med((m) => m.baseline.rss))}, ${mib(med((m) => m.baseline.hwm))} at its peak`);
  console.log("| PSS by kind of mapping | empty page | store page, loaded | after runs + curve | over the empty page |");
  console.log("|---|---|---|---|---|");
  for (const k of Object.keys(ms[0].after.kinds)) {
    console.log(`| ${k} | ${mib(med((m) => m.baseline.kinds[k]))} | ${mib(med((m) => m.loaded.kinds[k]))} | ${mib(med((m) => m.after.kinds[k]))} | ${mib(med((m) => m.after.kinds[k] - m.baseline.kinds[k]))} |`);
  }
  console.log(`inside it: wasm memory ${mib(med((m) => m.result.wasm))}; page JS heap ${mib(med((m) => m.pageHeap.used))} used of ${mib(med((m) => m.pageHeap.committed))}; worker JS heap ${mib(med((m) => m.workerHeap?.used ?? NaN))} used of ${mib(med((m) => m.workerHeap?.committed ?? NaN))}, its ArrayBuffers ${mib(med((m) => m.workerHeap?.buffers ?? NaN))}; DOM ${JSON.stringify(ms[0].dom)}`);
  console.log(`every renderer of the browser (summed, shared pages split between them): ${mib(med((m) => m.all.reduce((a, b) => a + b, 0)))} in ${ms[0].all.length} processes`);
}
