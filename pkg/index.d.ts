// Type declarations shared by the package's two entries (hand-written; the wasm bindings are internal): node.d.ts and
// browser.d.ts re-export these and add what only their entry exports. Nothing here needs lib "dom" or @types/node.

/** An observable spec: what to measure, how, and when. Every field is part of its id. */
export interface ObservableSpec {
  /** Which kind of tensor: "param", "grad", "act", "loss", or a name a source defines. */
  source: string;
  /** Which tensor of that kind: a key, a glob, or "all". */
  selector: string;
  /** Transforms applied left to right before the reduction. */
  transforms?: string[];
  /** The reduction, e.g. "l2" or "quantiles(0.05,0.95)". */
  reduction: string;
  /** A temporal function over the observable's history. */
  temporal?:
    | { fn: "delta" }
    | { fn: "ema"; alpha: number }
    | { fn: "slope"; window: number }
    | { fn: "rolling_std"; window: number }
    | null;
  /** Observe every `frequency` steps; 1 (the default) is every step. */
  frequency?: number;
  /** A declared cost estimate (never measured). */
  budget_hint?: { compute_ms: number } | null;
}

/** Statistics over the finite values, in f64; counts over every element. */
export interface Stats {
  count: number;
  nonfinite: number;
  nan: number;
  l2?: number;
  l1?: number;
  mean?: number;
  std?: number;
  min?: number;
  max?: number;
  absmax?: number;
  zero_fraction?: number;
}

/** The version of the core this package was built from. */
export function version(): string;
/** The stable 16-hex-char id of a spec. Throws an Error naming what is wrong. */
export function specId(spec: ObservableSpec): string;
/** The canonical serialisation the id is the SHA-256 of. */
export function specCanonical(spec: ObservableSpec): string;
/** One-pass statistics of the values. */
export function statsOf(values: Float32Array | Float64Array): Stats;

// ---- observables, temporal functions, health ----

/** A generated spec with its id. */
export interface IdSpec {
  id: string;
  spec: ObservableSpec;
}
/** One spec per selected key × reduction (kinds: ["param"] by default, as the seed's 0.1.0);
 * unknown names throw, naming them. The answer can be handed to observeTensors as it is. */
export function generate(
  keys: string[],
  reductions: string[],
  transforms?: string[] | null,
  options?: { kinds?: string[]; selector?: string } | null,
): IdSpec[];

/** A tensor handed in: key, shape, and values in C order, with the seed's TypedTensor metadata
 * (axes: one name per dimension; stage; provenance: where it came from). Any other field throws. */
export interface TensorIn {
  key: string;
  shape: number[];
  values: Float32Array | Float64Array | Int32Array | Uint8Array | number[];
  axes?: string[];
  stage?: string;
  provenance?: string;
}
/** Options of observeTensors/observeFile: the seed's Budget(max_compute_ms) over the specs'
 * declared budget_hint.compute_ms (nothing is timed; what does not fit is skipped, reason "budget"). */
export interface ObserveOptions {
  budget?: { maxComputeMs: number };
}
/** An observed value: a number (null when undefined), a vector, or a histogram. */
export type Value = number | null | (number | null)[] | { edges: number[]; counts: number[] };
/** Observe specs over tensors: every key read once, every reduction over one tensor in one pass. */
export function observeTensors(
  tensors: TensorIn[],
  specs: (ObservableSpec | IdSpec)[],
  step?: number,
  options?: ObserveOptions,
): { step: number; values: Record<string, Value>; skipped: ({ id: string } & Record<string, unknown>)[]; failed: string[] };

/** Observe specs over a tensor file's bytes (NPZ, .npy, checkpoint, safetensors), as observeTensors. */
export function observeFile(
  bytes: Uint8Array,
  name: string,
  specs: (ObservableSpec | IdSpec)[],
  step?: number,
  options?: ObserveOptions,
): { step: number; values: Record<string, Value>; skipped: ({ id: string } & Record<string, unknown>)[]; failed: string[] };

