// Browser layer, a store on object storage in the page without credentials: recorded to moto's
// S3 server (127.0.0.1), shared with `somatize share --put`, opened as `?store=<link>` across
// origins (plain Range requests; moto answers CORS as a bucket rule would). The runs table, the
// verdict and the progress figure are what the package reads through the same link in Node.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { openStore } from "somatize";
import { servedBrowser, openPage, shots, drawAll } from "./harness.mjs";
import { cli, root } from "../node/store-fixture.mjs";
import { startMoto } from "../node/moto.mjs";

let moto, origin, browser, close, link, node;

before(async () => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  moto = await startMoto("somatize-page");
  const store = moto.url("shared");
  for (const [run, steps] of [["first", 6], ["second", 10]]) {
    execFileSync(cli, ["record", "--store", store, "--run", run, "--",
      "python3", join(root, "examples/train_numpy.py"), "--steps", String(steps)],
    { cwd: root, env: moto.env, stdio: ["ignore", "ignore", "pipe"] });
  }
  link = execFileSync(cli, ["share", store, "--put"], { env: moto.env, encoding: "utf8" }).trim();
  node = await openStore(link);
  ({ origin, browser, close } = await servedBrowser());
});
after(async () => {
  await node?.close();
  await close?.();
  moto?.stop();
});

test("the page opens a shared store from its link and shows what the package reads", async () => {
  assert.notEqual(new URL(link).origin, origin, "the bucket is another origin than the page");
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(link)}`);
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForFunction(() => document.querySelector("#error").textContent ||
    ["true", "waiting"].includes(document.querySelector("#fig-progress")?.dataset.drawn));
  assert.equal(await page.textContent("#error"), "");
  await drawAll(page);
  const runs = (await node.runs()).rows;
  const shown = await page.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.dataset.run ?? tr.children[0].textContent));
  assert.deepEqual([...shown].map((r) => r.trim()).sort(), runs.map((r) => r.run).sort());
  const run = await page.inputValue("#run");
  assert.equal(run, "second", "the latest written run first");
  const want = (await node.figure({ kind: "progress", run, of: "loss.value", smooth: 0 })).data.map((t) => ({ x: t.x, y: t.y }));
  const drawn = await page.evaluate(() => document.getElementById("fig-progress").data.map((t) => ({ x: t.x, y: t.y })));
  assert.deepEqual(drawn, want);
  const flags = Object.fromEntries(await node.diagnose({ run }));
  const table = await page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")].map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
  assert.deepEqual(table, Object.entries(flags).flatMap(([n, fs]) => fs.map((f) => [n, f])));
  const title = await page.textContent("#store-title");
  assert.ok(title.endsWith(new URL(link).pathname) && !title.includes("Signature"), `named without the signature: ${title}`);
  assert.deepEqual(seen.errors, []);
  await page.screenshot({ path: join(shots, "page-share.png") });
});

test("a share link over plain http off this machine is refused and never asked", async () => {
  const foreign = "http://example.com/shares/s.json";
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(foreign)}`);
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForFunction(() => document.querySelector("#error").textContent !== "");
  assert.match(await page.textContent("#error"), /^http:\/\/example\.com\/shares\/s\.json: only stores on this page's own site .* or a store shared from object storage/);
  assert.deepEqual(seen.requests.filter((u) => new URL(u).origin !== origin), [], "nothing asked of another origin");
});
