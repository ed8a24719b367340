// Browser layer, the page's store view: folders, snapshots and URLs go through the store adapter;
// without store support the page says so, a foreign URL is refused without asking it, and
// nothing crashes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { serve, launch, openPage, shots } from "./harness.mjs";

const shared = process.env.SOMATIZE_SHARED ?? new URL("../../../shared/", import.meta.url).pathname;
let server, origin, browser;

before(async () => {
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

async function ready(query = "") {
  const opened = await openPage(browser, `${origin}/www/index.html${query}`);
  await opened.page.waitForSelector("body[data-ready=true]");
  return opened;
}

const canOpenStores = (page) => page.evaluate(async () => typeof (await import("/pkg/browser.js")).openStore === "function");

test("a folder that is no store gets an answer in the page, not a crash", async () => {
  const { page, seen } = await ready();
  const folder = join(shared, "runs/example_cnn");
  await page.setInputFiles("#pick-folder", folder);
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  const error = await page.textContent("#error");
  assert.match(error, /^example_cnn: /, "the message names the folder");
  if (await canOpenStores(page)) assert.doesNotMatch(error, /cannot open stores yet/);
  else assert.match(error, /cannot open stores yet/);
  assert.equal(await page.isHidden("#store-view"), true);
  await page.screenshot({ path: join(shots, "store-not-a-store.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("?store= on another origin is refused in the page and never asked", async () => {
  const { page, seen } = await ready("?store=https://example.com/store/");
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  assert.match(await page.textContent("#error"), /^https:\/\/example\.com\/store\/: only stores on this page's own site/);
  await page.fill("#store-url", "http://localhost:1/evil/");
  await page.click("#url-form button");
  assert.match(await page.textContent("#error"), /^http:\/\/localhost:1\/evil\/: only stores/);
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), []);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a file that is neither a snapshot nor a tensor file is named and refused", async () => {
  const { page, seen } = await ready();
  await page.setInputFiles("#pick-file", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
  await page.waitForFunction(() => document.querySelector("#error").textContent);
  assert.match(await page.textContent("#error"), /^notes\.txt: not a store snapshot \(\.zip\) nor a tensor file/);
  assert.deepEqual(seen.errors, []);
  await page.close();
});
