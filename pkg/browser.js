// Entry for browsers (and bundlers): fetch and instantiate the wasm beside this file, then export the API.
// Stores and heavy work run in the package's Web Worker (worker.js); the page gets Promises.
import init from "./wasm/somatize.js";
import { Store } from "./store.js";

await init({ module_or_path: new URL("./wasm/somatize_bg.wasm", import.meta.url) });

export * from "./api.js";
export { Store };

/** The one worker of this page, started on first use; answers arrive by id. */
class WorkerClient {
  #worker;
  #pending = new Map();
  #next = 1;

  constructor() {
    this.#worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.#worker.onmessage = ({ data }) => {
      const p = this.#pending.get(data.id);
      if (!p) return;
      this.#pending.delete(data.id);
      if (data.error) {
        const e = new Error(data.error.message);
        if (data.error.name && data.error.name !== "Error") e.name = data.error.name;
        p.reject(e);
      } else p.resolve(data.result);
    };
    this.#worker.onerror = (ev) => {
      ev.preventDefault?.();
      const e = new Error(`the somatize worker failed: ${ev.message ?? "it could not start"}`);
      for (const p of this.#pending.values()) p.reject(e);
      this.#pending.clear();
    };
  }

  /** Post {id, method, args}; resolve with its result, reject with an Error carrying the core's message. */
  post(method, ...args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args });
    });
  }
}

let client;
const worker = () => (client ??= new WorkerClient());

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
  const w = worker();
  const { handle } = await w.post("open", source, options);
  let open = true;
  const live = () => (open ? Promise.resolve() : Promise.reject(new Error("the store is closed")));
  return new Store({
    call: (name, opts) => live().then(() => w.post("call", handle, name, opts)),
    stats: () => live().then(() => w.post("stats", handle)),
    refresh: () => live().then(() => w.post("refresh", handle)),
    close: () => {
      if (!open) return Promise.resolve();
      open = false;
      return w.post("close", handle);
    },
  });
}

/** The API's heavier functions run in the worker: bytes (Uint8Array) or a File/Blob. */
export const background = {
  tensorStats: (bytes, name) => worker().post("fn", "tensorStats", [bytes, name]),
  tensorKeys: (bytes, name) => worker().post("fn", "tensorKeys", [bytes, name]),
  /** Bytes of the worker's wasm memory (it grows and is never given back). */
  memory: () => worker().post("memory"),
};
