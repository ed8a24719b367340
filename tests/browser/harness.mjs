// Browser-test harness: a static server over the repo on 127.0.0.1 and headless Debian Chromium via playwright-core.
import { createServer } from "node:http";
import { createReadStream, readdirSync, statSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { extname, join, normalize, relative, sep } from "node:path";
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

/** Serve the repo's files (GET and HEAD, single `Range: bytes=a-b` requests, no listing,
 * nothing outside the repo) on an ephemeral port. `served` counts bytes sent per URL path. */
export async function serve() {
  const served = new Map();
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    const file = join(root, path);
    if (!file.startsWith(root) || path.split(sep).includes("..")) return res.writeHead(403).end();
    if (req.method !== "GET" && req.method !== "HEAD") return res.writeHead(405).end();
    // Chromium asks every origin for an icon; answer "no content" rather than log a 404.
    if (path === "/favicon.ico") return res.writeHead(204).end();
    let size;
    try {
      const st = await stat(file);
      if (!st.isFile()) throw new Error("not a file");
      size = st.size;
    } catch {
      return res.writeHead(404).end();
    }
    const headers = {
      "content-type": types[extname(file)] ?? "application/octet-stream",
      "accept-ranges": "bytes",
    };
    let start = 0;
    let end = size - 1;
    let status = 200;
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
    if (req.headers.range !== undefined) {
      if (!range || (range[1] === "" && range[2] === "")) return res.writeHead(416).end();
      if (range[1] === "") start = Math.max(0, size - Number(range[2]));
      else {
        start = Number(range[1]);
        if (range[2] !== "") end = Math.min(end, Number(range[2]));
      }
      if (start >= size || start > end) {
        return res.writeHead(416, { "content-range": `bytes */${size}` }).end();
      }
      status = 206;
      headers["content-range"] = `bytes ${start}-${end}/${size}`;
    }
    headers["content-length"] = String(end - start + 1);
    res.writeHead(status, headers);
    if (req.method === "HEAD" || size === 0) return res.end();
    served.set(path, (served.get(path) ?? 0) + (end - start + 1));
    createReadStream(file, { start, end }).pipe(res);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { server, origin: `http://127.0.0.1:${server.address().port}`, served };
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

/** A page test's fixtures: the repo served and a browser launched. close() ends both. */
export async function servedBrowser() {
  const { server, origin } = await serve();
  const browser = await launch();
  return {
    origin,
    browser,
    async close() {
      await browser.close();
      server.close();
    },
  };
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

/** Every file under `dir`, relative, with `/`, sorted. */
export function filesUnder(dir) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p).split("\\").join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The page's origin-private file system as a store folder `store` (a real
 * FileSystemDirectoryHandle), written as a writer writes: after `installOpfs(page)` the page has
 * `opfsStore(fresh)` (the folder's handle; `fresh` empties it first) and
 * `opfsPut(path, bytes, append)` (a file written, or appended to, under it; folders made).
 */
export function installOpfs(page) {
  return page.evaluate(() => {
    globalThis.opfsStore = async (fresh = false) => {
      const opfs = await navigator.storage.getDirectory();
      if (fresh) await opfs.removeEntry("store", { recursive: true }).catch(() => {});
      return opfs.getDirectoryHandle("store", { create: true });
    };
    globalThis.opfsPut = async (path, bytes, append = false) => {
      let dir = await globalThis.opfsStore();
      const parts = path.split("/");
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create: true });
      const fh = await dir.getFileHandle(parts.at(-1), { create: true });
      const w = await fh.createWritable({ keepExistingData: append });
      if (append) await w.seek((await fh.getFile()).size);
      await w.write(bytes);
      await w.close();
    };
  });
}

/**
 * A page at `origin`'s www/index.html, ready, whose "Open a folder…" opens the page's
 * origin-private folder `store` (emptied, with `installOpfs`'s helpers): headless Chromium shows
 * no picker, so showDirectoryPicker answers that folder's handle, a real
 * FileSystemDirectoryHandle as a person's choice gives. `init`, when given, is a further script
 * run in the page before its own.
 */
