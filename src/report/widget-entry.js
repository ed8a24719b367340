// The package's browser entry inside the notebook widget (`somatize.show`): the wasm comes from
// the parent window as bytes (the kernel sends it beside the page), the core runs on the main thread, and a store's bytes come from
// the kernel, asked for through the widget's module (the parent window), which relays them over
// the anywidget channel. The widget links this module in place of pkg/browser.js.
//
// The kernel is asynchronous and the core's reads are synchronous, so reads follow the pattern
// of the package's directory-handle source: a read of something not here yet throws, what was
// missing is asked of the kernel in one round trip, and the call is run again. Bytes are kept in
// aligned chunks (at most CACHE_BYTES of them, least recently used dropped first).
import init, { StoreHandle, tensorStats, tensorKeys, useErrorClass } from "./wasm/somatize.js";
import { Store } from "./store.js";
import { SomatizeError } from "./errors.js";

export * from "./api.js";
export { Store };

performance.mark("somatize:wasm-asked");
// The wasm core is asked of the widget's module in the parent window (the kernel sends it beside
// the page, gzipped: not inside the HTML as base64) and compiled as it comes by the page's first
// script (widget-wasm.js, which every widget page begins with).
if (!globalThis.somatizeWasm) throw new Error("the widget's page has no wasm loader (widget-wasm.js)");
const wasm = await init({ module_or_path: await globalThis.somatizeWasm });
useErrorClass(SomatizeError); // errors with a code are SomatizeErrors, as from the package
performance.mark("somatize:wasm-ready");

/** Bytes asked of the kernel at a time are whole chunks of this size. */
export const CHUNK = 256 << 10;
/** Bytes of chunks kept before the least recently used are dropped. */
export const CACHE_BYTES = 256 << 20;
/** Files this small come whole with their size (one round trip instead of two). */
const SMALL = 256 << 10;
/** Chunks read ahead after a missing one that follows one already here (an index is read front to back). */
const AHEAD = 3;

class Pending extends Error {}

/** The kernel channel as the parent window offers it: `post(asks)` answers `{answers}` (see boot). */
let channel = null;
/** Set how asks reach the kernel: `ask(asks) -> Promise<answers>` (the widget's boot does). */
export function setKernelChannel(ask) {
  channel = ask;
}

/**
 * A store's plain files read from the kernel: `list`, `read`, `readRange`, `size` as the core
 * asks them (synchronously; missing answers throw and are asked for by `resolvePending`).
 */
export function kernelSource() {
  const sizes = new Map(); // path -> number | null
  const lists = new Map(); // dir -> string[] | null
  const chunks = new Map(); // `${path}\n${index}` -> Uint8Array (shorter than CHUNK: the file's end)
  let held = 0;
  const pending = new Map(); // key -> ask
  const counts = { reads: 0, bytes: 0, asks: 0, roundTrips: 0 };
  const need = (key, ask) => {
    pending.set(key, ask);
    throw new Pending(`${ask.path}: not here yet`);
  };
  const size = (path) => {
    if (sizes.has(path)) return sizes.get(path);
    // A file its folder's listing (here already) does not name is not there: no round trip.
    const cut = path.lastIndexOf("/");
    const names = lists.get(cut < 0 ? "" : path.slice(0, cut));
    if (Array.isArray(names) && !names.includes(path.slice(cut + 1))) return null;
    return need(`stat\n${path}`, { op: "stat", path });
  };
  const keep = (path, index, bytes) => {
    const key = `${path}\n${index}`;
    const old = chunks.get(key);
    if (old) held -= old.length;
    chunks.delete(key);
    chunks.set(key, bytes);
    held += bytes.length;
    for (const [k, v] of chunks) {
      if (held <= CACHE_BYTES) break;
      chunks.delete(k);
      held -= v.length;
    }
  };
  /** Bytes [offset, offset+len) of `path`, or a throw naming the chunks missing. */
  const range = (path, offset, len) => {
    const total = size(path);
    if (total === null) return null;
    const end = Math.min(total, offset + len);
    if (end <= offset) return new Uint8Array(0);
    const out = new Uint8Array(end - offset);
    let missing = -1;
    for (let i = Math.floor(offset / CHUNK); i * CHUNK < end; i++) {
      const key = `${path}\n${i}`;
      const c = chunks.get(key);
      const from = i * CHUNK;
      if (!c || from + c.length < Math.min(end, from + CHUNK)) {
        if (missing < 0) missing = i;
        continue;
      }
      chunks.delete(key); // most recently used last
      chunks.set(key, c);
      if (missing >= 0) continue;
      const a = Math.max(offset, from);
      const b = Math.min(end, from + c.length);
      out.set(c.subarray(a - from, b - from), a - offset);
    }
    if (missing >= 0) {
      // Read ahead only when reading on from the chunk before (a scan), not for a blob here and there.
      const ahead = missing > 0 && chunks.has(`${path}\n${missing - 1}`) ? AHEAD : 0;
      const last = Math.min(Math.ceil(total / CHUNK), Math.max(Math.ceil(end / CHUNK), missing + 1 + ahead));
      const from = missing * CHUNK;
      need(`range\n${path}\n${missing}`, { op: "range", path, offset: from, length: Math.min(total, last * CHUNK) - from });
    }
    counts.reads += 1;
    counts.bytes += out.length;
    return out;
  };
  return {
    counts,
    list: (dir) => (lists.has(dir) ? lists.get(dir) : need(`list\n${dir}`, { op: "list", path: dir })),
    read: (path) => {
      const total = size(path);
      return total === null ? null : range(path, 0, total);
    },
    readRange: (path, offset, len) => range(path, offset, len),
    size,
    hasPending: () => pending.size > 0,
    /** Ask the kernel for everything missing, in one round trip. */
    async resolvePending() {
      if (!channel) throw new Error("no kernel: the widget's channel is not open");
      const asks = merged([...pending.values()]);
      pending.clear();
      counts.asks += asks.length;
      counts.roundTrips += 1;
      this.take(await channel(asks));
    },
    /** Keep the kernel's answers (to asks, or sent unasked as the view rendered). */
    take(answers) {
      for (const a of answers) {
        if (a.op === "list") lists.set(a.path, a.names ?? null);
        else if (a.op === "stat") {
          const old = sizes.get(a.path);
          sizes.set(a.path, a.size ?? null);
          if (a.size === null || a.size === undefined || (typeof old === "number" && a.size < old)) forget(a.path);
          if (a.bytes) keepRange(a.path, 0, a.bytes);
        } else if (a.op === "range" && a.bytes && Number.isInteger(a.offset / CHUNK)) keepRange(a.path, a.offset, a.bytes);
        else if (a.op === "error") throw new Error(a.message);
      }
    },
    /** Files written since are seen: listings and sizes are asked again; bytes of a run's
     * files (append-only) are kept, but for a chunk at a file's end. */
    refresh() {
      sizes.clear();
      lists.clear();
      for (const [k, v] of chunks) {
        if (v.length < CHUNK || !k.startsWith("runs/")) {
          chunks.delete(k);
          held -= v.length;
        }
      }
    },
    held: () => held,
  };
  function forget(path) {
    for (const [k, v] of chunks) {
      if (k.startsWith(`${path}\n`)) {
        chunks.delete(k);
        held -= v.length;
      }
    }
  }
  /** Keep `bytes` read at `offset` (a multiple of CHUNK) as chunks. */
  function keepRange(path, offset, bytes) {
    for (let at = 0; at < bytes.length; at += CHUNK) {
      keep(path, (offset + at) / CHUNK, bytes.slice(at, at + CHUNK));
    }
    if (bytes.length === 0) keep(path, offset / CHUNK, new Uint8Array(0));
  }
}

