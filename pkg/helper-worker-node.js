// A helper thread of helpers-node.js: its own instance of the wasm, taking blocks of a long
// tensor from the back and writing each block's accumulator into the shared results.
import { isMainThread, parentPort, workerData } from "node:worker_threads";

/** The shared counters (Int32 indices), then one flag per ring slot (1 while it holds a block),
 * then one per block (1 once its accumulator is in the results). */
export const CONTROL = { taken: 0, theirs: 1, staged: 2, done: 3, progress: 4, cancel: 5, slots: 6 };

if (!isMainThread && workerData?.somatizeHelper) {
  const { initSync, accumulateBlock } = await import("./wasm/somatize.js");
  initSync({ module: workerData.somatizeHelper });
  Atomics.add(workerData.ready, 0, 1);
  parentPort.on("message", (job) => {
    if (!help(job, accumulateBlock)) parentPort.postMessage({ broken: true });
  });
}

/** Take blocks until none is left; false when the wasm failed (its instance is then unusable). */
function help(job, accumulateBlock) {
  const c = job.control;
  let ok = true;
  while (ok && !Atomics.load(c, CONTROL.cancel) && Atomics.add(c, CONTROL.taken, 1) < job.blocks) {
    const s = Atomics.add(c, CONTROL.theirs, 1);
    const b = job.blocks - 1 - s;
    const start = b * job.blockLen;
    const len = Math.min(job.blockLen, job.total - start);
    const slot = job.ring ? s % job.slots : -1;
    if (slot >= 0 && !staged(c, s)) return true;
    try {
      const values = slot >= 0 ? job.ring.subarray(slot * job.blockLen, slot * job.blockLen + len) : job.values.subarray(start, start + len);
      job.results.set(accumulateBlock(values, job.light), b * job.fields);
      Atomics.store(c, CONTROL.slots + job.slots + b, 1); // after the numbers: the block is done
    } catch {
      ok = false; // the block stays NaN-led: the calling thread does it
    }
    if (slot >= 0) Atomics.store(c, CONTROL.slots + slot, 0);
    Atomics.add(c, CONTROL.done, 1);
    Atomics.add(c, CONTROL.progress, 1);
    Atomics.notify(c, CONTROL.progress);
  }
  return ok;
}

/** Wait until the calling thread has put helper block `s` in its slot; false if cancelled. */
function staged(c, s) {
  for (;;) {
    const n = Atomics.load(c, CONTROL.staged);
    if (n > s) return true;
    if (Atomics.load(c, CONTROL.cancel)) return false;
    Atomics.wait(c, CONTROL.staged, n, 1000);
  }
}