export async function pickerPage(browser, origin, init) {
  const { page, seen } = await openPage(browser, "about:blank");
  await page.addInitScript(() => {
    window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle("store");
  });
  if (init) await page.addInitScript(init);
  await page.goto(`${origin}/www/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  await installOpfs(page);
  await page.evaluate(() => globalThis.opfsStore(true));
  return { page, seen };
}

/** Write files into the page's OPFS store folder (`installOpfs`), in the order given:
 * `[path, bytes as number[] | URL to fetch, append?]`. */
export async function writeOpfs(page, files) {
  await installOpfs(page);
  return page.evaluate(async (files) => {
    for (const [path, data, append] of files) {
      const bytes = typeof data === "string" ? new Uint8Array(await (await fetch(data)).arrayBuffer()) : new Uint8Array(data);
      await globalThis.opfsPut(path, bytes, append);
    }
  }, files);
}

/**
 * Draw every figure of `target` (a page or frame) that waits to be scrolled into view: the page
 * draws a figure only on screen (`data-drawn="waiting"` until then). Each is scrolled into view
 * in turn until drawn (an error naming it if it is not within `ms`); then the view goes back
 * where it was. In a frame (the notebook widget's iframe) a figure is scrolled into view through
 * every frame around it (playwright's scrollIntoViewIfNeeded), as the window it must be seen
 * in is the page's, not the frame's. A figure pushed out of view after the scroll (a section
 * above it filled in meanwhile grows) is scrolled to again, as a person would: up to four times.
 */
export async function drawAll(target, ms = 15000) {
  const [x, y] = await target.evaluate(() => [scrollX, scrollY]);
  const ids = await target.evaluate(() => [...document.querySelectorAll(".figure[data-drawn=waiting]")].map((f) => f.id));
  const tries = 4;
  for (const id of ids) {
    for (let attempt = 1; ; attempt++) {
      const handle = await target.$(`[id="${id}"]`);
      if (!handle) break;
      await handle.scrollIntoViewIfNeeded().catch(() => {}); // a figure hidden meanwhile stays as it is
      const drawn = await target.evaluate(async ([id, ms, last]) => {
        const f = document.getElementById(id);
        const deadline = performance.now() + ms;
        while (f?.dataset.drawn === "waiting") {
          if (performance.now() > deadline) {
            if (!last) return false;
            const r = f.getBoundingClientRect();
            throw new Error(`#${f.id} still waiting to be drawn after ${ms} ms in view ` +
              `(rect ${Math.round(r.top)},${Math.round(r.left)} ${Math.round(r.width)}×${Math.round(r.height)}, ` +
              `window ${innerWidth}×${innerHeight}, figure held: ${Boolean(f.somatizeWaiting)}, ` +
              `error shown: ${JSON.stringify(document.querySelector("#error")?.textContent ?? "")})`);
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        return true;
      }, [id, ms / tries, attempt === tries]);
      if (drawn) break;
    }
  }
  await target.evaluate(([x, y]) => scrollTo(x, y), [x, y]);
}

/**
 * Wait until the page's run table has `n` runs and every one's health (none still being
 * judged). The page draws only the rows in view; `#runs` says how many runs its table has and
 * how many still wait for their health (an earlier page, the benches' --page, drew every row and
 * said neither, so its rows are counted).
 */
export function runTableShown(page, n, timeout = 600_000) {
  return page.waitForFunction((n) => {
    const box = document.querySelector("#runs");
    const t = document.querySelector("#runs-table");
    const drawn = t?.querySelectorAll("tbody tr").length ?? 0;
    return drawn > 0 && Number(box.dataset.runs ?? drawn) === n && (box.dataset.pending ?? "0") === "0" &&
      !t.querySelector("[data-health=pending]");
  }, n, { timeout, polling: 50 });
}
