// The Node entry's store worker (a worker_threads Worker started by node.js): its own instance
// of the wasm core holds the stores opened by path, URL or bytes, and does their reads (files
// by range, HTTP by a fetch thread it waits on), so that the calling thread's event loop never
// waits for a store. The protocol is the browser worker's (worker.js): {id, method, args} in,
// {id, result} or {id, error} out; a trap of the wasm answers `fatal` and refuses what follows,
// and the package (client.js) replaces this worker.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { readFileSync, statSync } from "node:fs";
import { serialize } from "node:v8";
import { crc32 } from "node:zlib";

/** Rows per part of a long answer (see `answer`). */
const PART = 4096;

/** [[forward, value], …] (curve, history) as one Float64Array, which keeps every number's
 * bits; null when a row is anything else. */
function numberPairs(rows) {
  const pairs = new Float64Array(2 * rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    if (!Array.isArray(r) || r.length !== 2 || typeof r[0] !== "number" || typeof r[1] !== "number") return null;
    pairs[2 * i] = r[0];
    pairs[2 * i + 1] = r[1];
  }
  return pairs;
}

/**
 * The message answering call `id` with `result`, and what it transfers. Forwards' rows come as
 * columns (`{rows: {columns}}`, src/wasm/readback.rs): their typed arrays are moved, and the
 * calling thread builds the rows (pkg/forward-rows.js). A long list of number pairs (curve,
 * history) comes as one Float64Array. Another long list (an answer that is one, or its `rows`)
 * goes in parts of PART rows, each serialized here as postMessage would (node:v8, the
 * structured clone: Maps, NaN, typed arrays survive), so the calling thread can take them in
 * one at a time between turns of its event loop (node.js) instead of in one long block.
 */
export function answer(id, result) {
  const columns = result?.rows?.columns;
  if (columns) return [{ id, result }, [columns[1].buffer, columns[2].buffer]];
  const rows = Array.isArray(result) ? result : Array.isArray(result?.rows) ? result.rows : null;
  if (!rows || rows.length <= PART) return [{ id, result }];
  const rest = rows === result ? null : serialize({ ...result, rows: [] });
  const pairs = numberPairs(rows);
  if (pairs) return [{ id, pairs, rest }, [pairs.buffer]];
  const parts = [];
  for (let i = 0; i < rows.length; i += PART) parts.push(serialize(rows.slice(i, i + PART)));
  return [{ id, parts, rest }];
}

if (!isMainThread && workerData?.somatizeStore) {
  const { initSync, StoreHandle, useErrorClass, useHostCrc32, useRowColumns } = await import("./wasm/somatize.js");
  const { folderSource, snapshotFile, httpRequester } = await import("./sources-node.js");
  const { fetchShare, httpSnapshot, httpSource, isShareUrl, parseShare, shareSource } = await import("./sources.js");
  const { SomatizeError, errorData } = await import("./errors.js");
  const wasm = initSync({ module: workerData.somatizeStore });
  useErrorClass(SomatizeError);
  useRowColumns(true); // forwards' rows cross as columns, built on the calling thread (node.js)
  if (typeof crc32 === "function") useHostCrc32(crc32);

  const stores = new Map(); // handle -> {handle: StoreHandle, source}
  let nextHandle = 1;

  /** Open what the calling thread described: {path}, {url, snapshot?} or {bytes}. */
  function openOf(what, options) {
    if (what.url !== undefined) {
      const request = httpRequester();
      const name = options.name ?? what.url;
      try {
        if (!options.snapshot && isShareUrl(what.url)) {
          const src = shareSource(fetchShare(what.url, request), request);
          return { handle: StoreHandle.openFiles(src, options.name ?? src.store), source: { counts: src.counts, close: request.close } };
        }
        const snapshot = options.snapshot ?? /\.zip$/i.test(new URL(what.url).pathname);
        const src = snapshot ? httpSnapshot(what.url, request) : httpSource(what.url, request);
        const handle = snapshot ? StoreHandle.openSnapshot(src, name) : StoreHandle.openFiles(src, name);
        return { handle, source: { counts: src.counts, close: request.close } };
      } catch (e) {
        request.close();
        throw e;
      }
    }
    if (what.path !== undefined) {
      const name = options.name ?? what.path;
      // A share document saved by `somatize share -o FILE`: its links are read over HTTP.
      if (/\.json$/i.test(what.path) && statSync(what.path).isFile()) {
        const request = httpRequester();
        try {
          const src = shareSource(parseShare(readFileSync(what.path, "utf8"), what.path), request);
          return { handle: StoreHandle.openFiles(src, options.name ?? src.store), source: { counts: src.counts, close: request.close } };
        } catch (e) {
          request.close();
          throw e;
        }
      }
      if (statSync(what.path).isDirectory()) {
        const src = folderSource(what.path);
        return { handle: StoreHandle.openFiles(src, name), source: src };
      }
      const src = snapshotFile(what.path);
      try {
        return { handle: StoreHandle.openSnapshot(src, name), source: src };
      } catch (e) {
        src.close();
        throw e;
      }
    }
    const handle = StoreHandle.openSnapshot(what.bytes, options.name ?? "store");
    return { handle, source: { counts: { reads: 0, bytes: 0 } } };
  }

  function storeOf(handle) {
    const s = stores.get(handle);
    if (!s) throw new Error("the store is closed");
    return s;
  }

  const methods = {
    open(what, options = {}) {
      const id = nextHandle++;
      stores.set(id, openOf(what, options));
      return { handle: id };
    },
    call: (handle, name, options) => storeOf(handle).handle.call(name, options),
    stats: (handle) => ({ ...storeOf(handle).source.counts }),
    refresh: (handle) => storeOf(handle).handle.refreshed(), // the next health answer asks whether the run grew
    close(handle) {
      const s = stores.get(handle);
      stores.delete(handle);
      s?.handle.free();
      s?.source.close?.();
    },
    memory: () => ({ wasm: wasm.memory.buffer.byteLength }),
    /** TEST ONLY, not part of the package's API: make this worker's wasm trap for real, as the
     * browser worker's method of the same name does (worker.js); tests/node/async.test.mjs. */
    __testTrapForReal() {
      wasm.__wbindgen_malloc(0x8000_0000, 8);
      throw new Error("the allocator did not trap"); // reached only if the request was honoured
    },
  };

  /** Whether `e` is a trap of the wasm instance, after which it cannot be trusted. */
  const isTrap = (e) => e instanceof WebAssembly.RuntimeError || (e instanceof RangeError && /call stack/i.test(e.message));
  let trapped = null;

  parentPort.on("message", ({ id, method, args }) => {
    try {
      if (trapped) throw Object.assign(new Error(`this worker's wasm trapped earlier (${trapped})`), { fatal: true });
      const m = Object.hasOwn(methods, method) ? methods[method] : undefined;
      if (!m) throw new Error(`no worker method ${JSON.stringify(method)}`);
      parentPort.postMessage(...answer(id, m(...args)));
    } catch (e) {
      const error = errorData(e);
      if (isTrap(e) || e?.fatal) {
        trapped ??= `${error.name}: ${error.message}`;
        error.fatal = true;
        error.message = `${error.message} (the somatize core trapped in ${method}; its worker is restarted)`;
      }
      parentPort.postMessage({ id, error });
    }
  });
}
