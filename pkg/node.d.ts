// Type declarations of the Node entry (node.js): the shared API (index.d.ts) and what only Node
// has. Needs neither lib "dom" nor @types/node.
import type { DumpGraph, FilesSource, OpenOptions, SnapshotSource, StepFile, Store, TensorStats } from "./index.js";

export * from "./index.js";

/** A URL object (Node's global URL); only its text is read. */
export interface UrlLike {
  readonly href: string;
}
/** What openStore takes in Node: a folder or snapshot (.zip) path, a file: URL, an http(s) URL
 * (plain files with listing.jsonl, or a snapshot ending in .zip, read by Range requests), the
 * bytes of a snapshot, or a source object. */
export type StoreSource = string | UrlLike | Uint8Array | FilesSource | SnapshotSource;

/** Open a store; reads are lazy (only the indexes and blobs a call needs). A store opened by
 * path, URL or bytes is read in the package's worker thread, so no call blocks this thread's
 * event loop; one over a source object, whose functions are the caller's, on this thread. */
export function openStore(source: StoreSource, options?: OpenOptions): Promise<Store>;

/** A store folder as a FilesSource (synchronous fs reads by range). */
export function folderSource(root: string): FilesSource & { counts: { reads: number; bytes: number } };
/** A snapshot file kept open and read by ranges; close() closes it. */
export function snapshotFile(path: string): SnapshotSource & { counts: { reads: number; bytes: number }; close(): void };

/** Statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes, {key: TensorStats}. */
export function tensorStats(bytes: Uint8Array, name: string): Record<string, TensorStats>;
/** The file at `path`, read straight into wasm memory a chunk at a time (the name in errors and
 * of a lone .npy's key defaults to the path). */
export function tensorStats(path: string, name?: string): Record<string, TensorStats>;

/** One step of a per-step dump measured as `somatize import` measures it (index.d.ts); in Node
 * a step file may also be its path (read straight into wasm memory, named by it in errors). */
export function stepStats(
  graph: string | Uint8Array | DumpGraph | null | undefined,
  step: StepFile | string,
  previous?: StepFile | string | null,
  options?: { name?: string; previousName?: string },
): Record<string, Record<string, number>>;

/** Bytes given as a Blob (Node's global Blob). */
export interface BlobLike {
  arrayBuffer(): Promise<ArrayBuffer>;
}
/** The heavier functions as Promises, the browser's shape; in Node they run in this process. */
export const background: {
  tensorStats(bytes: Uint8Array | BlobLike, name: string): Promise<Record<string, TensorStats>>;
  tensorKeys(bytes: Uint8Array | BlobLike, name: string): Promise<{ key: string; shape: number[]; dtype: string }[]>;
  /** Bytes of this thread's wasm memory; it grows and is never given back. */
  memory(): Promise<{ wasm: number }>;
};
