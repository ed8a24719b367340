#!/usr/bin/env node
// Where the page's memory goes, over a store opened from a folder in headless Chromium: at the
// table shown, the run shown, the overlay of 50 runs, and after 25 redraws (smoothing changed),
// the renderer's PSS by mapping, DevTools' heap usage of the page and of its worker, the
// worker's wasm memory, the page's elements; at the table and after the redraws Chrome's
// memory-infra dump by allocator (malloc, partition_alloc, blink_gc, v8, cc…); over the redraws
// DevTools' sampling heap profile (what was allocated, garbage included, by function).
//
//   node scripts/profile-page-memory.mjs [STORE_DIR] [PAGE_DIR]
//
// STORE_DIR defaults to target/bench-compare/store-1000x10000 (scripts/bench-compare.mjs writes
// it), PAGE_DIR to www. Needs scripts/build-wasm.sh first. docs/page.md quotes what it found.
import { readFileSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { serve, launch, root, runTableShown } from "../tests/browser/harness.mjs";
const store = realpathSync(process.argv[2] ?? join(root, "target/bench-compare/store-1000x10000"));
const PAGE = process.argv[3] ?? "www";
const readText = (p) => { try { return readFileSync(p, "utf8"); } catch { return ""; } };
/** The pid of the Chromium renderer running a dedicated worker (the page under test). */
function renderer() {
  for (const p of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    if (!readText(`/proc/${p}/cmdline`).includes("--type=renderer")) continue;
    let tasks = []; try { tasks = readdirSync(`/proc/${p}/task`); } catch { continue; }
    if (tasks.some((t) => readText(`/proc/${p}/task/${t}/comm`).trim() === "DedicatedWorker")) return p;
  }
}
/** The renderer's PSS by mapping (anonymous memory, Chromium's code, …), largest first. */
function smaps(pid) {
  const txt = readText(`/proc/${pid}/smaps`);
  const out = new Map(); let name = "";
  for (const line of txt.split("\n")) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) { name = m[1] || "[anon]"; if (name.includes("/")) name = name.split("/").pop(); continue; }
    const p = /^Pss:\s+(\d+) kB/.exec(line);
    if (p) out.set(name, (out.get(name) ?? 0) + Number(p[1]));
  }
  return [...out].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${k}=${(v / 1024).toFixed(1)}`).join(" ");
}
const { server, origin } = await serve();
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const cdp = await page.context().newCDPSession(page);
await page.goto(`${origin}/${PAGE}/index.html`);
await page.waitForFunction(() => document.querySelector("#pick-folder"));
await page.setInputFiles("#pick-folder", store);
await runTableShown(page, 1000);
const bcdp = await browser.newBrowserCDPSession();
let wsession = null; let msgId = 1; const waiting = new Map();
bcdp.on("Target.receivedMessageFromTarget", ({ message }) => { const m = JSON.parse(message); waiting.get(m.id)?.(m.result); waiting.delete(m.id); });
async function workerCall(method, params = {}) {
  if (!wsession) {
    const { targetInfos } = await bcdp.send("Target.getTargets");
    const w = targetInfos.find((t) => t.type === "worker");
    if (!w) return null;
    ({ sessionId: wsession } = await bcdp.send("Target.attachToTarget", { targetId: w.targetId, flatten: false }));
  }
  const id = msgId++;
  const p = new Promise((r) => waiting.set(id, r));
  await bcdp.send("Target.sendMessageToTarget", { sessionId: wsession, message: JSON.stringify({ id, method, params }) });
  return p;
}
async function dump(when) {
  const chunks = [];
  bcdp.on("Tracing.dataCollected", ({ value }) => chunks.push(...value));
  await bcdp.send("Tracing.start", { traceConfig: { includedCategories: ["disabled-by-default-memory-infra"], memoryDumpConfig: { triggers: [] } }, transferMode: "ReportEvents" });
  const r = await bcdp.send("Tracing.requestMemoryDump", { deterministic: true, levelOfDetail: "detailed" });
  const done = new Promise((ok) => bcdp.once("Tracing.tracingComplete", ok));
  await bcdp.send("Tracing.end");
  await done;
  const pid = Number(renderer());
  const dumps = chunks.filter((e) => e.ph === "v" && e.pid === pid);
  const out = [];
  for (const d of dumps) {
    const ads = d.args?.dumps?.allocators ?? {};
    for (const [name, a] of Object.entries(ads)) {
      if (name.split("/").length > 2) continue;
      const size = parseInt(a.attrs?.size?.value ?? "0", 16);
      const eff = parseInt(a.attrs?.effective_size?.value ?? a.attrs?.size?.value ?? "0", 16);
      if (size > 512 * 1024) out.push([name, size, eff]);
    }
  }
  out.sort((a, b) => b[1] - a[1]);
  console.log(`   memory-infra (${when}): ` + out.slice(0, 30).map(([n, s]) => `${n}=${(s / 2 ** 20).toFixed(1)}`).join(" "));
}
async function report(when) {
  const pid = renderer();
  const pss = Number(/^Pss:\s+(\d+) kB/m.exec(readText(`/proc/${pid}/smaps_rollup`))?.[1]) / 1024;
  const main = await cdp.send("Runtime.getHeapUsage");
  const w = page.workers()[0];
  const wh = await workerCall("Runtime.getHeapUsage");
  const wasm = await page.evaluate(async () => (await import("../pkg/browser.js")).background.memory());
  const dom = await page.evaluate(() => document.getElementsByTagName("*").length);
  console.log(`${when}: PSS ${pss.toFixed(1)} MiB; main heap used ${(main.usedSize / 2 ** 20).toFixed(1)} / total ${(main.totalSize / 2 ** 20).toFixed(1)} MiB; worker heap used ${(wh.usedSize / 2 ** 20).toFixed(1)} / total ${(wh.totalSize / 2 ** 20).toFixed(1)} MiB; wasm ${(wasm.wasm / 2 ** 20).toFixed(1)} MiB; DOM elements ${dom}`);
  console.log(`   smaps: ${smaps(pid)}`);
}
await report("table");
await dump("table");
await page.waitForFunction(() => document.querySelector("#verdict-headline"), null, { timeout: 600_000 });
await page.locator("#fig-compare").scrollIntoViewIfNeeded();
await page.waitForFunction(() => document.querySelector("#fig-compare").dataset.drawn === "true", null, { timeout: 600_000 });
await report("run shown");
await page.evaluate(() => { const $ = (id) => document.getElementById(id); $("run-filter").value = "g00-*"; $("run-filter").dispatchEvent(new Event("input", { bubbles: true })); $("choose-shown").click(); });
await page.waitForFunction(() => { const gd = document.getElementById("fig-compare"); return gd.dataset.drawn === "true" && gd.data?.length === 50; });
await report("overlay 50");
await cdp.send("HeapProfiler.enable");
await cdp.send("HeapProfiler.startSampling", { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
for (let k = 0; k < 25; k++) {
  await page.evaluate((k) => { const $ = (id) => document.getElementById(id); $("compare-smooth-kind").value = "ema"; $("compare-smooth").value = String(0.5 + (k % 5) / 10); $("compare-smooth").dispatchEvent(new Event("change", { bubbles: true })); }, k);
  await page.waitForTimeout(150);
}
await page.waitForTimeout(1000);
{
  const { profile } = await cdp.send("HeapProfiler.stopSampling");
  const self = new Map(); const incl = new Map();
  const walk = (n, stack) => {
    const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.lineNumber}:${n.callFrame.columnNumber}`;
    self.set(k, (self.get(k) ?? 0) + n.selfSize);
    let sum = n.selfSize; for (const c of n.children) sum += walk(c, [...stack, k]);
    if (!stack.includes(k)) incl.set(k, (incl.get(k) ?? 0) + sum);
    return sum;
  };
  const total = walk(profile.head, []);
  console.log(`allocated during 25 redraws (sampled): ${(total / 2 ** 20).toFixed(1)} MiB`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log("  self", (v / 2 ** 20).toFixed(1).padStart(6), k);
  for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log("  incl", (v / 2 ** 20).toFixed(1).padStart(6), k);
}
await report("after 25 redraws");
await dump("after 25 redraws");
await cdp.send("HeapProfiler.collectGarbage");
await workerCall("HeapProfiler.collectGarbage");
await page.waitForTimeout(500);
await report("after main gc");
await browser.close();
server.close();