/** x[i] - x[i-1] (NaN first). */
export function delta(history: Float64Array | number[]): Float64Array;
/** Exponential moving average, alpha in (0, 1]. */
export function ema(history: Float64Array | number[], alpha: number): Float64Array;
/** Least-squares slope over each window (NaN before the first full window). */
export function slope(history: Float64Array | number[], window: number): Float64Array;
/** Sample standard deviation (ddof = 1) over each window. */
export function rollingStd(history: Float64Array | number[], window: number): Float64Array;

/** One bound a flag is judged at. */
export interface Bound {
  name: string;
  default: number;
  meaning: string;
  origin: "published" | "ours";
  source: string;
}
/** What a flag means and what to do; throws for a name that is no flag. */
export function about(flag: string): { flag: string; means: string; todo: string; bounds: Bound[]; metrics: string[]; sources: string[] };
/** The default thresholds, {name: value}. */
export function thresholdsDefault(): Record<string, number>;
/** Every bound with the overrides applied, {name: value} (the seed's Thresholds(**over).as_dict()). */
export function thresholdsAsDict(over?: Record<string, number>): Record<string, number>;
/** The seed's Thresholds(**over): its own properties are the overrides; pass it as `thresholds`. */
export class Thresholds {
  constructor(over?: Record<string, number>);
  /** Every bound by name, the overrides applied. */
  asDict(): Record<string, number>;
  readonly [name: string]: number | (() => Record<string, number>);
}
/** The nodes as seen: a list of {name, kind, metrics} or {node: {kind?, metric: value}}, in declaration order. */
export type Seen =
  | { name: string; kind?: string; metrics: Record<string, number> }[]
  | Record<string, Record<string, number | string>>;
/** A verdict: {where: [flag, …]}. */
export type Verdict = Record<string, string[]>;
/** The verdict on one picture of the nodes; thresholds are {name: value} overrides. */
export function verdict(seen: Seen, thresholds?: Record<string, number> | null): Verdict;
/** The verdict over a history of forwards, oldest first. */
export function verdictOver(forwards: { number: number; nodes: Seen }[], thresholds?: Record<string, number> | null): Verdict;

// ---- tensor files ----

/** Shape, dtype and statistics of one tensor in a file. */
export interface TensorStats extends Stats {
  shape: number[];
  dtype: string;
}
/** Statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes, {key: TensorStats}. */
export function tensorStats(bytes: Uint8Array, name: string): Record<string, TensorStats>;
/** A dump's graph (its graph.json, DESIGN.md's dump convention): nodes in declaration order,
 * their kinds and optional layouts, and pairs declared apart. */
export interface DumpGraph {
  nodes: { name: string; kind?: string; layout?: string }[];
  apart?: [string, string][];
}
/** A step file's bytes, or a file read a range at a time into `target` (answering the bytes
 * written). */
export type StepFile = Uint8Array | { size: number; readAtInto(offset: number, target: Uint8Array): number };
/** One step of a per-step dump (`step_<n>.npz`: param.*, grad.*, act.*, update.*, loss)
 * measured as `somatize import` measures it: `{node: {metric: value}}`, the forward's
 * stats.json rows (what `somatize seen` shows, without the kinds). `graph`: graph.json's text,
 * bytes or object, or null (the nodes the keys name). `previous`: step n − 1's file, whose
 * difference is the update of nodes without their own update.* tensors. `options`: the files'
 * names in errors. Throws a SomatizeError: BAD_TENSOR_FILE, BAD_GRAPH, BAD_STEP, BAD_OPTION. */
export function stepStats(
  graph: string | Uint8Array | DumpGraph | null | undefined,
  step: StepFile,
  previous?: StepFile | null,
  options?: { name?: string; previousName?: string },
): Record<string, Record<string, number>>;

