// Browser layer: a tiny app importing "somatize" bundled by Vite (worker and wasm as emitted
// assets) opens a CLI-written store in headless Chromium and answers as the package does in Node.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { build } from "vite";
import { openStore, specId } from "somatize";
import { serve, launch, openPage } from "./harness.mjs";
import { makeStores, root } from "../node/store-fixture.mjs";

let server, origin, browser, s;

before(async () => {
  s = makeStores("vite");
  await build({
    root: join(root, "tests/browser/vite-app"),
    base: "./",
    logLevel: "warn",
    build: { outDir: join(root, "target/vite-app"), emptyOutDir: true, target: "esnext" },
    worker: { format: "es" },
  });
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test("a Vite build of a page importing somatize opens a store in Chromium", async () => {
  const store = await openStore(s.store);
  const runs = await store.listRuns();
  const want = {
    runs,
    last: (await store.scan({ run: runs[0], last: 2 })).rows.map((r) => r.forward),
    id: specId({ source: "param", selector: "w", reduction: "l2" }),
  };
  const { page, seen } = await openPage(browser, `${origin}/target/vite-app/index.html?store=${encodeURIComponent(s.url("store/"))}`);
  await page.waitForFunction(() => document.querySelector("#out").textContent !== "opening…", null, { timeout: 20000 });
  assert.deepEqual(JSON.parse(await page.textContent("#out")), want);
  assert.deepEqual(seen.errors, []);
  assert.ok(seen.requests.some((u) => /\/target\/vite-app\/assets\/.*\.wasm$/.test(u)), "the wasm is a Vite asset");
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(origin)), [], "no other origin");
  await page.close();
});
