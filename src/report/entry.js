// The package's browser entry inside a `somatize report` file: the wasm and the run's snapshot
// come from blocks embedded in the page, and the core runs on the main thread.
//
// Why the main thread: the package's worker exists to make File and HTTP reads synchronous for
// the core; the report's store is a snapshot already in memory, so every read is a slice of
// bytes and nothing needs a worker. A worker would also need a blob: URL (a file:// page may
// not start one from a file) with its own copy of the glue, since import maps do not reach
// workers. The report links this module in place of pkg/browser.js (src/report/modules.rs).
import init, { StoreHandle, tensorStats, tensorKeys, useErrorClass } from "./wasm/somatize.js";
import { Store } from "./store.js";
import { SomatizeError } from "./errors.js";

export * from "./api.js";
export { Store };

/** The bytes of an embedded base64 block (a `<script type="application/…">` the browser never runs). */
function embeddedBytes(id) {
  const text = document.getElementById(id)?.textContent.trim();
  if (text === undefined) throw new Error(`this report has no #${id} block`);
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const wasm = await init({ module_or_path: embeddedBytes("somatize-wasm") });
useErrorClass(SomatizeError); // errors with a code are SomatizeErrors, as from the package

/** What the report holds: `{run, store, last, written, snapshot: Uint8Array}` (the snapshot is
 * what `somatize export` writes for that run). */
export function embedded() {
  const about = JSON.parse(document.getElementById("somatize-report")?.textContent ?? "null");
  if (!about) throw new Error("this report has no #somatize-report block");
  return { ...about, snapshot: embeddedBytes("somatize-snapshot") };
}

/** A Store over a wasm handle on this thread: each call runs synchronously behind a Promise. */
function inPage(handle) {
  let open = true;
  const later = (f) => new Promise((resolve) => resolve(f()));
  const live = () => {
    if (!open) throw new Error("the store is closed");
  };
  return new Store({
    call: (name, options) => later(() => (live(), handle.call(name, options))),
    stats: () => later(() => ({ reads: 0, bytes: 0 })),
    refresh: () => later(() => {}),
    close: () => later(() => {
      if (open) handle.free();
      open = false;
    }),
  });
}

/** Open a snapshot: its bytes, or a File/Blob of a snapshot .zip. A report reads no folder or URL. */
export async function openStore(source, options = {}) {
  if (source instanceof Blob) source = new Uint8Array(await source.arrayBuffer());
  if (source instanceof ArrayBuffer) source = new Uint8Array(source);
  if (!(source instanceof Uint8Array)) {
    throw new Error("a report opens its own run and snapshot .zip files; to look at a folder or a URL, use somatize serve");
  }
  return inPage(StoreHandle.openSnapshot(source, options.name ?? "snapshot"));
}

const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

/** The API's heavier functions as Promises, the same shape as the package's (here on this thread). */
export const background = {
  tensorStats: async (bytes, name) => tensorStats(await bytesOf(bytes), name),
  tensorKeys: async (bytes, name) => tensorKeys(await bytesOf(bytes), name),
  memory: async () => ({ wasm: wasm.memory.buffer.byteLength }),
};