/** A step's summary (what `somatize.torch.watch` sends: the sufficient statistics measured on
 * the device, docs/recording.md "Summaries") turned into `{node: {metric: value}}` as the
 * companion derives it, the same code as for whole tensors. `summary`: the frame's `summary`
 * structure (JSON text or an object); `values`: its numbers; `samples`: its `summary.samples`
 * tensor (the matrices whose singular values Rust takes), when the summary names samples. Throws a SomatizeError:
 * BAD_GRAPH, BAD_SUMMARY, BAD_OPTION. */
export function summaryStats(
  graph: string | Uint8Array | DumpGraph | null | undefined,
  summary: string | object,
  values: Float64Array,
  samples?: Float32Array | Float64Array | null,
): Record<string, Record<string, number>>;
/** How many worker threads (in Node; none in the browser) help observeTensors with a long float32 tensor (2^23
 * values or more): none by default (SOMATIZE_HELPERS, a number or `auto`, sets the starting
 * count in Node); one per core besides the calling thread, at most 7, is the most that pays; 0
 * turns them off. Same bits with any number. Returns the count before. */
export function setHelpers(n: number): number;
/** The helper threads so far (blocks are of 2^20 values); all 0 in the browser. */
export function helperCounts(): { helpers: number; running: number; tensors: number; blocks: number; skips: number };
/** The tensors in a file's bytes, in file order. */
export function tensorKeys(bytes: Uint8Array, name: string): { key: string; shape: number[]; dtype: string }[];

// ---- stores ----

/** A store's plain files through synchronous methods; null means "does not exist". Without
 * `list`, runs and writers come from the store's listing.jsonl (format 1.1). */
export interface FilesSource {
  list?(dir: string): string[] | null;
  read(path: string): Uint8Array | null;
  readRange(path: string, offset: number, len: number): Uint8Array | null;
  /** Optional: read from `offset` straight into `target` (a view of wasm memory, valid only
   * during the call); the bytes written, fewer than `target.length` at the end of the file. */
  readRangeInto?(path: string, offset: number, target: Uint8Array): number | null;
  size(path: string): number | null;
}
/** A snapshot zip read by ranges. */
export interface SnapshotSource {
  size: number;
  readAt(offset: number, len: number): Uint8Array;
  /** Optional: as readRangeInto, for the snapshot's bytes. */
  readAtInto?(offset: number, target: Uint8Array): number;
}
export interface OpenOptions {
  /** The name used in messages (default: the path or URL). */
  name?: string;
  /** http(s) URLs: read it as a snapshot zip (default: when the path ends in .zip). */
  snapshot?: boolean;
}

/** A summarised field of an index line: `<kind>.<field>` → value (non-finite numbers as numbers). */
export type Field = number | string | boolean | null;

/** One forward's index line, with the writer that wrote it. */
export interface IndexRow {
  writer: string;
  forward: number;
  /** When the line was written, µs since the Unix epoch, the writer's clock. */
  written_us: number;
  took_us: number;
  broke: boolean;
  error?: string;
  fields?: Record<string, Field>;
  blob?: string;
  len?: number;
  crc32?: number;
}

/** A fact of a forward, as the sender gave it. */
export interface Fact {
  node: string;
  kind: string;
  began_us: number;
  took_us: number;
  where: string;
  read_back?: boolean;
  error?: string;
  [extra: string]: unknown;
}

/** One forward's blob but its tensors. */
export interface Fetched {
  row: IndexRow;
  meta: {
    run: string;
    writer: string;
    forward: number;
    written_us: number;
    took_us: number;
    broke: boolean;
    error?: string;
    fields: Record<string, Field>;
    tensors: string[];
  };
  facts: Fact[];
  /** Per node or tensor key: metric → number. */
  stats: Record<string, Record<string, number>>;
  /** Keys of the tensors kept in the blob. */
  tensors: string[];
}

