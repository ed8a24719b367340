// Node layer: errors a program can branch on. What the core knows the cause of is a
// SomatizeError with a stable code (src/wasm/errors.rs maps the core's error variants) and the
// file, run and forward it concerns, the same whether the store lives in the worker thread or
// on this thread, and from the functions that run here (observeTensors, the seeds' functions).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openStore, folderSource, observeTensors, runs, diagnose, nodes, SomatizeError } from "somatize";
import { makeStores, blobOf } from "./store-fixture.mjs";

let s;
before(() => {
  s = makeStores("errors");
});

/** Assert that `p` rejects with a SomatizeError with these properties. */
async function rejectsWith(p, want) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof SomatizeError, `not a SomatizeError: ${e?.stack ?? e}`);
    assert.ok(e instanceof Error);
    assert.equal(e.name, "SomatizeError");
    for (const [k, v] of Object.entries(want)) {
      if (v instanceof RegExp) assert.match(String(e[k]), v, k);
      else assert.equal(e[k], v, `${k} of ${e.message}`);
    }
    return true;
  });
}

test("opening: NOT_A_STORE and NEWER_FORMAT, naming the file", async () => {
  await rejectsWith(openStore(s.empty), { code: "NOT_A_STORE", message: /not a somatize store/, file: /somatize-store\.json/ });
  await rejectsWith(openStore(s.newer), { code: "NEWER_FORMAT", message: /newer than this reader knows/, file: "somatize-store.json" });
  await rejectsWith(openStore(folderSource(s.newer)), { code: "NEWER_FORMAT" });
});

for (const [where, open] of [["in the worker thread", (p) => openStore(p)], ["on this thread", (p) => openStore(folderSource(p))]]) {
  test(`store calls ${where}: NO_SUCH_RUN, NO_SUCH_FORWARD, CORRUPT_BLOB, options, functions`, async () => {
    const store = await open(s.store);
    await rejectsWith(diagnose(store, { run: "nosuch" }), { code: "NO_SUCH_RUN", run: "nosuch", message: /the store holds no run "nosuch"/ });
    await rejectsWith(store.forwards({ run: "nosuch" }), { code: "NO_SUCH_RUN", run: "nosuch" });
    await rejectsWith(store.fetch({ run: "mlp", forward: 999 }), { code: "NO_SUCH_FORWARD" });
    await rejectsWith(store.curve({ run: "mlp", colour: 1 }), { code: "UNKNOWN_OPTION", message: /colour/ });
    await rejectsWith(store.facts({ run: "mlp" }), { code: "BAD_OPTION" });
    await rejectsWith(store.call("nope"), { code: "NO_SUCH_FUNCTION" });
    await store.close();

    const corrupt = await open(s.corrupt);
    const { path } = blobOf(s.corrupt, "mlp", "w0", 5);
    const file = path.slice(join(s.corrupt, "/").length);
    await rejectsWith(corrupt.fetch({ run: "mlp", forward: 5, writer: "w0" }), { code: "CORRUPT_BLOB", run: "mlp", forward: 5, file, message: /corrupt/ });
    await rejectsWith(corrupt.facts({ run: "mlp", forward: 5 }), { code: "CORRUPT_BLOB", run: "mlp", forward: 5 });
    await corrupt.close();
  });
}

test("functions on this thread: observeTensors and the seeds' functions throw SomatizeErrors too (a TypeError for a non-store)", async () => {
  const t = { key: "param.w", shape: [2], values: new Float32Array([1, 2]) };
  const spec = { source: "param", selector: "w", reduction: "l2" };
  assert.throws(() => observeTensors([{ ...t, colour: "red" }], [spec]), (e) => e instanceof SomatizeError && e.code === "UNKNOWN_OPTION");
  // Not a store at all: an argument of the wrong type, a TypeError with the code.
  await assert.rejects(runs("x"), (e) => e instanceof TypeError && e.code === "NOT_A_STORE");
  const store0 = await openStore(s.store);
  await rejectsWith(runs(store0, {}), { code: "UNKNOWN_OPTION" });
  await store0.close();
  const store = await openStore(s.store);
  await rejectsWith(nodes(store, { run: "mlp", of: "x" }), { code: "UNKNOWN_OPTION" });
  await store.close();
});

test("a SomatizeError made by a program is one too", () => {
  const e = new SomatizeError("NO_SUCH_RUN", "gone", { run: "r", forward: 3 });
  assert.ok(e instanceof Error);
  assert.deepEqual([e.name, e.code, e.message, e.run, e.forward, e.file], ["SomatizeError", "NO_SUCH_RUN", "gone", "r", 3, undefined]);
});
