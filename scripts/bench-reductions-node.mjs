// The wasm build in Node: eight statistics over one 256 MiB float32 tensor through
// observeTensors (values handed in from JS, as a user would), with the package's helper threads
// (one per core besides this one, at most 7: SOMATIZE_HELPERS=auto; they are off by default),
// without them (setHelpers(0)), and over a
// Float32Array on a SharedArrayBuffer (which the helpers read in place); and a single l2.
// Medians of runs, after one call that starts the helpers, printed as JSON for
// scripts/bench-reductions.sh. Usage: node scripts/bench-reductions-node.mjs [RUNS]
import { availableParallelism } from "node:os";
import { observeTensors, setHelpers, helperCounts } from "../pkg/node.js";

const runs = Number(process.argv[2] ?? 5);
const n = 64 << 20;
const values = new Float32Array(n);
let s = 0x9e3779b9;
for (let i = 0; i < n; i++) {
  s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
  values[i] = i % 97 === 0 ? 0 : ((s >>> 0) / 2 ** 32) * 2 - 1;
}
const shared = new Float32Array(new SharedArrayBuffer(n * 4));
shared.set(values);
const tensors = (v) => [{ key: "param.w", shape: [n], values: v }];
const spec = (reduction) => ({ source: "param", selector: "w", reduction });
const eight = ["mean", "std", "min", "max", "l1", "l2", "absmax", "zero_fraction"].map(spec);

function median(f) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    f();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

const helpers = Math.max(0, Math.min(availableParallelism() - 1, 7));
setHelpers(0);
const eight_1t_s = median(() => observeTensors(tensors(values), eight));
const l2_1t_s = median(() => observeTensors(tensors(values), [spec("l2")]));
setHelpers(helpers);
const first = JSON.stringify(observeTensors(tensors(values), eight).values); // starts the helpers
await new Promise((resolve) => setTimeout(resolve, 200)); // their start-up is not timed
const eight_s = median(() => observeTensors(tensors(values), eight));
const eight_shared_s = median(() => observeTensors(tensors(shared), eight));
const l2_s = median(() => observeTensors(tensors(values), [spec("l2")]));
const same = JSON.stringify(observeTensors(tensors(shared), eight).values) === first;
if (!same) throw new Error("the helpers changed the answer");
const counts = helperCounts();
console.log(JSON.stringify({ bytes: n * 4, helpers, eight_s, eight_1t_s, eight_shared_s, l2_s, l2_1t_s,
  tensors: counts.tensors, blocks: counts.blocks, skips: counts.skips }));