/** An open store; every method is a Promise; errors are Errors with the core's message. */
export class Store {
  /** Call a store function of the core by name with its options object. */
  call(name: string, options?: object): Promise<unknown>;
  /** The format file: {format: "somatize-store", version: "MAJOR.MINOR"}. */
  format(): Promise<{ format: string; version: string }>;
  /** Every run name, sorted. */
  listRuns(): Promise<string[]>;
  /** The writers of a run, sorted. */
  writers(options: { run: string }): Promise<string[]>;
  /** Index rows of a run in (forward, writer) order: all, the last N, or forwards from..=to
   * (at most limit); `bad` holds the messages of unreadable lines skipped. */
  scan(options: { run: string; last?: number; from?: number; to?: number; limit?: number }): Promise<{ rows: IndexRow[]; bad: string[] }>;
  /** One forward (from one writer: the first that has it unless given). */
  fetch(options: { run: string; forward: number; writer?: string }): Promise<Fetched>;
  /** Every run, newest last. One scan of the indexes. */
  runs(): Promise<Answer<RunRow[]>>;
  /** Every forward of a run in order; summarised fields as `<kind>.<field>` (text). One scan. */
  forwards(options: { run: string }): Promise<Answer<ForwardRow[]>>;
  /** One number per forward, `[forward, value]`: a scan when `of` is summarised, else a fetch per forward. */
  curve(options: { run: string; of?: string }): Promise<Answer<[number, number][]>>;
  /** Whether `curve` would scan the index or fetch every blob. */
  curveCosts(options: { run: string; of?: string }): Promise<"scan" | "fetch">;
  /** The facts of one forward in arrival order, or null for no such forward. */
  facts(options: { run: string; forward: number }): Promise<Fact[] | null>;
  /** Per node and where: how often it ran, its time, read-backs. A fetch per forward (`last` limits it). */
  nodes(options: { run: string; last?: number }): Promise<Answer<NodeRow[]>>;
  /** Per machine: the inverse of nodes with its newest reading and waiting_us. */
  fleet(options: { run: string; last?: number }): Promise<Answer<FleetRow[]>>;
  /** Every machine's newest reading, keyed by machine, with quiet_s measured writer against writer. */
  standing(): Promise<Record<string, StandingRow>>;
  /** The latest of each metric per node (NaN as null). A fetch per forward looked at. */
  seen(options: { run: string; last?: number }): Promise<Record<string, { kind: string; [metric: string]: number | string | null }>>;
  /** What is wrong where, the seed's {where: [flags]}, as a Map in declaration order. */
  diagnose(options: { run: string; thresholds?: Record<string, number>; last?: number }): Promise<Map<string, string[]>>;
  /** The diagnosis written down beside its bounds (`somatize diagnose --with-bounds`). */
  diagnosed(options: { run: string; thresholds?: Record<string, number>; last?: number }): Promise<Diagnosis>;
  /** One value `observe` wrote, by exact spec id and step; null when none was. */
  query(options: { run: string; id: string; step: number }): Promise<Value>;
  /** One measurement (default grad_norm) of one node over the run, as [forward, value]. */
  history(options: { run: string; node: string; of?: string; last?: number }): Promise<[number, number][]>;
  /** The diagnosis folded onto the graph's nodes: {node: [flags]} as a Map in declaration order. */
  where(options: { run: string; thresholds?: Record<string, number>; last?: number }): Promise<Map<string, string[]>>;
  /** What is wrong, loudly, with since-when and advice. */
  alerts(options: { run: string; thresholds?: Record<string, number>; last?: number }): Promise<Alert[]>;
  /** What a threshold edit asks, in one call over one read and one diagnosis: each part is
   * what diagnosed, alerts, where (as a plain object) and figure({kind: "profile" | "flags" | "overlaid", of})
   * answer with the same options (`of`: the profile's measurement, default grad_norm). */
  judge(options: { run: string; thresholds?: Record<string, number>; last?: number; of?: string }): Promise<{
    diagnose: Diagnosis;
    alerts: Alert[];
    where: Record<string, string[]>;
    profile: Figure;
    flags: Figure;
    overlaid: Figure;
  }>;
  /** Every run at a glance, newest last: from the store's summaries.jsonl where a finished
   * writer left one, else read now (its indexes, and a blob per forward judged); `lazy`: a run
   * without a summary is not judged (`healthy: null`, `from: "index"`; `from: "live"` with the
   * health a writer last summarised as it went). */
  compare(options?: { runs?: string; lazy?: boolean }): Promise<Answer<RunSummary[]>>;
  /** The runs grouped by a recorded config field (`somatize compare --group-by FIELD`). */
  compare(options: { runs?: string; lazy?: boolean; groupBy: string }): Promise<Answer<GroupSummary[]>>;
  /** Several runs' summarised field overlaid (Plotly JSON), as `somatize figure compare`. */
  figure(options: {
    kind: "compare";
    /** A glob of run names, or the runs' names (an empty list draws none). */
    runs?: string | string[];
    of?: string;
    /** TensorBoard's debiased EMA weight in [0, 1). */
    ema?: number;
    /** A trailing rolling mean's window (not with ema). */
    smooth?: number;
    x?: "forward" | "wall" | "relative";
    logY?: boolean;
    /** Runs whose names begin with one of these are drawn as a mean with a min–max band. */
    groupBy?: string[];
    /** A recorded config field: the runs of each value of it drawn as one group (not with groupBy). */
    groupConfig?: string;
    /** The most points a line keeps (each bucket keeps its min and max); default 2000. */
    maxPoints?: number;
  }): Promise<Figure>;
  /** A figure as Plotly figure JSON, with what was skipped to draw it. */
  figure(options: {
    kind: "progress" | "spent" | "gantt" | "machines" | "profile" | "flags" | "overlaid";
    thresholds?: Record<string, number>;
    run: string;
    smooth?: number;
    of?: string;
    last?: number;
    forward?: number;
  }): Promise<Figure>;
  /** What the store's source has read so far. */
  stats(): Promise<{ reads: number; bytes: number }>;
  /** See files written since (a directory handle being written); other sources read afresh anyway.
   * In the browser, `{unchanged: true}` when a directory handle shows nothing read has changed
   * (then the answers kept stay). */
  refresh(): Promise<void | { unchanged: true }>;
  /** Release the store; calls after it reject. */
  close(): Promise<void>;
}

