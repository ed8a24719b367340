// Time tensorStats (the wasm build) on one file in Node: read the file and compute, median of runs.
// Usage: node scripts/bench-tensor-node.mjs PKG_DIR FILE [RUNS]  (PKG_DIR: wasm-bindgen --target nodejs output)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [pkg, file, runs = "5"] = process.argv.slice(2);
const somatize = require(`${pkg}/somatize.js`);
const times = [];
for (let i = 0; i < Number(runs); i++) {
  const start = process.hrtime.bigint();
  somatize.tensorStats(readFileSync(file), file);
  times.push(Number(process.hrtime.bigint() - start) / 1e9);
}
times.sort((a, b) => a - b);
console.log(times[Math.floor(times.length / 2)].toFixed(3));
