// Stores for the Node and browser layers, written by the native CLI (`somatize record` of
// examples/train_numpy.py, `somatize export`) under target/js-stores/ (served by the browser harness).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../", import.meta.url));
export const cli = join(root, "target/debug/somatize");
/** ../shared/fixtures beside the repo (SOMATIZE_SHARED names another shared folder, e.g. from a worktree). */
export const fixtures = join(process.env.SOMATIZE_SHARED ?? join(root, "../shared"), "fixtures");

function record(store, run, writer, steps) {
  execFileSync(
    cli,
    ["record", "--store", store, "--run", run, "--writer", writer, "--",
      "python3", join(root, "examples/train_numpy.py"), "--steps", String(steps)],
    { cwd: root, stdio: ["ignore", "ignore", "pipe"] },
  );
}

/** The demo store's seven runs (`somatize demo`, 100 steps, every 5th whole) written afresh for
 * one test file under target/js-stores/<name>/demo (`name` keeps test files apart); returns
 * `{dir, demo}`: the folder (absolute) and the store in it. */
export function demoStore(name) {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  const dir = join(root, "target/js-stores", name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const demo = join(dir, "demo");
  execFileSync(cli, ["demo", "--store", demo, "--steps", "100", "--every", "5"], { stdio: ["ignore", "ignore", "pipe"] });
  return { dir, demo };
}

/** Write the stores of one test file: `name` keeps layers apart. Returns their paths (absolute)
 * and their paths under the repo root (for URLs). */
export function makeStores(name) {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  const rel = `target/js-stores/${name}`;
  const dir = join(root, rel);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const store = join(dir, "store");
  record(store, "mlp", "w0", 12);
  record(store, "mlp", "w1", 8);
  record(store, "small", "w0", 3);
  const snapshot = join(dir, "snap.zip");
  execFileSync(cli, ["export", store, "-o", snapshot], { stdio: ["ignore", "ignore", "pipe"] });

  const newer = join(dir, "newer");
  mkdirSync(newer);
  writeFileSync(join(newer, "somatize-store.json"), '{"format":"somatize-store","version":"3.0"}');
  writeFileSync(join(newer, "listing.jsonl"), "");

  // A copy whose blob of forward 5 of writer w0 has one byte flipped (same length, bad CRC).
  const corrupt = join(dir, "corrupt");
  cpSync(store, corrupt, { recursive: true });
  const { path, offset, len } = blobOf(corrupt, "mlp", "w0", 5);
  const bytes = readFileSync(path);
  bytes[offset + (len >> 1)] ^= 0xff;
  writeFileSync(path, bytes);

  const empty = join(dir, "empty");
  mkdirSync(empty);
  return {
    dir, store, snapshot, newer, corrupt, empty,
    url: (p) => `/${rel}/${p}`,
  };
}

/** Where forward `forward` of `run`/`writer` keeps its blob, from its index line: the file
 * (a pack, or a blob file of its own when the line has no offset), the offset and the length. */
export function blobOf(store, run, writer, forward) {
  const dir = join(store, "runs", run, writer);
  const row = readFileSync(join(dir, "index.jsonl"), "utf8").split("\n").filter(Boolean)
    .map((l) => JSON.parse(l)).find((r) => r.forward === forward);
  return { path: join(dir, row.blob), offset: row.offset ?? 0, len: row.len };
}

/** The index rows of a run as an independent reader sees them: every writer's index.jsonl
 * parsed line by line, merged in order of (forward, writer); files beside them (graph.json) are no writers. */
export function indexRows(store, run) {
  const rows = [];
  const folders = readdirSync(join(store, "runs", run), { withFileTypes: true }).filter((e) => e.isDirectory());
  for (const writer of folders.map((e) => e.name).sort()) {
    const text = readFileSync(join(store, "runs", run, writer, "index.jsonl"), "utf8");
    for (const line of text.split("\n").filter(Boolean)) rows.push({ writer, ...JSON.parse(line) });
  }
  return rows.sort((a, b) => a.forward - b.forward || (a.writer < b.writer ? -1 : a.writer > b.writer ? 1 : 0));
}

export { answers } from "./store-answers.mjs";