/** Asks with the ranges of one file merged: each chunk asked once, neighbours in one range. */
function merged(asks) {
  const out = asks.filter((a) => a.op !== "range");
  const byPath = new Map();
  for (const a of asks.filter((a) => a.op === "range")) {
    const set = byPath.get(a.path) ?? new Set();
    for (let at = a.offset; at < a.offset + a.length; at += CHUNK) set.add(at / CHUNK);
    byPath.set(a.path, set);
  }
  for (const [path, set] of byPath) {
    const idx = [...set].sort((x, y) => x - y);
    for (let i = 0; i < idx.length;) {
      let j = i;
      while (j + 1 < idx.length && idx[j + 1] === idx[j] + 1) j++;
      out.push({ op: "range", path, offset: idx[i] * CHUNK, length: (idx[j] - idx[i] + 1) * CHUNK });
      i = j + 1;
    }
  }
  return out;
}

/** Run `f` against a source; what it needed from the kernel is asked for and `f` run again. */
async function settled(source, f) {
  for (let round = 0; ; round++) {
    let result, error;
    try {
      result = f();
    } catch (e) {
      error = e;
    }
    if (!source.hasPending()) {
      if (error) throw error;
      return result;
    }
    if (round >= 10000) throw new Error("the store kept changing while it was read");
    await source.resolvePending();
  }
}

/** A Store over a wasm handle on this thread; calls on a kernel source wait for its bytes. */
function inPage(handle, source) {
  let open = true;
  let queue = Promise.resolve(); // one call at a time: a rerun must not interleave with another
  const serial = (f) => {
    const run = queue.then(() => {
      if (!open) throw new Error("the store is closed");
      return source ? settled(source, f) : f();
    });
    queue = run.catch(() => {});
    return run;
  };
  return new Store({
    call: (name, options) => serial(() => handle.call(name, options)),
    stats: () => serial(() => ({ ...(source?.counts ?? { reads: 0, bytes: 0 }) })),
    refresh: () => serial(() => {
      source?.refresh();
      handle.refreshed();
    }),
    close: () => serial(() => {
      if (open) handle.free();
      open = false;
    }),
  });
}

/** Open a store: a kernel source (`kernelSource()`), or a snapshot's bytes or File. */
export async function openStore(source, options = {}) {
  if (source && typeof source.resolvePending === "function") {
    const handle = await settled(source, () => StoreHandle.openFiles(source, options.name ?? "store"));
    return inPage(handle, source);
  }
  if (source instanceof Blob) source = new Uint8Array(await source.arrayBuffer());
  if (source instanceof ArrayBuffer) source = new Uint8Array(source);
  if (!(source instanceof Uint8Array)) throw new Error("the widget opens the store its kernel reads, or a snapshot .zip");
  return inPage(StoreHandle.openSnapshot(source, options.name ?? "snapshot"), null);
}

const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

/** The API's heavier functions as Promises, the same shape as the package's (here on this thread). */
export const background = {
  tensorStats: async (bytes, name) => tensorStats(await bytesOf(bytes), name),
  tensorKeys: async (bytes, name) => tensorKeys(await bytesOf(bytes), name),
  memory: async () => ({ wasm: wasm.memory.buffer.byteLength }),
};
