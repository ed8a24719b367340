// A Node-only TypeScript project (no lib "dom", no @types/node, skipLibCheck false) using the
// Node entry's declarations (pkg/node.d.ts, picked by the package's "node" types condition);
// compiled with --noEmit only (tests/node/types.test.mjs).
import {
  openStore, folderSource, snapshotFile, tensorStats, stepStats, background, setHelpers, runs,
  diagnose, SomatizeError, type Store, type ErrorCode,
} from "somatize";

export async function main(path: string, bytes: Uint8Array): Promise<string[]> {
  const store: Store = await openStore(path, { name: "example" });
  const fromSource: Store = await openStore(folderSource(path));
  const snap = snapshotFile(`${path}.zip`);
  const fromZip: Store = await openStore(snap);
  const byUrl: Store = await openStore({ href: "http://127.0.0.1:8000/store/" });
  // @ts-expect-error: an ArrayBuffer is what the browser entry takes, not Node's
  await openStore(new ArrayBuffer(8));
  const perTensor = tensorStats(path);
  const fromBytes = tensorStats(bytes, "x.npy");
  const later = await background.tensorStats(bytes, "x.npy");
  const measured: number | undefined = stepStats('{"nodes": []}', `${path}/step_1.npz`, bytes)["fc1"]?.["grad_norm"];
  const dumped = stepStats({ nodes: [{ name: "fc1", kind: "Linear" }], apart: [["a", "b"]] }, bytes, null, { name: "step_1.npz" });
  setHelpers(2);
  try {
    await diagnose(store, { run: "nosuch" });
  } catch (e) {
    if (e instanceof SomatizeError) {
      const code: ErrorCode = e.code;
      const run: string | undefined = e.run;
      const forward: number | undefined = e.forward;
      return [code, run ?? "", String(forward), String(perTensor), String(fromBytes), String(later), String(measured), String(dumped)];
    }
  }
  const rows = await runs(store);
  await Promise.all([store, fromSource, fromZip, byUrl].map((s) => s.close()));
  snap.close();
  return rows.map((r) => r.run);
}
