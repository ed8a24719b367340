// Helpers for long tensors in Node: worker threads, each with its own instance of the wasm,
// taking blocks of a long float32 tensor from the back while observeTensors takes them from the
// front (the core's side is src/observe/ops/blocks.rs; each block's accumulator comes back as plain
// numbers and they are merged in block order, so the answer has the same bits as one thread).
//
// The calling thread never waits on the event loop: the workers and it share counters in a
// SharedArrayBuffer and the calling thread waits with Atomics.wait (allowed in Node's main
// thread). A tensor on a SharedArrayBuffer is read by the workers in place; any other is copied,
// a block at a time and just ahead of the workers, into a small shared ring of slots by the
// calling thread (so nothing the size of the tensor is allocated). A block a worker fails, or
// has not finished when the calling thread has waited about two blocks' time without progress,
// is done by the calling thread; a worker whose wasm failed is dropped from the pool.
import { Worker } from "node:worker_threads";
import { availableParallelism } from "node:os";
import { CONTROL } from "./helper-worker-node.js";
import { workerExecArgv } from "./sources-node.js";

const SLOTS_PER_HELPER = 4;
const FIELDS = { full: 13, light: 3 };

/** The helpers' default count: none, unless the SOMATIZE_HELPERS environment variable asks for
 * some: a number, or `auto` for one per core besides the calling thread, at most 7. (Off by
 * default: threads a library starts on its own compete with the program's.) */
export function defaultHelpers() {
  const set = process.env.SOMATIZE_HELPERS;
  if (set === "auto") return Math.max(0, Math.min(availableParallelism() - 1, 7));
  if (set !== undefined && /^\d+$/.test(set)) return Math.min(Number(set), 64);
  return 0;
}

export class HelperPool {
  /** `module`: the compiled wasm (WebAssembly.Module), instantiated again in each worker. */
  constructor(module, size = defaultHelpers()) {
    this.module = module;
    this.size = size;
    this.workers = [];
    this.ring = null;
    this.job = null;
    /** Workers whose wasm is ready (each adds one; shared, since this thread may not return to
     * its event loop between calls). */
    this.ready = new Int32Array(new SharedArrayBuffer(4));
    /** Tensors still to skip after helpers did not run beside this thread, and the next wait. */
    this.skip = 0;
    this.backoff = 0;
    /** Tensors offered to the helpers, blocks they did, and times they were found not to run
     * beside this thread (see judge). */
    this.counts = { tensors: 0, blocks: 0, skips: 0 };
    /** Values a tensor must have before the helpers are asked (natively: 2^22 a thread). */
    this.minLen = 1 << 23;
  }

  /** Use `n` helpers from the next tensor on (0: none). */
  resize(n) {
    if (!Number.isInteger(n) || n < 0) throw new Error(`helpers: ${n} is not a whole number >= 0`);
    this.size = n;
    for (const w of this.workers.splice(n)) w.terminate();
  }

  get slots() {
    return SLOTS_PER_HELPER * this.workers.length;
  }

  spawn() {
    while (this.workers.length < this.size) {
      const w = new Worker(new URL("./helper-worker-node.js", import.meta.url), { workerData: { somatizeHelper: this.module, ready: this.ready }, execArgv: workerExecArgv() });
      const drop = () => {
        const i = this.workers.indexOf(w);
        if (i >= 0) this.workers.splice(i, 1);
      };
      w.on("error", drop);
      w.on("exit", drop);
      w.on("message", (m) => m?.broken && (drop(), w.terminate()));
      w.unref(); // after the listeners, which would otherwise hold the process open
      this.workers.push(w);
    }
  }

  /** Offer the blocks of `values` (see BlockHelpers::start in src/observe/ops/blocks.rs). */
  start(values, light, blockLen, blocks) {
    if (this.job) {
      // A job the core never finished (it threw between start and finish): give it up.
      Atomics.store(this.job.control, CONTROL.cancel, 1);
      this.job = null;
    }
    if (this.size === 0) return false;
    this.spawn();
    if (this.workers.length === 0) return false;
    if (this.skip > 0) {
      this.skip -= 1;
      return false;
    }
    const fields = light ? FIELDS.light : FIELDS.full;
    const inPlace = values.buffer instanceof SharedArrayBuffer;
    const slots = inPlace ? 0 : this.slots;
    const control = new Int32Array(new SharedArrayBuffer(4 * (CONTROL.slots + slots + blocks)));
    const results = new Float64Array(new SharedArrayBuffer(8 * blocks * fields)).fill(NaN);
    const ring = inPlace ? null : this.ringOf(slots * blockLen);
    const total = values.length;
    this.job = { values, blockLen, blocks, total, control, results, ring, slots, fields, mine: 0, staged: 0, began: performance.now(),
      cpu: process.cpuUsage(), judged: Atomics.load(this.ready, 0) > 0 };
    const job = { control, results, values: inPlace ? values : null, ring, slots, light, fields, blockLen, blocks, total };
    for (const w of this.workers) w.postMessage(job);
    this.counts.tensors += 1;
    return true;
  }

