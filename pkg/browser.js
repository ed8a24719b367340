// Entry for browsers (and bundlers): fetch and instantiate the wasm beside this file, then export the API.
// Stores and heavy work run in the package's Web Worker (worker.js); the page gets Promises.
import { init, useErrorClass } from "./core.js";
import { Store } from "./store.js";
import { WorkerClient, Opened } from "./client.js";
import { SomatizeError } from "./errors.js";

await init({ module_or_path: new URL("./wasm/somatize_bg.wasm", import.meta.url) });
useErrorClass(SomatizeError);

export * from "./api.js";
export { Store };

/** Start the page's worker (worker.js) for the WorkerClient (client.js). */
function spawn({ message, error }) {
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  worker.onmessage = ({ data }) => {
    if (data?.need) {
      // The worker reads a dropped folder's Files (worker.js askPage): send those asked.
      const { folder, ask, paths } = data.need;
      worker.postMessage({ method: "files", args: [ask, filesAsked(folder, paths)] });
    } else message(data);
  };
  worker.onerror = (ev) => {
    ev.preventDefault?.();
    error(ev.message);
  };
  return { post: (m) => worker.postMessage(m), terminate: () => worker.terminate(), busy() {} };
}

let client;
const worker = () => (client ??= new WorkerClient(spawn));

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

/** Dropped folders opened: token -> Map(path -> File). Their Files stay here; the worker gets
 * their paths and asks for the Files it reads (posting thousands of File objects to a
 * worker at once costs seconds: a store of 1,000 runs is 5,000 files). */
const folders = new Map();
let nextFolder = 1;
/** The most Files sent for one ask: those asked and others of the same run's folder, which the
 * same call is likely to read next (each File not here costs the call a round trip). */
const FILES_PER_ASK = 64;

/** A dropped folder (a FileList, File[] with webkitRelativePath, or {path, file}[]) kept here,
 * as the worker is sent it (worker.js: `{askedFolder, paths}`), and its token. */
function keepFolder(list) {
  const files = new Map();
  for (const f of list) {
    if (f instanceof Blob) files.set(f.webkitRelativePath || f.name, f);
    else files.set(String(f.path).replace(/^\/+/, ""), f.file);
  }
  const token = nextFolder++;
  folders.set(token, files);
  // No sizes: a picked File's size is a question to the browser's file system, ~0.2 ms each.
  return { token, source: { askedFolder: token, paths: [...files.keys()] } };
}

/** `[[path, File]]` for an ask of the worker: the paths asked, then others in the same run's
 * folder (`…runs/NAME/`), up to FILES_PER_ASK. */
function filesAsked(folder, paths) {
  const files = folders.get(folder);
  if (!files) return [];
  const out = new Map();
  for (const p of paths) if (files.has(p)) out.set(p, files.get(p));
  const runDirs = paths.map((p) => /^(.*?runs\/[^/]+\/)/.exec(p)?.[1]).filter(Boolean);
  for (const dir of new Set(runDirs)) {
    for (const [p, f] of files) {
      if (out.size >= FILES_PER_ASK) break;
      if (p.startsWith(dir) && !out.has(p)) out.set(p, f);
    }
  }
  return [...out];
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
  let folder = null;
  if (source && typeof source === "object" && !(source instanceof Blob) && !ArrayBuffer.isView(source) &&
    typeof source.length === "number") {
    const kept = keepFolder(Array.from(source));
    folder = kept.token;
    source = kept.source;
  }
  const opened = new Opened(worker(), source, options);
  const forget = () => folder !== null && folders.delete(folder);
  try {
    await opened.handle(); // opening errors (not a store, a newer format) reject here
  } catch (e) {
    forget();
    throw e;
  }
  const backend = opened.backend();
  return new Store({ ...backend, close: () => backend.close().finally(forget) });
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
