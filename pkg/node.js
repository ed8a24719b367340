// Entry for Node >= 20: load the wasm from the package folder synchronously, then export the API.
import { readFileSync } from "node:fs";
import { initSync } from "./wasm/somatize.js";

initSync({ module: readFileSync(new URL("./wasm/somatize_bg.wasm", import.meta.url)) });

export * from "./api.js";
