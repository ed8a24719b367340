// Browser layer, a store followed live that does not change: the demo store's seven runs
// (`somatize demo`, 100 steps) written into the origin-private file system and opened through
// "Open a folder…" (a real FileSystemDirectoryHandle; headless Chromium shows no picker, so
// showDirectoryPicker answers that folder's handle) are followed, one look every 2 s. Looks
// that find the store as it was leave the run table and the run list as they are (the same
// elements, none rebuilt: with 1,000 runs building the table again cost the main thread a second
// per look), the runs are not asked for again (the package's refresh says nothing it read
// changed), and the table still says what `somatize compare --json` says. That the table does
// change when the store grows is tests/browser/page-live.test.mjs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { servedBrowser, pickerPage, filesUnder, writeOpfs } from "./harness.mjs";
import { cli, demoStore, root } from "../node/store-fixture.mjs";

let origin, browser, close, want;
const rel = "target/js-stores/compare-follow";
const demo = join(root, rel, "demo");

before(async () => {
  demoStore("compare-follow");
  want = JSON.parse(execFileSync(cli, ["compare", demo, "--json"], { encoding: "utf8" }));
  ({ origin, browser, close } = await servedBrowser());
});
after(async () => {
  await close?.();
});

test("looks at a followed store that did not change keep the run table and the run list as they are", async () => {
  const { page, seen } = await pickerPage(browser, origin, () => {
    // Count the looks (each begins with a `refresh` posted to the package's worker) and the
    // `compare` calls (a look that found something changed asks for the runs again).
    globalThis.__refreshes = 0;
    globalThis.__compares = 0;
    const Real = globalThis.Worker;
    globalThis.Worker = class extends Real {
      postMessage(m, ...rest) {
        if (m?.method === "refresh") globalThis.__refreshes += 1;
        if (m?.method === "call" && m.args?.[1] === "compare") globalThis.__compares += 1;
        return super.postMessage(m, ...rest);
      }
    };
  });
  await writeOpfs(page, filesUnder(demo).map((f) => [f, `${origin}/${rel}/demo/${f}`, false]));
  await page.click("#pick-dir");
  await page.waitForFunction((n) => document.querySelectorAll("#runs-table tbody tr").length === n &&
    !document.querySelector("#runs-table [data-health=pending]") && document.querySelector("#verdict-headline"), want.length);
  assert.equal(await page.isChecked("#live"), true, "a folder opened by its handle is followed");
  // Mark what is shown now, and watch for anything put into or taken out of the table or the list.
  await page.evaluate(() => {
    document.querySelector("#runs-table").dataset.mark = "shown at open";
    document.querySelector("#run option").dataset.mark = "shown at open";
    globalThis.__rebuilt = 0;
    const watch = new MutationObserver((records) => { globalThis.__rebuilt += records.length; });
    watch.observe(document.getElementById("runs"), { childList: true, subtree: true });
    watch.observe(document.getElementById("run"), { childList: true });
    globalThis.__looksAtMark = globalThis.__refreshes;
    globalThis.__comparesAtMark = globalThis.__compares;
  });
  // Two whole looks after the mark: the third refresh is posted only once the second look ended.
  await page.waitForFunction(() => globalThis.__refreshes >= globalThis.__looksAtMark + 3, null, { timeout: 30_000 });
  const after = await page.evaluate(() => ({
    table: document.querySelector("#runs-table")?.dataset.mark,
    option: document.querySelector("#run option")?.dataset.mark,
    rebuilt: globalThis.__rebuilt,
    compares: globalThis.__compares - globalThis.__comparesAtMark,
    runs: [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.dataset.run),
    health: [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.querySelector("[data-health]")?.dataset.health),
    list: [...document.querySelectorAll("#run option")].map((o) => o.value),
  }));
  assert.equal(after.table, "shown at open", "the run table is the one shown at open");
  assert.equal(after.option, "shown at open", "the run list is the one shown at open");
  assert.equal(after.rebuilt, 0, "nothing was put into or taken out of the table or the list");
  assert.equal(after.compares, 0, "a look that found nothing changed asked for the runs no more");
  assert.deepEqual(after.runs, want.map((r) => r.run));
  assert.deepEqual(after.list, want.map((r) => r.run));
  assert.deepEqual(after.health, want.map((r) => (r.healthy ? "healthy" : "sick")));
  assert.equal(await page.textContent("#error"), "");
  assert.deepEqual(seen.errors, []);
});
