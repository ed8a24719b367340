// Store sources for a Web Worker, where reads can be synchronous: dropped files, a directory
// handle, a snapshot File/Blob, and a store or snapshot behind an http(s) server (Range requests).
//
// A plain-files source is {list?(dir), read(path), readRange(path, offset, len), size(path)},
// returning null for what does not exist; a snapshot source is {size, readAt(offset, len)}.
// Each keeps counts {reads, bytes} of what it read. Each also has readRangeInto/readAtInto, which
// the core prefers: the bytes are copied into wasm memory and their buffer is let go at once.

const counted = (counts, bytes) => {
  counts.reads += 1;
  counts.bytes += bytes.length;
  return bytes;
};

/** Copy `bytes` into `target` (a view of wasm memory) and detach their buffer, which this module
 * alone holds (a response or a read of a Blob): it is freed now instead of at the worker's next
 * garbage collection, so a scan's reads do not pile up in memory. The number of bytes copied. */
function into(counts, target, bytes) {
  const n = Math.min(bytes.length, target.length);
  target.set(bytes.subarray(0, n));
  bytes.buffer.transfer?.(0);
  counts.reads += 1;
  counts.bytes += n;
  return n;
}

/** Read a slice of a Blob synchronously (workers only). */
function blobBytes(blob, start, end) {
  const part = start === 0 && end >= blob.size ? blob : blob.slice(start, end);
  return new Uint8Array(new FileReaderSync().readAsArrayBuffer(part));
}

/** The plain-files reads (read, readRange, readRangeInto, size) of a source whose `file(path)`
 * gives the File or Blob at a path, or null where there is none (it may throw Pending); the bytes
 * read are counted in `counts`. */
function fileReads(counts, file) {
  return {
    read(path) {
      const f = file(path);
      return f ? counted(counts, blobBytes(f, 0, Infinity)) : null;
    },
    readRange(path, offset, len) {
      const f = file(path);
      return f ? counted(counts, blobBytes(f, offset, offset + len)) : null;
    },
    readRangeInto(path, offset, target) {
      const f = file(path);
      return f ? into(counts, target, blobBytes(f, offset, offset + target.length)) : null;
    },
    size: (path) => {
      const f = file(path);
      return f ? f.size : null;
    },
  };
}

/** Dropped files: a FileList or an array of File (with webkitRelativePath) or of {path, file}.
 * The store's root is the folder holding the shallowest somatize-store.json. */
export function filesSource(files) {
  const entries = [];
  for (const f of files) {
    if (f instanceof Blob) entries.push([f.webkitRelativePath || f.name, f]);
    else entries.push([String(f.path).replace(/^\/+/, ""), f.file]);
  }
  const { byPath, list } = folderIndex(entries.map(([p]) => p), entries.map(([, f]) => f));
  const counts = { reads: 0, bytes: 0 };
  return {
    counts,
    list,
    ...fileReads(counts, (path) => byPath.get(path) ?? null),
  };
}

/** The store under a dropped folder given as its files' `paths` (with `values`, one per path):
 * `byPath` (a path under the store's root, the folder holding the shallowest
 * somatize-store.json, to its value) and `list(dir)` (the names in a folder, null for none). */
function folderIndex(paths, values) {
  const roots = paths
    .filter((p) => p === "somatize-store.json" || p.endsWith("/somatize-store.json"))
    .sort((a, b) => a.split("/").length - b.split("/").length);
  if (roots.length === 0) throw new Error("the dropped files hold no somatize-store.json: not a somatize store");
  const prefix = roots[0].slice(0, -"somatize-store.json".length);
  const byPath = new Map();
  const dirs = new Map([["", new Set()]]);
  paths.forEach((p, k) => {
    if (!p.startsWith(prefix)) return;
    const rel = p.slice(prefix.length);
    byPath.set(rel, values[k]);
    const parts = rel.split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (!dirs.has(dir)) dirs.set(dir, new Set());
      dirs.get(dir).add(parts[i]);
    }
  });
  return { byPath, prefix, list: (dir) => (dirs.has(dir) ? [...dirs.get(dir)] : null) };
}

/**
 * A dropped folder whose files stay with the page: the worker is given only their `paths`
 * (posting thousands of File objects to a worker, or asking each its size, costs seconds), and
 * the Files it reads or sizes are asked for as they are needed, `ask(paths)` resolving to `[[path, File]]` (paths as
 * given, before the store's root is taken off). A read of a File not here yet records it and
 * throws Pending; the worker resolves what was recorded and runs the call again, as for a
 * directory handle. A path the page does not answer for reads as missing.
 */