  ringOf(length) {
    if (this.ring?.length !== length) this.ring = new Float32Array(new SharedArrayBuffer(4 * length));
    return this.ring;
  }

  /** Whether the calling thread takes the next block from the front. */
  claim() {
    const j = this.job;
    if (j.ring) this.stage(j, Math.min(Atomics.load(j.control, CONTROL.theirs) + j.slots, j.blocks - j.mine - 1));
    if (Atomics.add(j.control, CONTROL.taken, 1) >= j.blocks) return false;
    j.mine += 1;
    return true;
  }

  /** Copy the helpers' next blocks (from the back) into free slots of the ring, up to `upTo`. */
  stage(j, upTo) {
    const c = j.control;
    while (j.staged < upTo) {
      const s = j.staged;
      const slot = s % j.slots;
      if (Atomics.load(c, CONTROL.slots + slot) !== 0) return;
      const start = (j.blocks - 1 - s) * j.blockLen;
      const len = Math.min(j.blockLen, j.total - start);
      j.ring.set(j.values.subarray(start, start + len), slot * j.blockLen);
      Atomics.store(c, CONTROL.slots + slot, 1);
      j.staged = s + 1;
      Atomics.store(c, CONTROL.staged, j.staged);
      Atomics.notify(c, CONTROL.staged);
    }
  }

  /** Whether the helpers ran beside this thread: the process's CPU time over the wall time of
   * the tensor, which is about 1 + helpers when each had a core and about 1 when they only took
   * turns with this thread on a busy machine (then they cost more than they save: their blocks
   * are copied twice). If they did not (under 1 + helpers / 2), skip them for the next 4
   * tensors, then 8, … up to 64, and try again. A tensor taken while no worker was ready yet,
   * or in under 5 ms, is not judged. */
  judge(j) {
    const wall = performance.now() - j.began;
    if (!j.judged || wall < 5) return;
    const { user, system } = process.cpuUsage(j.cpu);
    const parallel = (user + system) / 1000 / wall;
    if (parallel >= 1 + this.workers.length / 2) {
      this.backoff = 0;
      return;
    }
    this.backoff = Math.min(Math.max(this.backoff * 2, 4), 64);
    this.skip = this.backoff;
    this.counts.skips += 1;
  }

  /** Wait for the helpers' blocks (`first` on, first = the blocks this thread took); their
   * accumulators in block order, NaN-led where a helper did not finish one. A helper that makes
   * no progress for about two blocks' time (the machine has put it aside) is not waited for:
   * the core does its blocks here, and whatever it writes later is ignored. */
  finish(first) {
    const j = this.job;
    this.job = null;
    const c = j.control;
    const need = j.blocks - j.mine;
    const grace = Math.max((2 * (performance.now() - j.began)) / Math.max(j.mine, 1), 2);
    let [seen, deadline] = [-1, 0];
    for (;;) {
      const progress = Atomics.load(c, CONTROL.progress);
      if (j.ring) this.stage(j, need);
      if (Atomics.load(c, CONTROL.done) >= need) break;
      const now = performance.now();
      if (progress !== seen) [seen, deadline] = [progress, now + grace];
      else if (now >= deadline) break;
      Atomics.wait(c, CONTROL.progress, progress, Math.max(deadline - now, 0.1));
    }
    Atomics.store(c, CONTROL.cancel, 1); // a helper waiting for a slot gives up
    Atomics.notify(c, CONTROL.staged);
    this.judge(j);
    const flags = CONTROL.slots + j.slots;
    const out = new Float64Array((j.blocks - first) * j.fields).fill(NaN);
    for (let b = first; b < j.blocks; b++) {
      if (Atomics.load(c, flags + b) !== 1) continue;
      out.set(j.results.subarray(b * j.fields, (b + 1) * j.fields), (b - first) * j.fields);
      this.counts.blocks += 1;
    }
    return out;
  }
}
