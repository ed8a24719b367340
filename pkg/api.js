// The public API: thin camelCase wrappers over the wasm core. The entry (node.js or
// browser.js) has initialised the wasm before any of these can be called.
import * as core from "./wasm/somatize.js";

/** The version of the core this package was built from. */
export function version() {
  return core.version();
}

/** The stable 16-hex-char id of an observable spec (a plain object). Throws on a bad spec. */
export function specId(spec) {
  return core.specId(spec);
}

/** The canonical serialisation of a spec: the exact text its id is the SHA-256 of. */
export function specCanonical(spec) {
  return core.specCanonical(spec);
}

/** One-pass statistics (count, nonfinite, nan, l2, l1, mean, std, min, max, absmax, zero_fraction). */
export function statsOf(values) {
  return core.statsOf(values);
}
