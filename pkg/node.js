// Entry for Node >= 20: load the wasm from the package folder synchronously, then export the API.
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import { initSync, StoreHandle, tensorStats as statsOfFile, tensorKeys, useBlockHelpers, useHostCrc32 } from "./wasm/somatize.js";
import { HelperPool } from "./helpers-node.js";
import { folderSource, snapshotFile, httpRequester } from "./sources-node.js";
import { httpSource, httpSnapshot } from "./sources.js";
import { Store } from "./store.js";

const module = new WebAssembly.Module(readFileSync(new URL("./wasm/somatize_bg.wasm", import.meta.url)));
const wasm = initSync({ module });
// Worker threads that take blocks of a long float32 tensor in observeTensors (helpers-node.js);
// started on the first such tensor, never keeping the process alive.
const helpers = new HelperPool(module);
useBlockHelpers(helpers);
// Zip entries' CRC-32 by Node's zlib (carry-less multiply) where this Node has it (>= 20.15).
if (typeof crc32 === "function") useHostCrc32(crc32);

export * from "./api.js";

/** How many worker threads help observeTensors with a long float32 tensor (2^23 values or more):
 * by default one per core besides this thread, at most 7 (SOMATIZE_HELPERS overrides it); 0
 * turns them off. Answers have the same bits with any number. Returns the count before. */
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

/** A Store over a wasm handle in this process: each call runs synchronously behind a Promise. */
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

/** Open a store: a folder path, a snapshot .zip path, a file: URL, an http(s) URL (plain files
 * with listing.jsonl, or a .zip snapshot), the bytes of a snapshot, or a source object
 * ({list?, read, readRange, size} or {size, readAt}). Reads are lazy. */
export function openStore(source, options = {}) {
  return new Promise((resolve) => {
    if (source instanceof URL || (typeof source === "string" && /^[a-z][a-z0-9+.-]*:\/\//i.test(source))) {
      const url = new URL(source);
      if (url.protocol === "http:" || url.protocol === "https:") return resolve(overHttp(url.href, options));
      if (url.protocol !== "file:") throw new Error(`${url.href}: openStore takes file:, http: and https: URLs`);
      source = fileURLToPath(url);
    }
    if (typeof source === "string") {
      const name = options.name ?? source;
      if (statSync(source).isDirectory()) {
        const src = folderSource(source);
        return resolve(inProcess(StoreHandle.openFiles(src, name), src));
      }
      const src = snapshotFile(source);
      try {
        return resolve(inProcess(StoreHandle.openSnapshot(src, name), src));
      } catch (e) {
        src.close();
        throw e;
      }
    }
    const name = options.name ?? "store";
    if (source instanceof Uint8Array) {
      return resolve(inProcess(StoreHandle.openSnapshot(source, name), { counts: { reads: 0, bytes: 0 } }));
    }
    if (source && typeof source.readAt === "function") {
      return resolve(inProcess(StoreHandle.openSnapshot(source, name), source));
    }
    if (source && typeof source.read === "function") {
      return resolve(inProcess(StoreHandle.openFiles(source, name), source));
    }
    throw new Error("openStore takes a path, a file: URL, the bytes of a snapshot, or a source object");
  });
}

/** A store behind an http(s) server: plain files (runs and writers from its listing.jsonl) or,
 * for a path ending in .zip (or options.snapshot), a snapshot read by Range requests. */
function overHttp(href, options) {
  const request = httpRequester();
  const name = options.name ?? href;
  try {
    const snapshot = options.snapshot ?? /\.zip$/i.test(new URL(href).pathname);
    const src = snapshot ? httpSnapshot(href, request) : httpSource(href, request);
    const handle = snapshot ? StoreHandle.openSnapshot(src, name) : StoreHandle.openFiles(src, name);
    return inProcess(handle, { counts: src.counts, close: request.close });
  } catch (e) {
    request.close();
    throw e;
  }
}

const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

/** The API's heavier functions as Promises, the same shape as in the browser (where they run in the worker). */
export const background = {
  tensorStats: async (file, name) => tensorStats(await bytesOf(file), name),
  tensorKeys: async (bytes, name) => tensorKeys(await bytesOf(bytes), name),
  /** Bytes of the wasm memory (it grows and is never given back). */
  memory: async () => ({ wasm: wasm.memory.buffer.byteLength }),
};
