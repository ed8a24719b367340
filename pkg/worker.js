// The package's Web Worker: runs the wasm core where file and HTTP reads can be synchronous.
//
// Protocol: the page posts {id, method, args}; the worker answers {id, result} or
// {id, error: {name, message, code?, somatize?, file?, run?, forward?, fatal?}} (errors.js). Methods: open(source, options) -> {handle, name},
// call(handle, name, options), stats(handle), refresh(handle), close(handle), memory() (bytes
// of the wasm memory), and fn(name, args) for a function of the package's API (e.g.
// tensorStats). A dropped folder comes as {askedFolder, paths}: the worker asks the page
// for the Files it reads by posting {need: {folder, ask, paths}}, and the page answers with the
// method files(ask, [[path, File]]), which has no answer. A store that cannot change until refresh() (dropped files, a snapshot, a
// directory handle) keeps its recent small answers until then; one served as plain files,
// which may change at any time, keeps only answers about one forward. The worker catches every
// failure and keeps answering, except a trap of the wasm (a Rust panic is an `unreachable`;
// also an allocation it cannot make, a stack overflow): its instance is left unusable, so that
// answer carries `fatal: true`, every later message is refused, and the package (browser.js)
// replaces this worker with a fresh one.
import init, * as core from "./wasm/somatize.js";
import { askedFilesSource, blobSnapshot, fetchShare, filesSource, handleSource, httpSnapshot, httpSource, isShareUrl, shareSource } from "./sources.js";
import { SomatizeError, errorData } from "./errors.js";

const ready = init({ module_or_path: new URL("./wasm/somatize_bg.wasm", import.meta.url) }).then((wasm) => {
  core.useErrorClass(SomatizeError);
  return wasm;
});
const stores = new Map(); // handle -> {handle: StoreHandle, source}
let nextHandle = 1;

/** The functions of the API reachable through fn(); Blob arguments arrive as their bytes. */
const functions = {
  tensorStats: core.tensorStats,
  tensorKeys: core.tensorKeys,
  version: core.version,
};

const isSnapshotUrl = (href) => /\.zip$/i.test(new URL(href).pathname);

/** A source and how the core opens it, from what the page sent. */
async function sourceOf(source, options) {
  if (typeof source === "string") {
    // A share document (`somatize share`): the store's files as links into object storage.
    if (!options.snapshot && isShareUrl(source)) {
      const doc = fetchShare(source);
      return { files: shareSource(doc), name: options.name ?? doc.store };
    }
    const snapshot = options.snapshot ?? isSnapshotUrl(source);
    return snapshot ? { snapshot: httpSnapshot(source), name: source } : { files: httpSource(source), name: source };
  }
  if (source instanceof Blob) return { snapshot: blobSnapshot(source), name: source.name ?? "snapshot" };
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    return { snapshot: new Uint8Array(source), name: "snapshot" };
  }
  if (globalThis.FileSystemFileHandle && source instanceof FileSystemFileHandle) {
    return { snapshot: blobSnapshot(await source.getFile()), name: source.name };
  }
  if (globalThis.FileSystemDirectoryHandle && source instanceof FileSystemDirectoryHandle) {
    return { files: handleSource(source), name: source.name };
  }
  if (source && typeof source === "object" && "askedFolder" in source) {
    const { askedFolder, paths } = source;
    return { files: askedFilesSource(paths, (wanted) => askPage(askedFolder, wanted)), name: options.name ?? "dropped folder" };
  }
  if (source && typeof source.length === "number") {
    return { files: filesSource(Array.from(source)), name: options.name ?? "dropped folder" };
  }
  throw new Error("openStore takes a URL, a File/Blob or bytes of a snapshot, dropped files, or a FileSystemDirectoryHandle");
}

/** Files asked of the page and not answered yet: ask id -> resolve. */
const asked = new Map();
let nextAsk = 1;

/** Ask the page for the Files at `paths` of its dropped folder `folder` (browser.js keeps them):
 * resolves to `[[path, File]]` when it answers with the method `files`. */
function askPage(folder, paths) {
  const ask = nextAsk++;
  return new Promise((resolve) => {
    asked.set(ask, resolve);
    self.postMessage({ need: { folder, ask, paths } });
  });
}

/** Run `f` against a source; a handle source that needed something unresolved is resolved and `f` run again. */
async function settled(source, f) {
  for (let round = 0; ; round++) {
    let result, error;
    try {
      result = f();
    } catch (e) {
      error = e;
    }
    if (!source?.hasPending?.()) {
      if (error) throw error;
      return result;
    }
    result?.free?.(); // an answer given without what was pending is dropped (a handle freed)
    if (round >= 1000) throw new Error("the folder kept changing while it was read");
    await source.resolvePending();
  }
}

/** Store calls whose answers are kept (per store, until refresh): small answers a page asks
 * again as people go back and forth (figures, health, run summaries), not row sets. */
const KEPT_CALLS = new Set(["format", "listRuns", "writers", "runs", "curveCosts", "facts", "nodes", "fleet",
  "standing", "figure", "seen", "diagnose", "diagnosed", "history", "where", "alerts", "judge"]);
