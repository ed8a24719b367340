// Type declarations of the browser entry (browser.js, what bundlers take): the shared API
// (index.d.ts) and what only the browser has. Uses lib "dom" (File, Blob, DataTransfer, …).
import type { OpenOptions, Store, TensorStats } from "./index.js";

export * from "./index.js";

/** What openStore takes in the browser: an http(s) URL (plain files with listing.jsonl, or a
 * snapshot ending in .zip), a snapshot File/Blob/bytes, a FileList/File[] of a dropped folder
 * (webkitRelativePath) or {path, file}[], a FileSystemDirectoryHandle or FileSystemFileHandle, a
 * DataTransfer or its items. (Source objects with functions are Node's: the browser's stores
 * live in a worker.) */
export type StoreSource =
  | string
  | URL
  | Uint8Array
  | ArrayBuffer
  | Blob
  | FileList
  | File[]
  | { path: string; file: File }[]
  | FileSystemDirectoryHandle
  | FileSystemFileHandle
  | DataTransfer
  | DataTransferItemList
  | DataTransferItem[];

/** Open a store in the package's worker; reads are lazy (only the indexes and blobs a call needs). */
export function openStore(source: StoreSource, options?: OpenOptions): Promise<Store>;

/** The heavier functions as Promises, run in the package's worker (a File/Blob is read there). */
export const background: {
  tensorStats(bytes: Uint8Array | Blob, name: string): Promise<Record<string, TensorStats>>;
  tensorKeys(bytes: Uint8Array | Blob, name: string): Promise<{ key: string; shape: number[]; dtype: string }[]>;
  /** Bytes of the worker's wasm memory; it grows and is never given back. */
  memory(): Promise<{ wasm: number }>;
};