/** Something a record function could not read and left out, naming where. */
export interface Skip {
  run: string;
  writer?: string | null;
  forward?: number | null;
  line?: number | null;
  reason: string;
}
/** An answer and what was skipped to give it. */
export interface Answer<T> {
  rows: T;
  skipped: Skip[];
}
export interface RunRow {
  run: string;
  writers: number;
  forwards: number;
  broke: number;
  first_written_us: number | null;
  last_written_us: number | null;
  took_us: number;
  mean_took_us: number;
  ended_ok: boolean | null;
}
/** One fault of a run's verdict: its root flag, where, since when, and what to do. */
export interface FaultSummary {
  flag: string;
  node: string;
  since: number;
  advice: string;
}
/** One run at a glance (`compare`'s row; what summaries.jsonl holds). */
export interface RunSummary {
  run: string;
  /** No fault raised at the default thresholds; null only in a lazy answer, not yet judged. */
  healthy: boolean | null;
  flags: FaultSummary[];
  nonfinite_at: number | null;
  judged: number | null;
  judged_last: number | null;
  error: string | null;
  /** The summarised field (loss.value), and its last and lowest finite values. */
  of: string;
  final: number | null;
  best: number | null;
  forwards: number;
  broke: number;
  writers: number;
  first_written_us: number | null;
  last_written_us: number | null;
  took_us: number;
  mean_took_us: number;
  /** null: still being written, or cut off. */
  ended_ok: boolean | null;
  from: "summary" | "read" | "index" | "live";
  /** The run's recorded config (`runs/<run>/config.json`), when it has one. */
  config?: Record<string, unknown>;
}
/** Runs grouped by the value of one recorded config field (`compare({groupBy})`'s row). */
export interface GroupSummary {
  field: string;
  /** The value as text; null for the runs that record none. */
  value: string | null;
  runs: string[];
  healthy: number;
  sick: number;
  unjudged: number;
  final_mean: number | null;
  final_min: number | null;
  final_max: number | null;
  best: number | null;
}
export interface ForwardRow {
  forward: number;
  writer: string;
  written_us: number;
  took_us: number;
  broke: boolean;
  error?: string;
  [field: string]: string | number | boolean | undefined;
}
export interface NodeRow {
  node: string;
  kind: string;
  where: string;
  ran: number;
  read_back: number;
  failed: number;
  total_us: number;
  mean_us: number;
}
export interface FleetRow {
  machine: string;
  nodes: string[];
  ran: number;
  read_back: number;
  working_us: number;
  calls: number;
  round_trip_us: number | null;
  waiting_us: number | null;
  busy: number | null;
  memory: number | null;
  cores: number | null;
  up_us: number | null;
  served: number | null;
  reading_written_us: number | null;
}
export interface StandingRow {
  machine: string;
  run: string;
  writer: string;
  written_us: number;
  busy: number | null;
  memory: number | null;
  cores: number | null;
  up_us: number | null;
  served: number | null;
  quiet_s: number;
}
/** A Plotly figure (`Plotly.react(div, figure.data, figure.layout)`), with the skips behind it. */
export interface Figure {
  data: object[];
  layout: object;
  skipped: Skip[];
}

