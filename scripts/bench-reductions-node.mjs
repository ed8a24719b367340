// The wasm build in Node: eight statistics over one 256 MiB float32 tensor through
// observeTensors (values handed in from JS, as a user would), and a single l2; medians of
// runs, printed as JSON for scripts/bench-reductions.sh. Usage: node scripts/bench-reductions-node.mjs [RUNS]
import { observeTensors } from "../pkg/node.js";

const runs = Number(process.argv[2] ?? 5);
const n = 64 << 20;
const values = new Float32Array(n);
let s = 0x9e3779b9;
for (let i = 0; i < n; i++) {
  s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
  values[i] = i % 97 === 0 ? 0 : ((s >>> 0) / 2 ** 32) * 2 - 1;
}
const tensors = [{ key: "param.w", shape: [n], values }];
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

const eight_s = median(() => observeTensors(tensors, eight));
const l2_s = median(() => observeTensors(tensors, [spec("l2")]));
console.log(JSON.stringify({ bytes: n * 4, eight_s, l2_s }));
