// Entry for browsers (and bundlers): fetch and instantiate the wasm beside this file, then export the API.
import init from "./wasm/somatize.js";

await init({ module_or_path: new URL("./wasm/somatize_bg.wasm", import.meta.url) });

export * from "./api.js";