/** Whether a call is about one forward (its facts, its gantt): once that forward is written its
 * answer never changes, so it is kept even for a store that may change. */
const isAboutOneForward = (name, options) => name === "facts" || (name === "figure" && options?.kind === "gantt");
/** How many answers each store keeps (the least recently used goes first). */
const KEPT_ANSWERS = 64;

function storeOf(handle) {
  const s = stores.get(handle);
  if (!s) throw new Error(`no open store ${handle} (it was closed)`);
  return s;
}

const methods = {
  async open(source, options = {}) {
    const { files, snapshot, name } = await sourceOf(source, options);
    const src = files ?? snapshot;
    const handle = await settled(src, () =>
      files ? core.StoreHandle.openFiles(files, name) : core.StoreHandle.openSnapshot(snapshot, name),
    );
    const id = nextHandle++;
    // Plain files over HTTP may change at any time (`changing`); every other source shows what
    // it had until refresh(), so its answers can be kept until then.
    stores.set(id, { handle, source: src, answers: new Map(), changing: Boolean(files && typeof source === "string") });
    return { handle: id, name };
  },
  async call(handle, name, options) {
    const s = storeOf(handle);
    const kept = s.changing ? isAboutOneForward(name, options) : KEPT_CALLS.has(name);
    const key = kept ? `${name} ${JSON.stringify(options ?? {})}` : null;
    if (key && s.answers.has(key)) {
      const got = s.answers.get(key);
      s.answers.delete(key); // most recently used last
      s.answers.set(key, got);
      return got;
    }
    const got = await settled(s.source, () => s.handle.call(name, options));
    if (key) {
      s.answers.set(key, got);
      if (s.answers.size > KEPT_ANSWERS) s.answers.delete(s.answers.keys().next().value);
    }
    return got;
  },
  stats(handle) {
    return { ...(storeOf(handle).source.counts ?? { reads: 0, bytes: 0 }) };
  },
  /** See files written since; `{unchanged: true}` when the source can tell nothing it read
   * changed (a directory handle's): then what was read and the answers kept stay. */
  async refresh(handle) {
    const s = storeOf(handle);
    if (s.source.changed && !(await s.source.changed())) return { unchanged: true };
    s.source.refresh?.();
    s.handle.refreshed();
    s.answers.clear();
  },
  close(handle) {
    const s = stores.get(handle);
    stores.delete(handle);
    s?.handle.free();
  },
  async memory() {
    globalThis.gc?.(); // only where the browser exposes it (benchmarks run with --expose-gc)
    return { wasm: (await ready).memory.buffer.byteLength };
  },
  fn(name, args) {
    const f = Object.hasOwn(functions, name) ? functions[name] : undefined;
    if (!f) throw new Error(`no function ${JSON.stringify(name)} in the worker`);
    const bytes = args.map((a) => (a instanceof Blob ? new Uint8Array(new FileReaderSync().readAsArrayBuffer(a)) : a));
    return f(...bytes);
  },
};

/** Whether `e` is a trap of the wasm instance, after which it cannot be trusted. */
const isTrap = (e) => e instanceof WebAssembly.RuntimeError ||
  (e instanceof RangeError && /call stack/i.test(e.message));
let trapped = null; // the message of the trap that made this worker unusable

/**
 * TEST ONLY, not part of the package's API: make this worker's wasm trap for real, by asking
 * the core's allocator (wasm-bindgen's `__wbindgen_malloc`, what every string or array handed
 * to the core goes through) for more bytes than a wasm32 address space can hold; it aborts,
 * which in wasm is an `unreachable` trap, as a panic in the core is.
 * tests/browser/worker-trap.test.mjs uses it to check that the package survives a trap;
 * nothing else may.
 */
methods.__testTrapForReal = async () => {
  const wasm = await ready;
  wasm.__wbindgen_malloc(0x8000_0000, 8);
  throw new Error("the allocator did not trap"); // reached only if the request was honoured
};

self.onmessage = async ({ data }) => {
  const { id, method, args } = data ?? {};
  if (method === "files") {
    // The page's answer to askPage: no answer of its own.
    const [ask, entries] = args;
    asked.get(ask)?.(entries);
    asked.delete(ask);
    return;
  }
  try {
    if (trapped) throw Object.assign(new Error(`this worker's wasm trapped earlier (${trapped})`), { fatal: true });
    await ready;
    const m = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (!m) throw new Error(`no worker method ${JSON.stringify(method)}`);
    const result = await m(...(Array.isArray(args) ? args : []));
    self.postMessage({ id, result });
  } catch (e) {
    const error = errorData(e); // a SomatizeError keeps its code, file, run and forward
    if (isTrap(e) || e?.fatal) {
      trapped ??= `${error.name}: ${error.message}`;
      error.fatal = true;
      error.message = `${error.message} (the somatize core trapped in ${method}; its worker is restarted)`;
    }
    self.postMessage({ id, error });
  }
};
