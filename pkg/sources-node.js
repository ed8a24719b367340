// Store sources for Node: a folder and a snapshot file, read synchronously by ranges (never whole for
// a range), and synchronous HTTP (a helper thread) for stores and snapshots behind a server.
import { closeSync, fstatSync, openSync, readSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { MessageChannel, Worker, receiveMessageOnPort } from "node:worker_threads";

const missing = (e) => e && (e.code === "ENOENT" || e.code === "ENOTDIR");

/** Read up to `len` bytes of an open file from `offset`. */
function readAt(fd, offset, len) {
  const size = fstatSync(fd).size;
  const n = Math.max(0, Math.min(len, size - offset));
  const buf = Buffer.allocUnsafe(n);
  let got = 0;
  while (got < n) {
    const r = readSync(fd, buf, got, n - got, offset + got);
    if (r === 0) break;
    got += r;
  }
  return buf.subarray(0, got);
}

/** Read from `offset` of an open file into `target` (a view of wasm memory the core hands in)
 * until it is full or the file ends; the bytes written. No buffer is allocated or copied. */
function readInto(fd, offset, target) {
  let got = 0;
  while (got < target.length) {
    const r = readSync(fd, target, got, target.length - got, offset + got);
    if (r === 0) break;
    got += r;
  }
  return got;
}

/** A store folder on disk as a plain-files source (paths are checked by the core before they get here). */
export function folderSource(root) {
  const counts = { reads: 0, bytes: 0 };
  const full = (p) => (p === "" ? root : join(root, p));
  const orNull = (f) => {
    try {
      return f();
    } catch (e) {
      if (missing(e)) return null;
      throw e;
    }
  };
  const counted = (bytes) => {
    counts.reads += 1;
    counts.bytes += bytes.length;
    return bytes;
  };
  return {
    counts,
    list: (dir) => orNull(() => readdirSync(full(dir))),
    read: (path) => orNull(() => counted(readFileSync(full(path)))),
    readRange: (path, offset, len) =>
      orNull(() => {
        const fd = openSync(full(path), "r");
        try {
          return counted(readAt(fd, offset, len));
        } finally {
          closeSync(fd);
        }
      }),
    readRangeInto: (path, offset, target) =>
      orNull(() => {
        const fd = openSync(full(path), "r");
        try {
          const n = readInto(fd, offset, target);
          counts.reads += 1;
          counts.bytes += n;
          return n;
        } finally {
          closeSync(fd);
        }
      }),
    size: (path) => orNull(() => statSync(full(path)).size),
    close() {},
  };
}

/** A snapshot zip on disk, kept open and read by ranges. */
export function snapshotFile(path) {
  const fd = openSync(path, "r");
  const counts = { reads: 0, bytes: 0 };
  let open = true;
  return {
    counts,
    size: fstatSync(fd).size,
    readAt(offset, len) {
      if (!open) throw new Error(`${path}: the store is closed`);
      const bytes = readAt(fd, offset, len);
      counts.reads += 1;
      counts.bytes += bytes.length;
      return bytes;
    },
    readAtInto(offset, target) {
      if (!open) throw new Error(`${path}: the store is closed`);
      const n = readInto(fd, offset, target);
      counts.reads += 1;
      counts.bytes += n;
      return n;
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** The body of the helper thread: fetch what the main thread asks, post the answer, wake it. */
const FETCHER = `
const { workerData } = require("node:worker_threads");
const { port, flag } = workerData;
const wake = new Int32Array(flag);
port.on("message", async ({ method, url, range }) => {
  let reply;
  try {
    const headers = { "cache-control": "no-cache", "accept-encoding": "identity" };
    if (range) headers.range = "bytes=" + range[0] + "-" + range[1];
    const res = await fetch(url, { method, headers, cache: "no-store" });
    const body = method === "HEAD" ? new ArrayBuffer(0) : await res.arrayBuffer();
    reply = { status: res.status, headers: Object.fromEntries(res.headers), body };
  } catch (e) {
    reply = { error: String(e?.cause?.message ?? e?.message ?? e) };
  }
  port.postMessage(reply, reply.body ? [reply.body] : []);
  Atomics.store(wake, 0, 1);
  Atomics.notify(wake, 0);
});
`;

/** Synchronous HTTP for Node: a helper thread does the fetch while this one waits (Atomics.wait),
 * then takes the answer off the port. Answers {status, header(name), body}; close() ends the thread. */
export function httpRequester() {
  const { port1, port2 } = new MessageChannel();
  const flag = new SharedArrayBuffer(4);
  const wake = new Int32Array(flag);
  const thread = new Worker(FETCHER, { eval: true, workerData: { port: port2, flag }, transferList: [port2], execArgv: workerExecArgv() });
  thread.unref();
  port1.unref();
  const request = (method, url, range) => {
    Atomics.store(wake, 0, 0);
    port1.postMessage({ method, url, range });
    if (Atomics.wait(wake, 0, 0, 120_000) === "timed-out") throw new Error(`${url}: no answer in 120 s`);
    const reply = receiveMessageOnPort(port1)?.message;
    if (!reply) throw new Error(`${url}: the request got no answer`);
    if (reply.error) throw new Error(`${url}: the request failed (${reply.error})`);
    return { status: reply.status, header: (name) => reply.headers[name.toLowerCase()] ?? null, body: reply.body };
  };
  request.close = () => {
    port1.close();
    thread.terminate();
  };
  return request;
}

/** The Node flags for the package's worker threads: this process's, but those a worker refuses
 * (`--input-type`, which only a program given as text takes: `node --input-type=module -e …`). */
export function workerExecArgv() {
  const out = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--input-type") i += 1;
    else if (!argv[i].startsWith("--input-type=")) out.push(argv[i]);
  }
  return out;
}
