// Browser layer, `somatize report`: the file opened by file:// (as by a double-click) and inside an
// iframe srcdoc (as the notebook helper shows it) draws the runs table, the flags with the
// thresholds and every figure exactly as the CLI's --json gives them, asks nothing of any network,
// and re-judges at an edited threshold in the page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { launch, openPage, root, shots } from "./harness.mjs";
import { binary, checkViews, cli, demoStore, json, writeReport } from "./report-fixture.mjs";

let browser, s;

before(async () => {
  s = demoStore("report");
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Wait in `frame` until the report opened its run and drew the last figure (or showed an error). */
async function ready(frame) {
  await frame.waitForFunction(() => document.body.dataset.report === "ready" || document.querySelector("#error")?.textContent);
  await frame.waitForFunction(() => ["true", "waiting"].includes(document.querySelector("#fig-machines")?.dataset.drawn) || document.querySelector("#error")?.textContent);
  assert.equal(await frame.textContent("#error"), "", "the report shows no error");
}

/** Every request a page made stays in the file it opened (file:) or the page itself (about:, data:). */
function offline(seen, allowed) {
  const out = seen.requests.filter((u) => !allowed.some((a) => u === a) && !/^(data|about|blob):/.test(u));
  assert.deepEqual(out, [], "requests leaving the report");
}

test("the report opened by file:// shows the run as the CLI answers, offline", async () => {
  const r = writeReport(s.dir, s.store, "dead_relu");
  const { page, seen } = await openPage(browser, r.url);
  await ready(page);
  const d = await checkViews(assert, page, s.store, "dead_relu");
  assert.ok(Object.keys(d.diagnosis).length > 0, "dead_relu raises flags (else this test checks little)");
  assert.equal(await page.title(), "somatize report: dead_relu");
  assert.equal(await page.locator("#run option").count(), 1, "the report holds the one run");
  await page.screenshot({ path: join(shots, "report.png"), fullPage: true });

  // Editing a threshold judges again in the page, as `diagnose --thresholds` does.
  const over = join(s.dir, "over.json");
  writeFileSync(over, JSON.stringify({ dead_layer_fraction: 0.99, dead_channels_min: 1000 }));
  const want = json("diagnose", s.store, "--run", "dead_relu", "--thresholds", over, "--with-bounds");
  await page.fill("#thresholds input[name=dead_layer_fraction]", "0.99");
  await page.fill("#thresholds input[name=dead_channels_min]", "1000");
  await page.dispatchEvent("#thresholds input[name=dead_channels_min]", "input");
  const wanted = Object.entries(want.diagnosis).flatMap(([n, fs]) => fs.map((f) => [n, f]));
  await page.waitForFunction((n) => document.querySelectorAll("#flags-table tbody tr").length === n || (n === 0 && !document.querySelector("#flags-table")), wanted.length);
  const flags = await page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
  assert.deepEqual(flags, wanted, "re-judged at the edited thresholds");

  offline(seen, [r.url]);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("--last N: the report judges and draws only the last forwards", async () => {
  const r = writeReport(s.dir, s.store, "vanishing", "--last", "1");
  const { page, seen } = await openPage(browser, r.url);
  await ready(page);
  const runs = await page.evaluate(() => document.querySelector("#runs-table tbody tr").textContent);
  assert.match(await page.textContent("#verdict-summary"), /Judged over 1 forward /);
  assert.ok(runs.includes("vanishing"));
  offline(seen, [r.url]);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("inside an iframe srcdoc, as the notebook helper shows it, the report draws the same views", async () => {
  // The helper's own output (python/somatize/notebook.py), in a page of its own.
  const program = "import sys; sys.path.insert(0, 'python'); import somatize.notebook as sn; " +
    "sys.stdout.write(sn.report(sys.argv[1], 'saturated')._repr_html_())";
  const cell = execFileSync("python3", ["-c", program, s.store], {
    cwd: root, encoding: "utf8", maxBuffer: 1 << 28, env: { ...process.env, SOMATIZE_BIN: binary() },
  });
  assert.match(cell, /^<iframe sandbox="allow-scripts" srcdoc="/);
  const host = join(s.dir, "cell.html");
  writeFileSync(host, `<!doctype html><html><head><meta charset="utf-8"><title>a notebook cell</title></head><body>${cell}</body></html>`);
  const url = pathToFileURL(host).href;
  const { page, seen } = await openPage(browser, url);
  const frame = await (await page.waitForSelector("iframe")).contentFrame();
  await ready(frame);
  await checkViews(assert, frame, s.store, "saturated");
  assert.equal(await frame.evaluate(() => origin), "null", "the sandbox gives the report an opaque origin");
  await page.screenshot({ path: join(shots, "report-srcdoc.png"), fullPage: true });
  offline(seen, [url, "about:srcdoc"]);
  assert.deepEqual(seen.errors, []);
  assert.ok(readFileSync(host, "utf8").length > 1e6, "the whole report is in the cell");
  await page.close();
});

test("a run named with HTML is text in the report's title, table and select, and runs nothing", async () => {
  const HOSTILE = "<img src=x onerror=window.__pwned=1>";
  const store = join(s.dir, "hostile");
  cli("record", "--store", store, "--run", HOSTILE, "--", "python3", join(root, "tests/browser/hostile_train.py"));
  const path = join(s.dir, "hostile.html");
  cli("report", store, "--run", HOSTILE, "-o", path);
  const url = pathToFileURL(path).href;
  const { page, seen } = await openPage(browser, url);
  await ready(page);
  assert.equal(await page.title(), `somatize report: ${HOSTILE}`);
  assert.equal(await page.textContent("#runs-table tbody tr > :first-child"), HOSTILE);
  assert.equal(await page.inputValue("#run"), HOSTILE);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "nothing ran");
  assert.equal(await page.locator("img[src=x]").count(), 0);
  offline(seen, [url]);
  assert.deepEqual(seen.errors, []);
  await page.close();
});
