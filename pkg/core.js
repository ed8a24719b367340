// The wasm core's bindings (./wasm/, made by scripts/build-wasm.sh), imported so that a checkout
// without that build says how to make it instead of failing on a missing file. Every module of
// the package's main thread takes the core's functions from here.
let core;
try {
  core = await import("./wasm/somatize.js");
} catch (e) {
  if (e?.code !== "ERR_MODULE_NOT_FOUND" || !/wasm[\\/]somatize\.js/.test(String(e.message))) throw e;
  throw new Error(
    "somatize: the wasm core is not built (pkg/wasm/somatize.js is missing). In a checkout of the " +
      "repository, build it with scripts/build-wasm.sh (it needs the wasm32-unknown-unknown Rust " +
      "target and the wasm-bindgen CLI pinned in Cargo.toml); the package from npm has it built.",
    { cause: e },
  );
}

export const {
  default: init,
  initSync,
  StoreHandle,
  Live,
  about,
  delta,
  ema,
  generate,
  observeFile,
  observeTensors,
  rollingStd,
  slope,
  specCanonical,
  specId,
  statsOf,
  stepStats,
  summaryStats,
  tensorKeys,
  tensorStats,
  thresholdsAsDict,
  thresholdsDefault,
  useBlockHelpers,
  useErrorClass,
  useHostCrc32,
  verdict,
  verdictOver,
  version,
  within,
} = core;
