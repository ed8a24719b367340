#!/usr/bin/env node
// `somatize serve` over the demo store: what keep-alive buys, measured in one run.
//
//   node scripts/bench-serve.mjs [--rounds 5] [--requests 1200]
//
// 1. Range reads as the page makes them (six at a time, 1–64 KiB spans of the store's largest
//    file) from Node's HTTP client, each round twice: over kept-alive connections, and with
//    `Connection: close` on every request (a connection each, what the server did before it
//    kept connections). Medians of the rounds' wall times and their ratio.
// 2. The page opened on the store in headless Chromium (Debian's), a fresh browser each round,
//    through the server's `/` redirect: how long until the verdict is judged, how many requests
//    it made and over how many TCP connections (Chromium's net log). Medians of the rounds.
//
// Needs the release binary (`cargo build --release`) and the package (`scripts/build-wasm.sh`).
// The demo store is written once into target/bench-serve/ and reused.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { root } from "../tests/browser/harness.mjs";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = flag("--rounds", 5);
const REQUESTS = flag("--requests", 1200);
const bin = process.env.SOMATIZE_BIN ?? join(root, "target/release/somatize");
const store = join(root, "target/bench-serve/somatize-demo");

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};

/** The largest file under `dir`, as a path relative to it. */
function largest(dir, rel = "") {
  let best = { size: -1, rel: "" };
  for (const name of readdirSync(join(dir, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    const st = statSync(join(dir, r));
    const cand = st.isDirectory() ? largest(dir, r) : { size: st.size, rel: r };
    if (cand.size > best.size) best = cand;
  }
  return best;
}

/** Start `somatize serve` on a free port; its address and the child. */
async function start() {
  const child = spawn(bin, ["serve", store, "--port", "0", "--assets", root], { stdio: ["ignore", "pipe", "inherit"] });
  const line = await new Promise((ok, fail) => {
    let text = "";
    child.stdout.on("data", (d) => {
      text += d;
      if (text.includes("\n")) ok(text);
    });
    child.on("exit", (code) => fail(new Error(`serve exited ${code}`)));
  });
  const host = /http:\/\/([^/]+)\//.exec(line)[1];
  return { child, host, port: Number(host.split(":")[1]) };
}

/** A deterministic generator (xorshift) for the spans. */
function spans(n, size, seed) {
  let s = BigInt(seed);
  const next = () => {
    s ^= (s << 13n) & 0xffffffffffffffffn;
    s ^= s >> 7n;
    s ^= (s << 17n) & 0xffffffffffffffffn;
    return Number(s % 1000000007n);
  };
  return Array.from({ length: n }, () => {
    const len = 1024 + (next() % (63 * 1024));
    const a = next() % Math.max(1, size - len);
    return [a, Math.min(size - 1, a + len - 1)];
  });
}

/** `REQUESTS` range reads, six at a time; wall ms and the bytes read (checked). */
async function reads(server, path, list, close) {
  const agent = new http.Agent({ keepAlive: !close, maxSockets: 6 });
  const one = ([a, b]) => new Promise((ok, fail) => {
    const headers = { Host: server.host, Range: `bytes=${a}-${b}` };
    if (close) headers.Connection = "close";
    const req = http.get({ host: "127.0.0.1", port: server.port, path, agent, headers }, (res) => {
      let n = 0;
      res.on("data", (c) => (n += c.length));
      res.on("end", () => (res.statusCode === 206 && n === b - a + 1 ? ok(n) : fail(new Error(`${res.statusCode} ${n}`))));
    });
    req.on("error", fail);
  });
  let next = 0;
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 6 }, async () => {
    while (next < list.length) bytes += await one(list[next++]);
  }));
  const ms = performance.now() - t0;
  agent.destroy();
  return { ms, bytes };
}

/** The page through `/` in a fresh browser (a first load): ms until the verdict is judged, and,
 * from Chromium's net log, the requests it made and the TCP connections it opened for them. */
async function pageLoad(server, round) {
  const log = join(root, `target/bench-serve/netlog-${round}.json`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
      `--log-net-log=${log}`],
  });
  let ms;
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const t0 = performance.now();
    await page.goto(`http://${server.host}/`);
    await page.waitForFunction(() => document.getElementById("verdict")?.dataset.judged, null, { timeout: 120000 });
    ms = performance.now() - t0;
  } finally {
    await browser.close();
  }
  const net = JSON.parse(readFileSync(log, "utf8"));
  const types = net.constants.logEventTypes;
  const begins = (type) => net.events.filter((e) => e.type === types[type] && e.phase === net.constants.logEventPhase.PHASE_BEGIN).length;
  return { ms, requests: begins("URL_REQUEST_START_JOB"), conns: begins("TCP_CONNECT") };
}

if (!existsSync(join(store, "somatize-store.json"))) {
  console.error("writing the demo store into target/bench-serve/ …");
  execFileSync(bin, ["demo", "--store", store], { stdio: ["ignore", "ignore", "inherit"] });
}
const server = await start();
try {
  const file = largest(store);
  const path = `/store/${file.rel}`;
  const kept = [];
  const closed = [];
  for (let r = 0; r < ROUNDS; r++) {
    const list = spans(REQUESTS, file.size, 88172645463325252n + BigInt(r));
    // Alternate which goes first, so drift on a shared machine falls on both.
    const order = r % 2 ? [true, false] : [false, true];
    for (const close of order) (close ? closed : kept).push((await reads(server, path, list, close)).ms);
  }
  const k = median(kept);
  const c = median(closed);
  console.log(`range reads: ${REQUESTS} of ${file.rel} (${(file.size / 1048576).toFixed(1)} MiB), six at a time, ${ROUNDS} rounds`);
  console.log(`  kept alive          median ${k.toFixed(0)} ms (${(k / REQUESTS).toFixed(3)} ms a read)`);
  console.log(`  a connection each   median ${c.toFixed(0)} ms (${(c / REQUESTS).toFixed(3)} ms a read)`);
  console.log(`  ratio (each / kept) ${(c / k).toFixed(2)}×`);

  {
    const loads = [];
    for (let r = 0; r < ROUNDS; r++) loads.push(await pageLoad(server, r));
    const m = median(loads.map((l) => l.ms));
    const reqs = median(loads.map((l) => l.requests));
    const conns = median(loads.map((l) => l.conns));
    console.log(`page through /, a first load each: verdict judged in median ${m.toFixed(0)} ms; ${reqs} requests over ${conns} TCP connections (medians of ${ROUNDS} loads)`);
  }
} finally {
  server.child.kill();
}
console.log(`(${new Date().toISOString()}, load average ${(await import("node:os")).loadavg().map((x) => x.toFixed(2)).join(" ")})`);
