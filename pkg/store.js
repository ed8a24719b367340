// The Store object openStore() returns: the same class in Node and the browser, every method a Promise.
//
// A backend carries the calls: in Node the wasm StoreHandle in this process, in the browser a
// handle held by the package's Web Worker. Each method is one line over call(); a new store
// function in the core (an arm of store_call in src/wasm.rs) is one more line here.

export class Store {
  #backend;

  /** @param backend {{call(name, options): Promise<any>, stats(): Promise<any>, refresh(): Promise<void>, close(): Promise<void>}} */
  constructor(backend) {
    this.#backend = backend;
  }

  /** Call store function `name` of the core with its options object. */
  call(name, options = {}) {
    return this.#backend.call(name, options);
  }

  /** The store's format file: {format, version}. */
  format() {
    return this.call("format");
  }
  /** Every run name, sorted. */
  listRuns() {
    return this.call("listRuns");
  }
  /** The writers of a run: writers({run}). */
  writers(options) {
    return this.call("writers", options);
  }
  /** Index rows of a run, merged over writers: scan({run, last?, from?, to?, limit?}) -> {rows, bad}. */
  scan(options) {
    return this.call("scan", options);
  }
  /** One forward's blob but its tensors: fetch({run, forward, writer?}) -> {row, meta, facts, stats, tensors}. */
  fetch(options) {
    return this.call("fetch", options);
  }

  /** What this store's source has read so far: {reads, bytes}. */
  stats() {
    return this.#backend.stats();
  }
  /** Forget cached file snapshots so that files written since are seen (a folder being written). */
  refresh() {
    return this.#backend.refresh();
  }
  /** Release the store (its handle, open files). Calls after it reject. */
  close() {
    return this.#backend.close();
  }
}
