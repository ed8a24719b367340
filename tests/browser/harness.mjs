// Browser-test harness: a static server over the repo on 127.0.0.1 and headless Debian Chromium via playwright-core.
import { createServer } from "node:http";
import { readFile, mkdir } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = fileURLToPath(new URL("../../", import.meta.url));
export const shots = join(root, "tests/browser/screenshots");

const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
};

/** Serve the repo's files (GET only, no listing, nothing outside the repo) on an ephemeral port. */
export async function serve() {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    const file = join(root, path);
    if (!file.startsWith(root) || path.split(sep).includes("..")) return res.writeHead(403).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/** Launch headless Chromium from Debian's package, never a downloaded browser. */
export async function launch() {
  await mkdir(shots, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}

/** A page that records console errors, page errors and every request it makes. */
export async function openPage(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const seen = { errors: [], requests: [] };
  page.on("console", (m) => m.type() === "error" && seen.errors.push(m.text()));
  page.on("pageerror", (e) => seen.errors.push(String(e)));
  page.on("request", (r) => seen.requests.push(r.url()));
  await page.goto(url);
  return { page, seen };
}
