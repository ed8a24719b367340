// The seed functions of the npm package in headless Chromium, through the package's Web Worker
// (tests/browser's harness and store.html): what crosses the worker keeps the seed's shape —
// diagnose and where as Maps in declaration order, facts null, curveCosts "scan"/"fetch",
// Thresholds.asDict, within with one argument — and errors keep their stable codes. The rest
// of the npm surface is the Node half (seeds.test.mjs); tests/browser/store.test.mjs checks that
// every store answer in Chromium equals Node's.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { launch, openPage, serve } from "../browser/harness.mjs";
import { makeNest, root } from "./fixture.mjs";

let server, origin, browser, dir, url;

before(async () => {
  dir = join(root, "target/conformance", `browser-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  makeNest(join(dir, "nest"));
  url = `/${relative(root, dir).split("\\").join("/")}/nest/`;
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the seed functions over a store in Chromium, through the worker (npm, browser)", async () => {
  const { page, seen } = await openPage(browser, `${origin}/tests/browser/store.html`);
  await page.waitForSelector("body[data-ready=true]");
  const got = await page.evaluate(async (url) => {
    const s = window.somatize;
    const store = await s.openStore(url);
    const code = (p) => p.then(() => "resolved", (e) => e.code ?? `no code: ${e.message}`);
    const kind = (p) => p.then(() => "resolved", (e) => [e instanceof s.SomatizeError, e.name, e.run]);
    const out = {
      diagnose: await s.diagnose(store, { run: "nest" }),
      where: await s.where(store, { run: "nest" }),
      strict: await s.diagnose(store, { run: "nest", thresholds: new s.Thresholds({ stalled_update_ratio: 1e-15 }) }),
      asDict: new s.Thresholds({ dead_layer_fraction: 0.99 }).asDict().dead_layer_fraction,
      runs: (await s.runs(store)).map((r) => r.run),
      facts: await s.facts(store, { run: "nest", forward: 99 }),
      costs: [await s.curveCosts(store, { run: "nest" }), await s.curveCosts(store, { run: "nest", of: "Linear.took_us" })],
      within: s.within("net.2.attn"),
      about: s.about("OVERSTEPPING in net.0").flag,
      codes: [
        await code(s.diagnose(store, { run: "nosuch" })),
        await code(s.curve(store, { run: "nest", colour: 1 })),
        await code(s.facts(store, { run: "nest" })),
        await code(s.runs("not a store")),
      ],
      // A SomatizeError across the worker, with what it concerns.
      kind: await kind(s.diagnose(store, { run: "nosuch" })),
    };
    await store.close();
    // Maps as their entries: a Map does not survive page.evaluate's JSON.
    return { ...out, diagnoseIsMap: out.diagnose instanceof Map, diagnose: [...out.diagnose], where: [...out.where], strict: [...out.strict] };
  }, url);
  assert.deepEqual(got, {
    diagnoseIsMap: true,
    diagnose: [["1", ["STALLED"]], ["net.0", ["OVERSTEPPING"]]],
    where: [["net", ["OVERSTEPPING in net.0"]], ["1", ["STALLED"]]],
    strict: [["net.0", ["OVERSTEPPING"]]],
    asDict: 0.99,
    runs: ["nest"],
    facts: null,
    costs: ["scan", "fetch"],
    within: "net",
    about: "OVERSTEPPING",
    codes: ["NO_SUCH_RUN", "UNKNOWN_OPTION", "BAD_OPTION", "NOT_A_STORE"],
    kind: [true, "SomatizeError", "nosuch"],
  });
  assert.deepEqual(seen.errors, []);
  await page.close();
});
