// Entry for Node >= 20: load the wasm from the package folder synchronously, then export the API.
// Stores opened by path, URL or bytes live in a worker thread with its own instance of the
// wasm (store-worker-node.js), so their reads never block this thread's event loop.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { deserialize } from "node:v8";
import { Worker } from "node:worker_threads";
import { crc32 } from "node:zlib";
import { initSync, StoreHandle, stepStats as statsOfStep, tensorStats as statsOfFile, tensorKeys, useBlockHelpers, useErrorClass, useHostCrc32 } from "./core.js";
import { HelperPool } from "./helpers-node.js";
import { folderSource, snapshotFile, workerExecArgv } from "./sources-node.js";
import { Store } from "./store.js";
import { WorkerClient, Opened } from "./client.js";
import { forwardRowParts } from "./forward-rows.js";
import { SomatizeError } from "./errors.js";

const module = new WebAssembly.Module(readFileSync(new URL("./wasm/somatize_bg.wasm", import.meta.url)));
const wasm = initSync({ module });
useErrorClass(SomatizeError);
// Worker threads that take blocks of a long float32 tensor in observeTensors (helpers-node.js):
// none unless asked for (setHelpers(n) or SOMATIZE_HELPERS); started on the first such
// tensor, never keeping the process alive.
const helpers = new HelperPool(module);
useBlockHelpers(helpers);
// Zip entries' CRC-32 by Node's zlib (carry-less multiply) where this Node has it (>= 20.15).
if (typeof crc32 === "function") useHostCrc32(crc32);

export * from "./api.js";

/** How many worker threads help observeTensors with a long float32 tensor (2^23 values or more):
 * none by default (the SOMATIZE_HELPERS environment variable sets the starting count: a number,
 * or `auto`); one per core besides this thread, at most 7, is the most that pays; 0 turns them
 * off again. Answers have the same bits with any number. Returns the count before. */
export function setHelpers(n) {
  const before = helpers.size;
  helpers.resize(n);
  return before;
}

/** The helper threads so far: {helpers (the count asked for), running, tensors (offered to
 * them), blocks (of 2^20 values, done by them), skips (times they were found not to run beside
 * this thread, a busy machine, and were left out of the next few tensors)}. */
export function helperCounts() {
  return { helpers: helpers.size, running: helpers.workers.length, ...helpers.counts };
}
export { Store, folderSource, snapshotFile };

/** Shape, dtype and statistics of every tensor in a file: its bytes (Uint8Array) or, in Node,
 * its path, which is read straight into wasm memory a chunk at a time (never whole in JS). */
export function tensorStats(file, name) {
  if (typeof file !== "string") return statsOfFile(file, name);
  const src = snapshotFile(file);
  try {
    return statsOfFile(src, name ?? file);
  } finally {
    src.close();
  }
}

/** One step of a per-step dump measured as `somatize import` measures it, `{node: {metric:
 * value}}`; in Node a step file may also be given by its path (read straight into wasm memory,
 * and named by it in errors). */
export function stepStats(graph, step, previous, options = {}) {
  const opened = [];
  const open = (file) => {
    if (typeof file !== "string") return file;
    const src = snapshotFile(file);
    opened.push(src);
    return src;
  };
  // (Options that are not an object go to the core as they are, which refuses them.)
  let names = options;
  if (options !== null && typeof options === "object") {
    names = { ...options };
    if (typeof step === "string") names.name ??= step;
    if (typeof previous === "string") names.previousName ??= previous;
  }
  try {
    return statsOfStep(graph, open(step), open(previous), names);
  } finally {
    for (const src of opened) src.close();
  }
}

/** A Store over a wasm handle in this process, for a source object whose functions are the
 * caller's (they cannot move to another thread): each call runs synchronously behind a Promise. */
function inProcess(handle, source) {
  let open = true;
  const live = () => {
    if (!open) throw new Error("the store is closed");
  };
  const later = (f) => new Promise((resolve) => resolve(f()));
  return new Store({
    call: (name, options) => later(() => (live(), handle.call(name, options))),
    stats: () => later(() => ({ ...source.counts })),
    refresh: () =>
      later(() => {
        if (open) handle.refreshed(); // the next health answer asks whether the run grew
      }),
    close: () =>
      later(() => {
        if (!open) return;
        open = false;
        handle.free();
        source.close?.();
      }),
  });
}

