// Sources that read straight into wasm memory (readRangeInto / readAtInto) give the same answers
// as those that return bytes, and a bad answer from one is an error, never a crash.
// The store is written here by hand in the documented format (docs/store-format.md).
import { test } from "node:test";
import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { openStore, folderSource, snapshotFile } from "../../pkg/node.js";
import { cli, root } from "./store-fixture.mjs";

/** A store of one run of `n` forwards (two writers' worth of lines would add nothing here). */
function writeStore(n) {
  const dir = mkdtempSync(join(tmpdir(), "somatize-into-"));
  const w = join(dir, "store/runs/r/w0");
  mkdirSync(join(w, "blobs"), { recursive: true });
  writeFileSync(join(dir, "store/somatize-store.json"), '{"format":"somatize-store","version":"1.1"}');
  const lines = [];
  for (let f = 0; f < n; f++) {
    const broke = f % 97 === 0;
    lines.push(`{"forward":${f},"written_us":${1764500000000000 + f * 1000},"took_us":${900 + (f % 7)},"broke":${broke}${broke ? ',"error":"nan loss"' : ""},"fields":{"loss.value":${broke ? '"NaN"' : 1 / (f + 1)},"acc.text":"é${f}"}}`);
  }
  writeFileSync(join(w, "index.jsonl"), lines.join("\n") + "\n");
  return join(dir, "store");
}

/** The answers compared: one scan each of runs, forwards and curve. */
async function answers(store) {
  const out = { runs: await store.runs(), forwards: await store.forwards({ run: "r" }), curve: await store.curve({ run: "r" }) };
  await store.close();
  return out;
}

/** A source without its …Into method: the core falls back to the one returning bytes. */
function without(source, name) {
  const copy = { ...source };
  delete copy[name];
  return copy;
}

test("a folder read into wasm memory answers as one read through readRange (index over several 1 MiB chunks)", async () => {
  const path = writeStore(30000); // about 3 MiB of index
  const into = folderSource(path);
  let calls = 0;
  const counting = { ...into, readRangeInto: (p, o, t) => (calls++, into.readRangeInto(p, o, t)) };
  const got = await answers(await openStore(counting));
  const want = await answers(await openStore(without(folderSource(path), "readRangeInto")));
  deepStrictEqual(got, want);
  ok(calls >= 3, `readRangeInto was called ${calls} times, wanted one per MiB of index at least`);
  deepStrictEqual(got.forwards.rows.length, 30000);
  deepStrictEqual(got.forwards.rows[1]["acc.text"], "é1");
});

test("a snapshot read into wasm memory answers as one read through readAt", async () => {
  const path = writeStore(5000);
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  const zip = `${path}.zip`;
  execFileSync(cli, ["export", path, "-o", zip], { stdio: "ignore" });
  const got = await answers(await openStore(snapshotFile(zip)));
  const bytes = new Uint8Array(readFileSync(zip));
  const want = await answers(await openStore({ size: bytes.length, readAt: (o, n) => bytes.subarray(o, o + n) }));
  deepStrictEqual(got, want);
});

test("a curve with non-finite values crosses to JS as the CLI prints it (NaN as text)", async () => {
  const path = writeStore(300);
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  const cliRows = JSON.parse(execFileSync(cli, ["curve", path, "--run", "r", "--json"], { encoding: "utf8" }));
  const store = await openStore(path);
  const { rows } = await store.curve({ run: "r" });
  await store.close();
  deepStrictEqual(rows, cliRows.rows ?? cliRows);
  deepStrictEqual(rows[0], [0, "NaN"]);
  deepStrictEqual(rows[1], [1, 0.5]);
});

test("a readRangeInto that answers no number, or throws, is an error naming the file", async () => {
  const path = writeStore(10);
  const src = folderSource(path);
  const bad = { ...src, readRangeInto: () => "lots" };
  await rejects(openStore(bad).then((s) => s.runs()), /index\.jsonl|somatize-store\.json/);
  const throwing = { ...src, readRangeInto: () => { throw new Error("disk on fire"); } };
  await rejects(openStore(throwing).then((s) => s.runs()), /disk on fire/);
});

test("a readAtInto that claims more bytes than its target holds is taken at the target's length", async () => {
  const path = writeStore(200);
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  execFileSync(cli, ["export", path, "-o", `${path}.zip`], { stdio: "ignore" });
  const bytes = new Uint8Array(readFileSync(`${path}.zip`));
  const boasting = {
    size: bytes.length,
    readAt: (o, n) => bytes.subarray(o, o + n),
    readAtInto(o, target) {
      target.set(bytes.subarray(o, o + target.length));
      return 1e9;
    },
  };
  const got = await answers(await openStore(boasting));
  const want = await answers(await openStore(without(boasting, "readAtInto")));
  deepStrictEqual(got, want);
  deepStrictEqual(got.forwards.rows.length, 200);
});