export function askedFilesSource(paths, ask) {
  const { byPath: known, prefix, list } = folderIndex(paths, paths);
  const files = new Map(); // path under the root -> File | null (the page had none)
  const pending = new Set();
  const counts = { reads: 0, bytes: 0 };
  const file = (path) => {
    if (!known.has(path)) return null;
    if (files.has(path)) return files.get(path);
    pending.add(path);
    throw new Pending(`${path}: not resolved yet`);
  };
  return {
    counts,
    list,
    ...fileReads(counts, file),
    /** Whether a call asked for a File not here yet. */
    hasPending: () => pending.size > 0,
    /** Ask the page for every File asked for since the last time. */
    async resolvePending() {
      const todo = [...pending];
      pending.clear();
      const got = new Map(await ask(todo.map((p) => prefix + p)));
      for (const p of todo) files.set(p, got.get(prefix + p) ?? null);
      for (const [p, f] of got) if (p.startsWith(prefix) && !files.has(p.slice(prefix.length))) files.set(p.slice(prefix.length), f);
    },
  };
}

/** A snapshot zip held in a File or Blob: only the central directory and the entries a call needs are read. */
export function blobSnapshot(blob) {
  const counts = { reads: 0, bytes: 0 };
  return {
    counts,
    size: blob.size,
    readAt: (offset, len) => counted(counts, blobBytes(blob, offset, offset + len)),
    readAtInto: (offset, target) => into(counts, target, blobBytes(blob, offset, offset + target.length)),
  };
}

/** The one XMLHttpRequest of this worker, opened again for each request: opening it lets the
 * previous response go, where a new object per request would keep every response's bytes in
 * the browser until the next garbage collection (a scan makes one request per MiB). */
let xhr = null;

/** A synchronous request by XMLHttpRequest (workers): `range` is [first, last] bytes. Answers
 * {status, header(name), body: ArrayBuffer}, read off the request before the next one is made.
 * Node's equivalent is in sources-node.js. */
