// Type-checks the browser entry's declarations (pkg/browser.d.ts over pkg/index.d.ts, what a bundler's
// project resolves) against the way the README uses them; compiled with --noEmit only.
import { openStore, background, specId, tensorStats, stepStats, summaryStats, setHelpers, helperCounts, SomatizeError, type Store, type IndexRow, type Fetched } from "somatize";
// @ts-expect-error: folderSource is the Node entry's
import { folderSource } from "somatize";

async function main(path: string, bytes: Uint8Array): Promise<void> {
  const store: Store = await openStore(path, { name: "example" });
  const runs: string[] = await store.listRuns();
  const writers: string[] = await store.writers({ run: runs[0] });
  const { rows, bad }: { rows: IndexRow[]; bad: string[] } = await store.scan({ run: runs[0], last: 3 });
  const loss = rows[0]?.fields?.["loss.value"];
  const f: Fetched = await store.fetch({ run: runs[0], forward: rows[0].forward, writer: writers[0] });
  const nodes: string[] = f.facts.map((x) => x.node);
  const stats = await background.tensorStats(bytes, "model.safetensors");
  const mean: number | undefined = stats["param.w"]?.mean;
  const sync = tensorStats(bytes, "x.npy");
  const measured: number | undefined = stepStats(null, bytes, bytes)["fc1"]?.["update_ratio"];
  // @ts-expect-error: a path is what the Node entry takes, not the browser's
  stepStats(null, "step_1.npz");
  const fromSummary: number | undefined = summaryStats(null, { outputs: [] }, new Float64Array(0))["fc1"]?.["units"];
  const helpersBefore: number = setHelpers(0);
  const { blocks }: { blocks: number } = helperCounts();
  const { bytes: read } = await store.stats();
  await store.refresh();
  await store.close();
  console.log(writers, bad, loss, nodes, mean, sync, measured, read, helpersBefore, blocks, specId({ source: "param", selector: "w", reduction: "l2" }));
  const dropped: Store = await openStore(new Blob(["PK"]));
  await dropped.runs().catch((e: unknown) => e instanceof SomatizeError && e.code === "NO_SUCH_RUN");
  void folderSource;
  // @ts-expect-error: options are one object, not a string
  await store.writers("mlp");
}
void main;
