// Entry for browsers (and bundlers): fetch and instantiate the wasm beside this file, then export the API.
// Stores and heavy work run in the package's Web Worker (worker.js); the page gets Promises.
import init from "./wasm/somatize.js";
import { Store } from "./store.js";

await init({ module_or_path: new URL("./wasm/somatize_bg.wasm", import.meta.url) });

export * from "./api.js";
export { Store };

/**
 * The one worker of this page, started on first use; answers arrive by id.
 *
 * A trap of the wasm (a Rust panic is an `unreachable`, an allocation it cannot make, a stack
 * overflow) leaves its instance unusable: the worker answers that call with `fatal` and is
 * replaced by a fresh one. The failing call rejects with the trap's message; calls that were
 * waiting are sent again to the new worker once; stores are reopened there on their next call.
 */
class WorkerClient {
  #worker;
  #pending = new Map(); // id -> {resolve, reject, method, args, retried}
  #next = 1;
  /** How many workers were started (a store opened in an earlier one is reopened). */
  generation = 0;

  constructor() {
    this.#start();
  }

  #start() {
    this.generation += 1;
    const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    let answered = false;
    worker.onmessage = ({ data }) => {
      if (worker !== this.#worker) return; // a replaced worker's late answer: asked again of the new one
      answered = true;
      const p = this.#pending.get(data.id);
      if (!p) return;
      this.#pending.delete(data.id);
      if (data.error) {
        const e = new Error(data.error.message);
        if (data.error.name && data.error.name !== "Error") e.name = data.error.name;
        if (data.error.code) e.code = data.error.code;
        p.reject(e);
        if (data.error.fatal) this.#restart();
      } else p.resolve(data.result);
    };
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      if (worker !== this.#worker) return;
      const e = new Error(`the somatize worker failed: ${ev.message ?? "it could not start"}`);
      for (const p of this.#pending.values()) p.reject(e);
      this.#pending.clear();
      // One that worked and then failed is replaced; one that could not start is not retried
      // (its next call fails again, saying why).
      if (answered) this.#restart();
    };
    this.#worker = worker;
  }

  /** Replace a worker whose wasm trapped; what was waiting is asked again of the new one. */
  #restart() {
    this.#worker.terminate();
    const waiting = [...this.#pending.entries()];
    this.#pending.clear();
    this.#start();
    for (const [id, p] of waiting) {
      if (p.retried || STORE_METHODS.has(p.method)) {
        // A store call names a handle of the dead worker: its Opened opens it again and asks again.
        p.reject(Object.assign(new Error("the somatize worker was restarted"), { restarted: true }));
        continue;
      }
      p.retried = true;
      this.#pending.set(id, p);
      this.#worker.postMessage({ id, method: p.method, args: p.args });
    }
  }

  /** Post {id, method, args}; resolve with its result, reject with an Error carrying the core's message. */
  post(method, ...args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method, args, retried: false });
      this.#worker.postMessage({ id, method, args });
    });
  }
}

/** Methods about one store's handle: after a restart the store is opened again before them. */
const STORE_METHODS = new Set(["open", "call", "stats", "refresh", "close"]);

let client;
const worker = () => (client ??= new WorkerClient());

/**
 * A store open in the worker, by what it was opened from: after the worker was restarted it is
 * opened again (same source, same options) on its next call, so a Store outlives a trap.
 */
class Opened {
  #client;
  #source;
  #options;
  #handle = null; // {generation, id: Promise of the handle} in the worker of that generation
  closed = false;

  constructor(client, source, options) {
    this.#client = client;
    this.#source = source;
    this.#options = options;
  }

