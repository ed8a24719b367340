// Time tensorStats (the wasm build) on one file in Node, medians of runs: reading the file and
// computing (the headline, as a user would), and each part alone (reading the file into a
// Buffer; tensorStats over bytes already in memory). Prints "total read stats" in seconds.
// Usage: node scripts/bench-tensor-node.mjs PKG_DIR FILE [RUNS]  (PKG_DIR: wasm-bindgen --target nodejs output)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [pkg, file, runs = "5"] = process.argv.slice(2);
const somatize = require(`${pkg}/somatize.js`);

function median(f) {
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    const start = process.hrtime.bigint();
    f();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const total = median(() => somatize.tensorStats(readFileSync(file), file));
const read = median(() => readFileSync(file));
const bytes = readFileSync(file);
const stats = median(() => somatize.tensorStats(bytes, file));
console.log([total, read, stats].map((t) => t.toFixed(3)).join(" "));
