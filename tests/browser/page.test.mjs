// Browser layer: www/ in headless Chromium computes the same ids as native, with no foreign requests.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { serve, launch, openPage, shots } from "./harness.mjs";

const golden = JSON.parse(readFileSync(new URL("../golden/spec_ids.json", import.meta.url)));
let server, origin, browser;

before(async () => {
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test("the page loads the package and shows the golden ids as you type", async () => {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  assert.match(await page.textContent("#version"), /^\d+\.\d+\.\d+$/);
  for (const { spec, id } of golden) {
    await page.fill("#spec", JSON.stringify(spec));
    assert.equal(await page.textContent("#spec-id"), id, JSON.stringify(spec));
  }
  await page.fill("#spec", '{"source": "param", "selector": "w", "reduction": "l2", "frequency": 0}');
  assert.match(await page.textContent("#spec-error"), /frequency/);
  await page.screenshot({ path: join(shots, "spec-id.png") });
  assert.deepEqual(seen.errors, []);
  const foreign = seen.requests.filter((u) => !u.startsWith(origin));
  assert.deepEqual(foreign, [], "the page asks no other origin");
  await page.close();
});

test("the package's browser entry agrees with the golden ids inside the page", async () => {
  const { page } = await openPage(browser, `${origin}/www/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  const ids = await page.evaluate(async (specs) => {
    const m = await import("/pkg/browser.js");
    return specs.map((s) => m.specId(s));
  }, golden.map((g) => g.spec));
  assert.deepEqual(ids, golden.map((g) => g.id));
  await page.close();
});
