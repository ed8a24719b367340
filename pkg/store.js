// The Store object openStore() returns: the same class in Node and the browser, every method a Promise.
//
// A backend carries the calls: in Node the wasm StoreHandle in this process, in the browser a
// handle held by the package's Web Worker. Each method is one line over call(); a new store
// function in the core (an arm of store_call in src/wasm/store.rs) is one more line here.

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

  /** Every run, newest last: runs() -> {rows: [{run, writers, forwards, broke, first_written_us, last_written_us, took_us, …}], skipped}. One scan. */
  runs() {
    return this.call("runs");
  }
  /** Every run at a glance, newest last: compare({runs?: glob, lazy?}) -> {rows: [{run, healthy, flags: [{flag, node, since, advice}], final, best, forwards, broke, ended_ok, from, …}], skipped}. From summaries.jsonl where a finished writer left one, else read now. */
  compare(options = {}) {
    return this.call("compare", options);
  }
  /** Every forward of a run in order, summarised fields as `<kind>.<field>`: forwards({run}) -> {rows, skipped}. One scan. */
  forwards(options) {
    return this.call("forwards", options);
  }
  /** One number per forward: curve({run, of = "loss.value"}) -> {rows: [[forward, value]], skipped}. */
  curve(options) {
    return this.call("curve", options);
  }
  /** Whether curve would scan the index or fetch every blob: curveCosts({run, of}) -> "scan" | "fetch". */
  curveCosts(options) {
    return this.call("curveCosts", options);
  }
  /** The facts of one forward in arrival order, or null for no such forward: facts({run, forward}). */
  facts(options) {
    return this.call("facts", options);
  }
  /** Per node (and where): runs, time, read-backs: nodes({run, last?}) -> {rows, skipped}. A fetch per forward. */
  nodes(options) {
    return this.call("nodes", options);
  }
  /** Per machine, the inverse of nodes, with its newest reading: fleet({run, last?}) -> {rows, skipped}. */
  fleet(options) {
    return this.call("fleet", options);
  }
  /** Every machine's newest reading and quiet_s, writer against writer: standing() -> {machine: row}. */
  standing() {
    return this.call("standing");
  }
  /** A figure as Plotly JSON: figure({kind: "progress"|"spent"|"gantt"|"machines"|"profile"|"flags"|"overlaid", run, smooth?, of?, last?, forward?, thresholds?}), or figure({kind: "compare", runs?, of?, ema?, smooth?, x?, logY?, groupBy?, maxPoints?}) -> {data, layout, skipped}. */
  figure(options) {
    return this.call("figure", options);
  }

  /** The numbers a verdict is taken over, the latest of each per node: seen({run, last?}) -> {node: {kind, metric: value}}. A fetch per forward. */
  seen(options) {
    return this.call("seen", options);
  }
  /** What is wrong where, the seed's {where: [flags]}: diagnose({run, thresholds?, last?}) -> Map(node -> [flags]) in declaration order (a Map keeps the order for names like "0", "1"; Object.fromEntries(map) gives a plain object). */
  diagnose(options) {
    return this.call("diagnose", options);
  }
  /** One measurement of one node over the run: history({run, node, of = "grad_norm", last?}) -> [[forward, value]]. */
  history(options) {
    return this.call("history", options);
  }
  /** The diagnosis folded onto the graph's nodes: where({run, thresholds?, last?}) -> Map(node -> [flags]) in declaration order ("LEAKAGE in net.2" for a finding inside a node). */
  where(options) {
    return this.call("where", options);
  }
  /** What is wrong, loudly: alerts({run, thresholds?, last?}) -> [{node, flag, first_forward, means, advice}]. */
  alerts(options) {
    return this.call("alerts", options);
  }
  /** The diagnosis written down beside the bounds it was taken at (`somatize diagnose --with-bounds`): diagnosed({run, thresholds?, last?}) -> {run, forwards, diagnosis: {where: [flags]}, faults, …, thresholds}. */
  diagnosed(options) {
    return this.call("diagnosed", options);
  }
  /** One value `observe` wrote, by exact spec id and step: query({run, id, step}) -> value, or null when none was written. */
  query(options) {
    return this.call("query", options);
  }
  /** A threshold edit's answers in one call, over one read and one verdict: judge({run, thresholds?, last?, of?}) -> {diagnose, alerts, where, profile, flags, overlaid}, each as its own call gives it. */
  judge(options) {
    return this.call("judge", options);
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
