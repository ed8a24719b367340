// Store sources for Node: a folder and a snapshot file, read synchronously by ranges (never whole for a range).
import { closeSync, fstatSync, openSync, readSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const missing = (e) => e && (e.code === "ENOENT" || e.code === "ENOTDIR");

/** Read up to `len` bytes of an open file from `offset`. */
function readAt(fd, offset, len) {
  const size = fstatSync(fd).size;
  const n = Math.max(0, Math.min(len, size - offset));
  const buf = Buffer.allocUnsafe(n);
  let got = 0;
  while (got < n) {
    const r = readSync(fd, buf, got, n - got, offset + got);
    if (r === 0) break;
    got += r;
  }
  return buf.subarray(0, got);
}

/** A store folder on disk as a plain-files source (paths are checked by the core before they get here). */
export function folderSource(root) {
  const counts = { reads: 0, bytes: 0 };
  const full = (p) => (p === "" ? root : join(root, p));
  const orNull = (f) => {
    try {
      return f();
    } catch (e) {
      if (missing(e)) return null;
      throw e;
    }
  };
  const counted = (bytes) => {
    counts.reads += 1;
    counts.bytes += bytes.length;
    return bytes;
  };
  return {
    counts,
    list: (dir) => orNull(() => readdirSync(full(dir))),
    read: (path) => orNull(() => counted(readFileSync(full(path)))),
    readRange: (path, offset, len) =>
      orNull(() => {
        const fd = openSync(full(path), "r");
        try {
          return counted(readAt(fd, offset, len));
        } finally {
          closeSync(fd);
        }
      }),
    size: (path) => orNull(() => statSync(full(path)).size),
    close() {},
  };
}

/** A snapshot zip on disk, kept open and read by ranges. */
export function snapshotFile(path) {
  const fd = openSync(path, "r");
  const counts = { reads: 0, bytes: 0 };
  let open = true;
  return {
    counts,
    size: fstatSync(fd).size,
    readAt(offset, len) {
      if (!open) throw new Error(`${path}: the store is closed`);
      const bytes = readAt(fd, offset, len);
      counts.reads += 1;
      counts.bytes += bytes.length;
      return bytes;
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
