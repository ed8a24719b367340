// Time tensorStats (the wasm build, through the package's Node entry) on one file, medians of
// runs: over the file's path (the headline, as a user would: read straight into wasm memory a
// chunk at a time), over readFileSync's Buffer (reading included), and over bytes already in
// memory. Prints "path read+bytes bytes" in seconds.
// Usage: node scripts/bench-tensor-node.mjs FILE [RUNS]  (after scripts/build-wasm.sh)
import { readFileSync } from "node:fs";
import { tensorStats } from "../pkg/node.js";

const [file, runs = "5"] = process.argv.slice(2);

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

const path = median(() => tensorStats(file));
const readBytes = median(() => tensorStats(readFileSync(file), file));
const bytes = readFileSync(file);
const inMemory = median(() => tensorStats(bytes, file));
console.log([path, readBytes, inMemory].map((t) => t.toFixed(3)).join(" "));