  /** The handle in the current worker, opening the store there if it is not open yet. */
  async handle() {
    for (;;) {
      if (this.closed) throw new Error("the store is closed");
      const generation = this.#client.generation;
      if (this.#handle?.generation !== generation) {
        const id = this.#client.post("open", this.#source, this.#options).then((r) => r.handle);
        const h = { generation, id };
        this.#handle = h;
        id.catch(() => {
          if (this.#handle === h) this.#handle = null;
        });
      }
      try {
        return await this.#handle.id;
      } catch (e) {
        if (!e.restarted) throw e; // the open itself failed; a restart meanwhile opens again
      }
    }
  }

  /** Post `method` on this store; a store call caught by a restart is asked again once. */
  async post(method, ...args) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#client.post(method, await this.handle(), ...args);
      } catch (e) {
        if (!e.restarted || attempt > 0) throw e;
      }
    }
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    const h = this.#handle;
    this.#handle = null;
    const id = await h?.id.catch(() => null);
    if (id != null && h.generation === this.#client.generation) await this.#client.post("close", id).catch(() => {});
  }
}

/** Files of dropped items (DataTransferItemList or an array of DataTransferItem): a directory
 * handle where the browser gives one, else the files under each entry with their paths. */
async function fromItems(items) {
  const list = Array.from(items).filter((i) => i.kind === "file");
  if (list.length === 1 && list[0].getAsFileSystemHandle) {
    const h = await list[0].getAsFileSystemHandle();
    if (h) return h.kind === "directory" ? h : await h.getFile();
  }
  const out = [];
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const file = await new Promise((ok, bad) => entry.file(ok, bad));
      out.push({ path: prefix + entry.name, file });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((ok, bad) => reader.readEntries(ok, bad));
        if (batch.length === 0) break;
        for (const e of batch) await walk(e, `${prefix}${entry.name}/`);
      }
    }
  };
  for (const item of list) {
    const entry = item.webkitGetAsEntry?.();
    if (entry) await walk(entry, "");
    else {
      const file = item.getAsFile();
      if (file) out.push({ path: file.name, file });
    }
  }
  return out.length === 1 && !out[0].path.includes("/") ? out[0].file : out;
}

/** Open a store in the worker: an http(s) URL (plain files with listing.jsonl, or a .zip
 * snapshot), a snapshot File/Blob/bytes, a FileList or File[] of a dropped folder, a
 * FileSystemDirectoryHandle, or DataTransferItems. Reads are lazy. */
export async function openStore(source, options = {}) {
  if (typeof source === "string" || source instanceof URL) source = new URL(source, location.href).href;
  else if ((globalThis.DataTransfer && source instanceof DataTransfer)) source = await fromItems(source.items);
  else if ((globalThis.DataTransferItemList && source instanceof DataTransferItemList) ||
    (Array.isArray(source) && globalThis.DataTransferItem && source[0] instanceof DataTransferItem)) {
    source = await fromItems(source);
  }
  const opened = new Opened(worker(), source, options);
  await opened.handle(); // opening errors (not a store, a newer format) reject here
  return new Store({
    call: (name, opts) => opened.post("call", name, opts),
    stats: () => opened.post("stats"),
    refresh: () => opened.post("refresh"),
    close: () => opened.close(),
  });
}

/** The API's heavier functions run in the worker: bytes (Uint8Array) or a File/Blob. */
export const background = {
  tensorStats: (bytes, name) => worker().post("fn", "tensorStats", [bytes, name]),
  tensorKeys: (bytes, name) => worker().post("fn", "tensorKeys", [bytes, name]),
  /** Bytes of the worker's wasm memory (it grows and is never given back). */
  memory: () => worker().post("memory"),
};

/**
 * TEST ONLY — not part of the package's API (absent from index.d.ts and the README):
 * tests/browser/worker-trap.test.mjs makes the worker's wasm trap for real through it, to check
 * that a trap costs only the call that caused it.
 */
/** Helper threads are Node's (pkg/helpers-node.js): here the core runs on one thread and this
 * only checks its argument; it returns 0, the helpers there were. */
export function setHelpers(n) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`helpers: ${n} is not a whole number >= 0`);
  return 0;
}

/** No helper threads in the browser. */
export function helperCounts() {
  return { helpers: 0, running: 0, tensors: 0, blocks: 0, skips: 0 };
}

export const __testOnly = Object.freeze({ trapWorker: () => worker().post("__testTrapForReal") });