/** One flag at one node over the forwards judged: when it held, how sure, on what numbers. */
export interface Finding {
  node: string;
  flag: string;
  since: number;
  until: number;
  /** Forwards it held on. */
  held: number;
  /** Of the last window's forwards (that measured what decides it), on how many it held. */
  window: { held: number; of: number };
  /** The metrics its rule reads, at `until` (null for NaN). */
  evidence: Record<string, number | null>;
}
/** A diagnosis written out with the bounds it was taken at, judged over time. */
export interface Diagnosis {
  run: string;
  forwards: { count: number; first: number | null; last: number | null };
  /** {where: [flag, …]}: the root of each fault; a node with nothing wrong is absent. */
  diagnosis: Record<string, string[]>;
  /** One per fault, the first NaN/Inf first: the root finding and what it explains. */
  faults: Array<Finding & { folded: Finding[] }>;
  /** Flags that held only at the start of training and went away. */
  transients: Finding[];
  /** Flags that held persistently earlier and went away. */
  passed: Finding[];
  /** The forwards judged: those before the first non-finite one. */
  judged: { count: number; first: number | null; last: number | null };
  /** The first forward where a number stopped being one, or null. */
  nonfinite_at: number | null;
  thresholds: Record<string, number>;
}
/** One fault, where it starts, since when, how sure, what it explains, and what to do. */
export interface Alert {
  node: string;
  flag: string;
  first_forward: number;
  until: number;
  held: number;
  /** [held on, of the last window's forwards]. */
  window: [number, number];
  evidence: Record<string, number | null>;
  /** What it explains, folded under it: "FLAG at node (since forward)". */
  folded: string[];
  means: string;
  advice: string;
}
/** The node a key belongs to (`net.2.attn` → `net.2` when `net.2` is one of `nodes`; with no
 * nodes, the key's first dotted segment: the seed's one-argument `within(where)`). */
export function within(key: string, nodes?: string[]): string;

/** The stable `code` of a SomatizeError (pkg/README.md says when each is thrown). */
export type ErrorCode =
  | "UNKNOWN_OPTION"
  | "BAD_OPTION"
  | "NO_SUCH_RUN"
  | "NO_SUCH_FORWARD"
  | "NO_SUCH_FUNCTION"
  | "NOT_A_STORE"
  | "NEWER_FORMAT"
  | "CORRUPT_BLOB"
  | "BAD_ZIP"
  | "BAD_INDEX_LINE"
  | "BAD_NAME"
  | "NOT_FOUND"
  | "IO"
  | "BAD_GRAPH"
  | "NO_FORWARDS"
  | "REFUSED"
  | "WRITER_BUSY"
  | "BAD_TENSOR_FILE"
  | "BAD_STEP"
  | "BAD_SUMMARY";