/** Rows per part of a long answer built here. */
const PART = 4096;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** An answer the store worker sent in parts or as columns (store-worker-node.js, `answer`),
 * taken in one part at a time, with a turn of the event loop between them (timers and I/O run
 * meanwhile). */
async function whole(data) {
  const rows = [];
  const made = () => {
    const result = data.rest ? deserialize(data.rest) : rows;
    if (data.rest) result.rows = rows;
    return { id: data.id, result };
  };
  if (data.parts) {
    for (const part of data.parts) {
      for (const row of deserialize(part)) rows.push(row);
      await turn();
    }
    return made();
  }
  if (data.pairs) {
    const p = data.pairs;
    for (let i = 0; i < p.length; i += 2) {
      rows.push([p[i], p[i + 1]]);
      if ((i / 2) % PART === PART - 1) await turn();
    }
    return made();
  }
  for (const part of forwardRowParts(data.result.rows.columns, PART)) {
    for (const row of part) rows.push(row);
    await turn();
  }
  return { id: data.id, result: { ...data.result, rows } };
}

/** Whether the worker's answer comes in parts or as columns, to be made whole here. */
const inParts = (data) => data.parts !== undefined || data.pairs !== undefined || data.result?.rows?.columns !== undefined;

/** Start the store worker (store-worker-node.js) for the WorkerClient (client.js): it keeps the
 * process alive only while a call waits on it. */
function spawn({ message, error }) {
  const worker = new Worker(new URL("./store-worker-node.js", import.meta.url), { workerData: { somatizeStore: module }, execArgv: workerExecArgv() });
  worker.on("message", (data) => (inParts(data) ? whole(data).then(message) : message(data)));
  worker.on("error", (e) => error(e?.message ?? String(e)));
  worker.on("exit", (code) => error(`it exited with code ${code}`));
  worker.unref();
  return {
    post: (m) => worker.postMessage(m),
    terminate: () => worker.terminate(),
    busy: (waiting) => (waiting ? worker.ref() : worker.unref()),
  };
}

let client;
const storeWorker = () => (client ??= new WorkerClient(spawn));

/** Open a store: a folder path, a snapshot .zip path, a file: URL, an http(s) URL (plain files
 * with listing.jsonl, or a .zip snapshot), the bytes of a snapshot, or a source object
 * ({list?, read, readRange, size} or {size, readAt}). Reads are lazy. A store opened by path,
 * URL or bytes is read in the package's worker thread; one over a source object, whose
 * functions are the caller's, on this thread. */
export async function openStore(source, options = {}) {
  let what;
  if (source instanceof URL || (typeof source === "string" && /^[a-z][a-z0-9+.-]*:\/\//i.test(source))) {
    const url = new URL(source);
    if (url.protocol === "http:" || url.protocol === "https:") what = { url: url.href };
    else if (url.protocol === "file:") what = { path: fileURLToPath(url) };
    else throw new Error(`${url.href}: openStore takes file:, http: and https: URLs`);
  } else if (typeof source === "string") {
    what = { path: source };
  } else if (source instanceof Uint8Array) {
    what = { bytes: source };
  } else {
    const name = options.name ?? "store";
    if (source && typeof source.readAt === "function") return inProcess(StoreHandle.openSnapshot(source, name), source);
    if (source && typeof source.read === "function") return inProcess(StoreHandle.openFiles(source, name), source);
    throw new Error("openStore takes a path, a file: URL, the bytes of a snapshot, or a source object");
  }
  const opened = new Opened(storeWorker(), what, { ...options });
  await opened.handle(); // opening errors (not a store, a newer format) reject here
  return new Store(opened.backend());
}

const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

/** The API's heavier functions as Promises, the same shape as in the browser (where they run in the worker). */
export const background = {
  tensorStats: async (file, name) => tensorStats(await bytesOf(file), name),
  tensorKeys: async (bytes, name) => tensorKeys(await bytesOf(bytes), name),
  /** Bytes of the wasm memory (it grows and is never given back). */
  memory: async () => ({ wasm: wasm.memory.buffer.byteLength }),
};

/**
 * TEST ONLY — not part of the package's API (absent from the declarations and the README):
 * tests/node/async.test.mjs makes the store worker's wasm trap for real through it, to check
 * that a trap costs only the call that caused it.
 */
export const __testOnly = Object.freeze({ trapWorker: () => storeWorker().post("__testTrapForReal") });
