// The public API: the wasm core's exports, camelCase, taking plain objects and typed arrays.
// The entry (node.js or browser.js) has initialised the wasm before any of these can be called.
export {
  version,
  specId,
  specCanonical,
  statsOf,
  generate,
  observeTensors,
  observeFile,
  delta,
  ema,
  slope,
  rollingStd,
  about,
  thresholdsDefault,
  verdict,
  verdictOver,
  within,
  tensorStats,
  tensorKeys,
  stepStats,
  summaryStats,
  thresholdsAsDict,
  Live,
} from "./core.js";
// The seeds' functions over a store (runs(store), diagnose(store, {run}), …) and Thresholds.
export * from "./seeds.js";
// The error a program can branch on by its `code`.
export { SomatizeError } from "./errors.js";