/** An error a program can branch on: `code` says what went wrong; `file` (a path in the store),
 * `run` and `forward` say what it concerns, when known. Thrown (or rejected with) by the store
 * functions, openStore, observeTensors, observeFile and generate where the core knows the cause;
 * other errors are plain Errors told by their message. */
export class SomatizeError extends Error {
  constructor(code: ErrorCode, message: string, details?: { file?: string; run?: string; forward?: number });
  readonly name: "SomatizeError";
  readonly code: ErrorCode;
  readonly file?: string;
  readonly run?: string;
  readonly forward?: number;
}

// ---- the seeds' functions over a store (seed 003: "functions and not a type") ----
/** Rows as the seed gives them, with what was skipped to give them (not enumerable). */
export type Rows<T> = T & { readonly skipped: Skip[] };
type JudgeOptions = { run: string; thresholds?: Record<string, number> | Thresholds; last?: number };
export function runs(store: Store): Promise<Rows<RunRow[]>>;
export function forwards(store: Store, options: { run: string }): Promise<Rows<ForwardRow[]>>;
export function curve(store: Store, options: { run: string; of?: string }): Promise<Rows<[number, number][]>>;
export function curveCosts(store: Store, options: { run: string; of?: string }): Promise<"scan" | "fetch">;
export function facts(store: Store, options: { run: string; forward: number }): Promise<Fact[] | null>;
export function nodes(store: Store, options: { run: string; last?: number }): Promise<Rows<NodeRow[]>>;
export function fleet(store: Store, options: { run: string; last?: number }): Promise<Rows<FleetRow[]>>;
export function standing(store: Store): Promise<Record<string, StandingRow>>;
export function query(store: Store, options: { run: string; id: string; step: number }): Promise<Value>;
export function progress(store: Store, options: { run: string; smooth?: number; of?: string }): Promise<Figure>;
export function spent(store: Store, options: { run: string; last?: number }): Promise<Figure>;
export function gantt(store: Store, options: { run: string; forward?: number }): Promise<Figure>;
export function machines(store: Store, options: { run: string; last?: number }): Promise<Figure>;
export function seen(store: Store, options: { run: string; last?: number }): Promise<Record<string, { kind: string; [metric: string]: number | string | null }>>;
export function diagnose(store: Store, options: JudgeOptions): Promise<Map<string, string[]>>;
export function history(store: Store, options: { run: string; node: string; of?: string; last?: number }): Promise<[number, number][]>;
export function where(store: Store, options: JudgeOptions): Promise<Map<string, string[]>>;
export function alerts(store: Store, options: JudgeOptions): Promise<Alert[]>;
export function profile(store: Store, options: JudgeOptions & { of?: string }): Promise<Figure>;
export function flags(store: Store, options: JudgeOptions): Promise<Figure>;
export function overlaid(store: Store, options: JudgeOptions): Promise<Figure>;

/** A run drawn while it happens (the seed's Live): one compact row per forward, the figure
 * `progress` draws. `packed` rows are four numbers each: forward, value, took_us, flags (1: has a
 * value, 2: broke); `errors` maps a packed row's index to its error text. */
export class Live {
  constructor(options?: { title?: string; smooth?: number; of?: string; cap?: number });
  push(row: { forward: number; value?: number | null; took_us?: number; broke?: boolean; error?: string | null }): void;
  pushRows(packed: Float64Array, errors?: Record<number, string> | null): number;
  entry(line: IndexRow): void;
  fact(forward: number, fact: Fact): void;
  figure(): { data: unknown[]; layout: Record<string, unknown> };
  seen(): { forwards: number; stride: number; held: number };
  free(): void;
}
