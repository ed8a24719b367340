// Type declarations for the somatize package (hand-written; the wasm bindings are internal).

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