export function xhrRequest(method, url, range) {
  const r = (xhr ??= new XMLHttpRequest());
  r.open(method, url, false);
  r.responseType = method === "GET" ? "arraybuffer" : "";
  if (range) r.setRequestHeader("Range", `bytes=${range[0]}-${range[1]}`);
  // A store may be growing: revalidate rather than read a cached copy. Only on the worker's own
  // origin, where the header needs no CORS preflight.
  if (new URL(url).origin === self.location.origin) r.setRequestHeader("Cache-Control", "no-cache");
  try {
    r.send();
  } catch (e) {
    throw new Error(`${url}: the request failed (${e.message})`);
  }
  if (r.status === 0) throw new Error(`${url}: the request failed (network error or blocked)`);
  const headers = new Map();
  for (const line of r.getAllResponseHeaders().split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const body = method === "GET" ? (r.response ?? new ArrayBuffer(0)) : new ArrayBuffer(0);
  return { status: r.status, header: (name) => headers.get(name.toLowerCase()) ?? null, body };
}

/** The length of `url`, or null when it does not exist. */
function httpSize(url, request) {
  const head = request("HEAD", url);
  if (head.status === 404 || head.status === 410) return null;
  const len = head.header("content-length");
  if (head.status >= 200 && head.status < 300 && len !== null && head.header("content-encoding") === null) {
    return Number(len);
  }
  const r = request("GET", url, [0, 0]);
  if (r.status === 404 || r.status === 410) return null;
  const total = /\/(\d+)\s*$/.exec(r.header("content-range") ?? "");
  if (r.status === 206 && total) return Number(total[1]);
  if (r.status === 200) return r.body.byteLength;
  throw new Error(`${url}: HTTP ${r.status}`);
}

/** Up to `len` bytes of `url` from `offset`, or null when it does not exist. */
function httpRange(url, offset, len, request) {
  if (len <= 0) return new Uint8Array(0);
  const r = request("GET", url, [offset, offset + len - 1]);
  if (r.status === 404 || r.status === 410) return null;
  if (r.status === 416) return new Uint8Array(0);
  if (r.status === 206) return new Uint8Array(r.body).subarray(0, len);
  if (r.status === 200) return new Uint8Array(r.body).subarray(offset, offset + len);
  throw new Error(`${url}: HTTP ${r.status}`);
}

/** A store served as plain files under `base` (an http(s) URL); folders are not listed: the
 * store's listing.jsonl says its runs and writers. `request` makes synchronous requests. */
export function httpSource(base, request = xhrRequest) {
  const root = base.endsWith("/") ? base : `${base}/`;
  const url = (path) => new URL(path.split("/").map(encodeURIComponent).join("/"), root).href;
  const counts = { reads: 0, bytes: 0 };
  return {
    counts,
    read(path) {
      const r = request("GET", url(path));
      if (r.status === 404 || r.status === 410) return null;
      if (r.status < 200 || r.status >= 300) throw new Error(`${url(path)}: HTTP ${r.status}`);
      return counted(counts, new Uint8Array(r.body));
    },
    readRange(path, offset, len) {
      const b = httpRange(url(path), offset, len, request);
      return b && counted(counts, b);
    },
    readRangeInto(path, offset, target) {
      const b = httpRange(url(path), offset, target.length, request);
      return b && into(counts, target, b);
    },
    size: (path) => httpSize(url(path), request),
  };
}

/** A snapshot zip at an http(s) URL, read with Range requests. */
export function httpSnapshot(href, request = xhrRequest) {
  const size = httpSize(href, request);
  if (size === null) throw new Error(`${href}: not found`);
  const counts = { reads: 0, bytes: 0 };
  return {
    counts,
    size,
    readAt(offset, len) {
      const b = httpRange(href, offset, len, request);
      if (b === null) throw new Error(`${href}: not found`);
      return counted(counts, b);
    },
    readAtInto(offset, target) {
      const b = httpRange(href, offset, target.length, request);
      if (b === null) throw new Error(`${href}: not found`);
      return into(counts, target, b);
    },
  };
}

/** Thrown by a handle source for what is not resolved yet; the worker resolves and retries. */
export class Pending extends Error {}

/** A folder given as a FileSystemDirectoryHandle. Its entries are looked up lazily: a read of
 * something not yet resolved records it and throws Pending; the worker then resolves what was
 * recorded (asynchronously) and runs the call again. refresh() forgets file snapshots and
 * folder contents so files written since are seen. */
export function handleSource(rootHandle) {
  const dirs = new Map(); // path -> Map(name -> handle) | null (missing)
  const files = new Map(); // path -> File | null (missing)
  const pending = new Set();
  const counts = { reads: 0, bytes: 0 };
  const need = (kind, path) => {
    pending.add(`${kind}:${path}`);
    throw new Pending(`${path}: not resolved yet`);
  };
  const file = (path) => (files.has(path) ? files.get(path) : need("file", path));
  const parent = (path) => {
    const i = path.lastIndexOf("/");
    return [i < 0 ? "" : path.slice(0, i), path.slice(i + 1)];
  };
  async function dirHandle(path) {
    if (path === "") return rootHandle;
    const [up, name] = parent(path);
    const h = await dirHandle(up);
    if (!h) return null;
    try {
      return await h.getDirectoryHandle(name);
    } catch {
      return null;
    }
  }
  async function resolveDir(path) {
    const h = await dirHandle(path);
    if (!h) return dirs.set(path, null);
    const m = new Map();
    for await (const [name, child] of h.entries()) m.set(name, child);
    dirs.set(path, m);
  }
  async function resolveFile(path) {
    const [up, name] = parent(path);
    const h = await dirHandle(up);
    try {
      files.set(path, h ? await (await h.getFileHandle(name)).getFile() : null);
    } catch {
      files.set(path, null);
    }
  }
  return {
    counts,
    list: (dir) => {
      if (!dirs.has(dir)) need("dir", dir);
      const m = dirs.get(dir);
      return m ? [...m.keys()] : null;
    },
    ...fileReads(counts, file),
    /** Whether a call asked for something unresolved. */
    hasPending: () => pending.size > 0,
    /** Resolve everything asked for since the last time. */
    async resolvePending() {
      const todo = [...pending];
      pending.clear();
      for (const item of todo) {
        const [kind, path] = [item.slice(0, item.indexOf(":")), item.slice(item.indexOf(":") + 1)];
        await (kind === "dir" ? resolveDir(path) : resolveFile(path));
      }
    },
    refresh() {
      dirs.clear();
      files.clear();
    },
    /** Whether anything resolved so far changed since: a folder's names, a file's size or
     * modification time, something missing that now exists or the reverse (a store's files are
     * appended to or written anew, never rewritten in place at the same size and time). What
     * was resolved is left as it was. */
    async changed() {
      const handles = new Map();
      const dir = (path) => {
        if (!handles.has(path)) handles.set(path, dirHandle(path));
        return handles.get(path);
      };
      for (const [path, m] of [...dirs]) {
        const h = await dir(path);
        if (!h || !m) {
          if (!h !== !m) return true;
          continue;
        }
        let n = 0;
        for await (const name of h.keys()) {
          n += 1;
          if (!m.has(name)) return true;
        }
        if (n !== m.size) return true;
      }
      for (const [path, f] of [...files]) {
        const [up, name] = parent(path);
        const h = await dir(up);
        let now = null;
        try {
          now = h ? await (await h.getFileHandle(name)).getFile() : null;
        } catch {
          now = null;
        }
        if (!now !== !f) return true;
        if (now && (now.size !== f.size || now.lastModified !== f.lastModified)) return true;
      }
      return false;
    },
  };
}

/** Whether `href` names a share document (`somatize share`) rather than a store or a snapshot. */
export const isShareUrl = (href) => /\.json$/i.test(new URL(href).pathname);

/** The share document at `href` (a presigned or public link), parsed and checked. */
export function fetchShare(href, request = xhrRequest) {
  const r = request("GET", href);
  if (r.status < 200 || r.status >= 300) throw new Error(`${href}: HTTP ${r.status}`);
  return parseShare(new TextDecoder().decode(r.body), href);
}

/** A share document's text parsed and checked: every file a length and parts whose lengths add up to it. */
export function parseShare(text, name = "share document") {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`${name}: not a somatize share document (${e.message})`);
  }
  if (doc?.format !== "somatize-share") throw new Error(`${name}: not a somatize share document`);
  if (!(doc.version >= 1 && doc.version <= 1)) {
    throw new Error(`${name}: share document version ${doc.version}; this package reads version 1 (upgrade it)`);
  }
  const files = doc.files;
  if (!files || typeof files !== "object") throw new Error(`${name}: the share document has no files`);
  const whole = (n) => Number.isSafeInteger(n) && n >= 0;
  for (const [path, f] of Object.entries(files)) {
    const ok =
      whole(f?.len) &&
      Array.isArray(f.parts) &&
      f.parts.every((p) => typeof p?.url === "string" && whole(p.len)) &&
      f.parts.reduce((s, p) => s + p.len, 0) === f.len;
    if (!ok || path.split("/").some((s) => s === "" || s === "." || s === "..")) {
      throw new Error(`${name}: bad entry for ${JSON.stringify(path)} in the share document`);
    }
  }
  return doc;
}

