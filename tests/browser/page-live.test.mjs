// Browser layer, live follow for real: a store is written into the origin-private file system
// (a real FileSystemDirectoryHandle), the page's "Open a folder…" is given that handle (headless
// Chromium shows no picker), and forwards the real writer wrote (`somatize record`) are then
// appended to it as the writer appends them — the blob, then its index line. The runs table and
// the progress show them without a reload, and end as the package says of the whole run.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { openStore } from "somatize";
import { filesUnder, serve, launch, pickerPage, shots, writeOpfs } from "./harness.mjs";
import { makeStores, cli, root } from "../node/store-fixture.mjs";

const RUN = "live";
const STEPS = 12;
const FIRST = 5; // forwards in the store when the page opens it

let server, origin, browser, s, full;

before(async () => {
  s = makeStores("live");
  // The whole run, as the writer left it: the page will see it grow to this.
  full = join(s.dir, "full");
  rmSync(full, { recursive: true, force: true });
  execFileSync(cli, ["record", "--store", full, "--run", RUN, "--writer", "w0", "--",
    "python3", join(root, "examples/train_numpy.py"), "--steps", String(STEPS)], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

/** The runs table's forwards of `run`, and the x values of the progress figure's first trace. */
const shown = (page, run) => page.evaluate((run) => {
  const table = document.querySelector("#runs-table");
  const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
  const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.children[cols.indexOf("run")].textContent === run);
  const fig = document.getElementById("fig-progress");
  return { forwards: Number(row?.children[cols.indexOf("forwards")].querySelector("data").value), x: [...(fig.data?.[0]?.x ?? [])] };
}, run);

test("a folder opened through the directory picker is followed: appended forwards appear without a reload", async () => {
  // The picker resolves to the OPFS folder: a real directory handle, as a person's choice gives.
  const { page, seen } = await pickerPage(browser, origin);

  // The store as it was after FIRST forwards: the index's first lines and the blobs they name.
  const lines = readFileSync(join(full, "runs", RUN, "w0", "index.jsonl"), "utf8").split("\n").filter(Boolean);
  assert.equal(lines.length, STEPS);
  const later = lines.slice(FIRST).map((l) => JSON.parse(l));
  const dir = `runs/${RUN}/w0`;
  // Format 2.0 appends every blob to the writer's pack: the pack as it was is its bytes up to the
  // end of the last blob already indexed, and each later forward appends its own range.
  const first = lines.slice(0, FIRST).map((l) => JSON.parse(l));
  const packOf = (e) => e.blob && e.offset !== undefined ? `${dir}/${e.blob}` : null;
  const packBytes = (path, from, to) => [...readFileSync(join(full, path)).subarray(from, to)];
  const laterBlobs = new Set(later.map((e) => e.blob && `${dir}/${e.blob}`).filter(Boolean));
  const url = (p) => `${origin}/${relative(root, join(full, p)).split("\\").join("/")}`;
  // Not yet written: the later blobs, and the exit record the writer leaves when the run ends.
  const exit = `${dir}/exit.json`;
  const start = filesUnder(full).filter((f) => !f.endsWith("writer.lock") && !f.endsWith("index.jsonl") &&
    !laterBlobs.has(f) && f !== exit && f !== "summaries.jsonl");
  // The summaries as they were: the line the writer appended when it opened; the summary it
  // appends when it finishes comes with the exit record.
  const summaries = readFileSync(join(full, "summaries.jsonl"), "utf8").split("\n").filter(Boolean);
  const bytesOf = (ls) => [...Buffer.from(ls.map((l) => l + "\n").join(""))];
  const opens = summaries.filter((l) => JSON.parse(l).open);
  const finals = summaries.filter((l) => !JSON.parse(l).open);
  const packed = new Map();
  for (const e of first) {
    const p = packOf(e);
    if (p) packed.set(p, Math.max(packed.get(p) ?? 0, e.offset + e.len));
  }
  const index = `${dir}/index.jsonl`;
  await writeOpfs(page, [
    ...start.map((f) => [f, url(f), false]),
    ...[...packed].map(([p, end]) => [p, packBytes(p, 0, end), false]),
    [index, [...Buffer.from(lines.slice(0, FIRST).join("\n") + "\n")], false],
    ["summaries.jsonl", bytesOf(opens), false],
  ]);

  await page.click("#pick-dir");
  // The progress is below the opened run's verdict: drawn once scrolled into view.
  await page.waitForSelector("#fig-progress[data-drawn=true], #fig-progress[data-drawn=waiting]");
  await page.locator("#fig-progress").scrollIntoViewIfNeeded();
  await page.waitForSelector("#fig-progress[data-drawn=true]");
  assert.equal(await page.textContent("#error"), "");
  assert.equal(await page.isChecked("#live"), true, "a folder opened by its handle is followed");
  const before = await shown(page, RUN);
  assert.equal(before.forwards, FIRST);
  assert.equal(before.x.length, FIRST);
  await page.locator("#store-view").screenshot({ path: join(shots, "store-live-before.png") });
  await page.locator("#fig-progress").scrollIntoViewIfNeeded(); // on screen: redrawn as the run grows

  // The writer goes on: each forward's blob, then its index line, one forward at a time.
  for (const e of later) {
    const p = packOf(e);
    const blobs = p ? [[p, packBytes(p, e.offset, e.offset + e.len), true]]
      : e.blob ? [[`${dir}/${e.blob}`, url(`${dir}/${e.blob}`), false]] : [];
    await writeOpfs(page, [...blobs, [index, [...Buffer.from(JSON.stringify(e) + "\n")], true]]);
  }
  await writeOpfs(page, [[exit, url(exit), false], ["summaries.jsonl", bytesOf(finals), true]]);
  await page.waitForFunction((n) => document.getElementById("fig-progress").data?.[0]?.x.length === n, STEPS, { timeout: 10_000 });
  const after = await shown(page, RUN);
  assert.equal(after.forwards, STEPS, "the runs table counts the new forwards");
  // What the page drew now is what the package says of the whole run as the writer left it.
  const whole = await openStore(full);
  try {
    const want = (await whole.figure({ kind: "progress", run: RUN, of: "loss.value", smooth: 0 })).data.map((t) => ({ x: t.x, y: t.y }));
    const got = await page.evaluate(() => document.getElementById("fig-progress").data.map((t) => ({ x: [...t.x], y: [...t.y] })));
    assert.deepEqual(got, want);
    const wholeRun = (await whole.runs()).rows.find((r) => r.run === RUN);
    assert.equal(wholeRun.forwards, STEPS);
    await page.waitForFunction((run) => {
      const table = document.querySelector("#runs-table");
      const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
      const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.children[cols.indexOf("run")].textContent === run);
      return row?.children[cols.indexOf("ended_ok")].textContent === "true";
    }, RUN, { timeout: 10_000 });
    // A forward written since opening is read in full: its gantt draws from its blob.
    await page.selectOption("#forward", String(STEPS - 1));
    await page.locator("#fig-gantt").scrollIntoViewIfNeeded(); // figures are drawn on screen
    await page.waitForFunction((f) => document.querySelector("#fig-gantt .gtitle")?.textContent.includes(String(f)), STEPS - 1);
    const gantt = (await whole.figure({ kind: "gantt", run: RUN, forward: STEPS - 1 })).data.map((t) => ({ x: t.x, y: t.y }));
    assert.deepEqual(await page.evaluate(() => document.getElementById("fig-gantt").data.map((t) => ({ x: [...t.x], y: [...t.y] }))), gantt);
  } finally {
    await whole.close();
  }
  assert.equal(await page.evaluate(() => location.href), `${origin}/www/index.html`, "never reloaded");
  await page.locator("#store-view").screenshot({ path: join(shots, "store-live-after.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});
