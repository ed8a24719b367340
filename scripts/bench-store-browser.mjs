// Scale benchmark (not a test): a 2 GiB snapshot served over HTTP, opened in headless Chromium
// through the package's worker; its runs and one loss curve listed. Reports time, bytes served,
// and the renderer's memory (page + worker: resident now and peak, after collecting garbage).
// Usage: node scripts/bench-store-browser.mjs [FORWARDS=100000] [BLOB_GIB=2]   (after scripts/build-wasm.sh)
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync, openSync, closeSync } from "node:fs";
import { join } from "node:path";
import { serve } from "../tests/browser/harness.mjs";
import { chromium } from "playwright-core";
import { root, cli } from "../tests/node/store-fixture.mjs";

const forwards = Number(process.argv[2] ?? 100000);
const blobBytes = Math.round(Number(process.argv[3] ?? 2) * 2 ** 30);
const rel = "target/bench-store-browser";
const dir = join(root, rel);

/** A store with one run: `forwards` index lines (loss.value summarised), forward 0 holding a
 * `blobBytes` blob (a sparse file of zeros; only its length matters here). */
function makeStore() {
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
  rmSync(blob);
}

/** Resident and peak resident bytes of the renderer processes under the browser with `marker`. */
function rendererMemory(marker) {
  const procs = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  const cmd = (p) => { try { return readFileSync(`/proc/${p}/cmdline`, "utf8"); } catch { return ""; } };
  const ppid = (p) => { try { return readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ")[1]; } catch { return ""; } };
  const browser = procs.find((p) => cmd(p).includes(marker) && !cmd(p).includes("--type="));
  const under = (p) => { for (let q = p; q && q !== "1" && q !== "0"; q = ppid(q)) if (q === browser) return true; return false; };
  let rss = 0, hwm = 0, pss = 0, n = 0;
  for (const p of procs) {
    if (!cmd(p).includes("--type=renderer") || !under(p)) continue;
    const status = readFileSync(`/proc/${p}/status`, "utf8");
    const rollup = readFileSync(`/proc/${p}/smaps_rollup`, "utf8");
    pss += Number(/Pss:\s+(\d+)/.exec(rollup)?.[1] ?? 0) * 1024;
    rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    hwm += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    n += 1;
  }
  return { rss, hwm, pss, n };
}

const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

makeStore();
const size = statSync(join(dir, "big.zip")).size;
const { server, origin, served } = await serve();
const marker = `--user-agent=somatize-bench-${process.pid}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--js-flags=--expose-gc", marker],
});
try {
  const page = await browser.newPage();
  await page.goto(`${origin}/tests/browser/store.html`);
  await page.waitForSelector("body[data-ready=true]");
  const before = rendererMemory(marker);
  const result = await page.evaluate(async (url) => {
    const t = performance.now();
    const store = await somatize.openStore(url);
    const opened = performance.now() - t;
    const runs = await store.listRuns();
    const listed = performance.now() - t;
    const { rows } = await store.scan({ run: runs[0] });
    const curve = rows.map((r) => r.fields["loss.value"]);
    const scanned = performance.now() - t;
    const stats = await store.stats();
    const { wasm } = await somatize.background.memory(); // collects the worker's garbage first
    globalThis.gc?.();
    const heap = performance.memory?.usedJSHeapSize ?? 0;
    return { wasm, heap, runs, points: curve.length, first: curve[0], last: curve.at(-1), opened, listed, scanned, stats };
  }, `/${rel}/big.zip`);
  const after = rendererMemory(marker);
  const sent = served.get(`/${rel}/big.zip`) ?? 0;
  console.log(`snapshot: ${mib(size)} (${forwards} forwards, one blob of ${mib(blobBytes)})`);
  console.log(`runs ${JSON.stringify(result.runs)}; curve of ${result.points} points (${result.first} … ${result.last})`);
  console.log(`time: open ${result.opened.toFixed(0)} ms, + runs ${result.listed.toFixed(0)} ms, + curve ${result.scanned.toFixed(0)} ms`);
  console.log(`read: ${mib(sent)} served (${((100 * sent) / size).toFixed(3)} % of the file) in ${result.stats.reads} reads`);
  console.log(`renderer (page + worker, ${after.n} process): resident ${mib(before.rss)} before, ${mib(after.rss)} after, peak ${mib(after.hwm)}; proportional ${mib(before.pss)} before, ${mib(after.pss)} after`);
  console.log(`worker: wasm memory ${mib(result.wasm)}; page JS heap ${mib(result.heap)}`);
} finally {
  await browser.close();
  server.close();
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
}