/** A store shared from object storage (`somatize share`): `doc` names every file a reader needs,
 * with its length and the objects it is the concatenation of, each with a URL (presigned or under
 * a public prefix) read with Range requests. Folders are listed from the document. */
export function shareSource(doc, request = xhrRequest) {
  const files = new Map(Object.entries(doc.files));
  const dirs = new Map([["", new Set()]]);
  for (const path of files.keys()) {
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (!dirs.has(dir)) dirs.set(dir, new Set());
      dirs.get(dir).add(parts[i]);
    }
  }
  const counts = { reads: 0, bytes: 0 };
  /** Bytes [offset, offset + len) of `path`, from the parts they fall in, or null if no such file. */
  function range(path, offset, len) {
    const f = files.get(path);
    if (!f) return null;
    const end = Math.min(f.len, offset + len);
    if (offset >= end) return new Uint8Array(0);
    const out = new Uint8Array(end - offset);
    let at = 0;
    for (const p of f.parts) {
      const [p0, p1] = [at, at + p.len];
      at = p1;
      if (p1 <= offset) continue;
      if (p0 >= end) break;
      const s = Math.max(offset, p0);
      const want = Math.min(end, p1) - s;
      const b = httpRange(p.url, s - p0, want, request);
      if (b === null || b.length !== want) {
        throw new Error(`${path}: a part of it is gone or shorter than shared (the links expired, or its writer merged it since: share again)`);
      }
      out.set(b, s - offset);
    }
    return out;
  }
  return {
    counts,
    store: doc.store,
    list: (dir) => (dirs.has(dir) ? [...dirs.get(dir)] : null),
    read(path) {
      const b = range(path, 0, files.get(path)?.len ?? 0);
      return b && counted(counts, b);
    },
    readRange(path, offset, len) {
      const b = range(path, offset, len);
      return b && counted(counts, b);
    },
    readRangeInto(path, offset, target) {
      const b = range(path, offset, target.length);
      return b && into(counts, target, b);
    },
    size: (path) => files.get(path)?.len ?? null,
  };
}
