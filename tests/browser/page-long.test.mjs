// Browser layer, a long run (written by the real writer: examples/page_bench_store.rs, 5,200
// forwards): the page offers its last 1,000 forwards and judges its last 1,000 unless asked,
// saying so; the verdict is `somatize diagnose --last 1000`'s, and a window chosen by hand is
// kept, as `somatize diagnose --last N` judges it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { serve, launch, openPage, shots } from "./harness.mjs";
import { cli, root } from "../node/store-fixture.mjs";

const FORWARDS = 5200;
const rel = "target/js-stores/long/store";
let server, origin, browser;

before(async () => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  execFileSync("cargo", ["run", "--quiet", "--example", "page_bench_store", "--", join(root, rel), String(FORWARDS)],
    { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const diagnosis = (...more) => JSON.parse(execFileSync(cli, ["diagnose", join(root, rel), "--run", "long", "--with-bounds", ...more],
  { encoding: "utf8" }));

/** The flags table as [node, flag]. */
const flagsShown = (page) => page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
  .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
const rows = (d) => Object.entries(d.diagnosis).flatMap(([n, fs]) => fs.map((f) => [n, f]));

test("a long run is offered and judged over its last 1,000 forwards unless asked, as the CLI judges them", async () => {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(`/${rel}/`)}`);
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Showing run long"), null, { timeout: 300_000 });
  assert.equal(await page.textContent("#error"), "");
  assert.equal(await page.inputValue("#last"), "1000");
  assert.match(await page.textContent("#last-note"), /has 5,200 forwards: its health is judged over the last 1,000/);
  const offered = await page.locator("#forward option").allTextContents();
  assert.deepEqual(offered, Array.from({ length: 1000 }, (_, i) => String(FORWARDS - 1000 + i)));
  assert.match(await page.textContent("#forward-note"), /the last 1,000 of 5,200/);
  const last = diagnosis("--last", "1000");
  assert.match(await page.textContent("#verdict-summary"), new RegExp(`Judged over 1000 forwards \\(${last.forwards.first}–${last.forwards.last}\\)`));
  assert.deepEqual(await flagsShown(page), rows(last));
  await page.locator("#store-view").screenshot({ path: join(shots, "store-long.png") });

  // A window chosen by hand is kept, and the note goes.
  await page.fill("#last", "10");
  await page.dispatchEvent("#last", "change");
  await page.waitForFunction(() => document.querySelector("#verdict-summary")?.textContent.includes("Judged over 10 forwards"), null, { timeout: 300_000 });
  assert.deepEqual(await flagsShown(page), rows(diagnosis("--last", "10")));
  assert.equal(await page.textContent("#last-note"), "");
  assert.equal(await page.inputValue("#last"), "10");
  assert.deepEqual(seen.errors, []);
  await page.close();
});
