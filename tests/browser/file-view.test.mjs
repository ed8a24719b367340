// Browser layer, the page's file view: each tensor-file kind chosen or dropped shows numpy's
// statistics (fixtures' expected.json), bad files are named with the core's message, thresholds
// re-judge at once, hostile names stay text, and the page asks no other origin.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve, launch, openPage, shots } from "./harness.mjs";

// The shared folder sits beside the repo; SOMATIZE_SHARED names it elsewhere (a worktree).
const shared = process.env.SOMATIZE_SHARED ?? new URL("../../../shared/", import.meta.url).pathname;
const fixtures = join(shared, "fixtures");
const expected = JSON.parse(readFileSync(join(fixtures, "expected.json"), "utf8"));
const HOSTILE = "<img src=x onerror=window.__pwned=1>";
let server, origin, browser, tmp;

before(async () => {
  ({ server, origin } = await serve());
  browser = await launch();
  tmp = mkdtempSync(join(tmpdir(), "somatize-page-"));
});
after(async () => {
  await browser?.close();
  server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A fresh page with the app ready. */
async function ready() {
  const opened = await openPage(browser, `${origin}/www/index.html`);
  await opened.page.waitForSelector("body[data-ready=true]");
  return opened;
}

/** Choose a file through the file input and wait until the page has answered (table or error). */
async function choose(page, file) {
  await page.setInputFiles("#pick-file", file);
  await page.waitForFunction(() => document.querySelector("#error").textContent ||
    (!document.querySelector("#file-view").hidden && document.querySelector("#stats-table")));
}

/** The statistics table as {key: {shape, dtype, column: number}} from the exact values in <data>. */
function statsTable(page) {
  return page.evaluate(() => {
    const table = document.querySelector("#stats-table");
    const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    const out = {};
    for (const tr of table.querySelectorAll("tbody tr")) {
      const cells = [...tr.children];
      const row = {};
      cells.forEach((c, i) => {
        const d = c.querySelector("data");
        row[cols[i]] = d ? Number(d.value) : c.textContent;
      });
      out[row.key] = row;
    }
    return out;
  });
}

/** The verdict table as [[node, flag]]. */
function flagsShown(page) {
  return page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
}

const close = (got, want) => Math.abs(got - want) <= 1e-12 + 1e-9 * Math.abs(want);

/** Compare the page's table with numpy's statistics of the fixture, key by key. */
function checkAgainstNumpy(name, table) {
  const want = expected[name];
  assert.deepEqual(Object.keys(table).sort(), Object.keys(want).sort(), `${name}: keys`);
  for (const [key, w] of Object.entries(want)) {
    const g = table[key];
    assert.equal(g.shape, w.shape.length ? w.shape.join(" × ") : "scalar", `${name} ${key} shape`);
    assert.equal(g.dtype, w.dtype, `${name} ${key} dtype`);
    for (const c of ["count", "nonfinite", "nan"]) assert.equal(g[c], w[c], `${name} ${key} ${c}`);
    for (const c of ["l2", "mean", "std", "min", "max", "absmax", "zero_fraction"]) {
      assert.ok(close(g[c], w[c]), `${name} ${key} ${c}: got ${g[c]}, numpy says ${w[c]}`);
    }
  }
}

function noForeignRequests(seen) {
  assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${origin}/`)), [], "every request goes to the page's own origin");
}

for (const name of ["state_dict.pt", "step_stored.npz", "model.safetensors", "f32_c.npy", "with_nan_inf.npy"]) {
  test(`choosing ${name} shows numpy's statistics of every tensor`, async () => {
    const { page, seen } = await ready();
    await choose(page, join(fixtures, name));
    assert.equal(await page.textContent("#error"), "");
    checkAgainstNumpy(name, await statsTable(page));
    assert.match(await page.textContent("#file-title"), new RegExp(name.replace(".", "\\.")));
    await page.screenshot({ path: join(shots, `file-${name.replace(/\W/g, "_")}.png`), fullPage: true });
    assert.deepEqual(seen.errors, []);
    noForeignRequests(seen);
    await page.close();
  });
}

test("weights judge NAN and INF; a file with NaN and inf raises both, with advice and bounds", async () => {
  const { page, seen } = await ready();
  await choose(page, join(fixtures, "with_nan_inf.npy"));
  assert.deepEqual(await flagsShown(page), [["with_nan_inf", "NAN"], ["with_nan_inf", "INF"]]);
  assert.match(await page.textContent("#judged-flags"), /^NAN, INF$/);
  assert.match(await page.textContent("#flags-table"), /Lower the learning rate/, "NAN's advice from about()");
  await choose(page, join(fixtures, "state_dict.pt"));
  assert.deepEqual(await flagsShown(page), []);
  assert.match(await page.textContent("#verdict-summary"), /No flag raised/);
  assert.match(await page.textContent("#judgeable"), /From weights alone/);
  await page.fill("#stats-filter", "FC1.");
  assert.deepEqual(await page.locator("#stats-table tbody tr:visible th").allTextContents(), ["param.fc1.weight", "param.fc1.bias"]);
  assert.equal(await page.textContent("#stats-shown"), "2 of 12 shown");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a checkpoint whose pickle would run a command is refused, naming the file and why", async () => {
  const { page, seen } = await ready();
  await choose(page, join(fixtures, "bad_evil.pt"));
  const error = await page.textContent("#error");
  assert.match(error, /bad_evil\.pt/);
  assert.match(error, /posix\.system/);
  assert.equal(await page.isHidden("#file-view"), true, "no table for a refused file");
  await page.screenshot({ path: join(shots, "file-bad_evil.png") });
  await choose(page, join(fixtures, "bad_truncated.npz"));
  assert.match(await page.textContent("#error"), /bad_truncated\.npz/);
  assert.deepEqual(seen.errors, []);
  noForeignRequests(seen);
  await page.close();
});

test("editing a threshold re-judges at once, shows the bound used, and the core's error for bad input", async () => {
  const { page, seen } = await ready();
  await choose(page, join(fixtures, "step_stored.npz"));
  // grad.fc1.weight: mean |g| = l1 / count = 0.10367 / 128 = 8.1e-4, above the default 1e-7.
  assert.deepEqual(await flagsShown(page), []);
  await page.evaluate(() => { document.querySelector("#stats-table").dataset.mark = "same"; });
  const asked = seen.requests.length;
  await page.fill("#t-vanishing_mean_abs", "1e-3");
  await page.waitForSelector("#flags-table", { state: "attached" }); // in the verdict's details, one click away
  assert.deepEqual(await flagsShown(page), [["fc1", "VANISHING"]]);
  const judged = await page.textContent("#flags-table");
  assert.match(judged, /vanishing_mean_abs = 0\.001 \(default 1e−7\)/);
  await page.screenshot({ path: join(shots, "file-thresholds-edited.png"), fullPage: true });
  await page.fill("#t-vanishing_mean_abs", "abc");
  await page.waitForFunction(() => document.querySelector("#thresholds-error").textContent);
  assert.equal(await page.textContent("#thresholds-error"), 'thresholds: threshold "vanishing_mean_abs" must be a number, not "abc"');
  assert.equal(await page.getAttribute("#t-vanishing_mean_abs", "aria-invalid"), "true");
  await page.click("#thresholds-reset");
  await page.waitForFunction(() => !document.querySelector("#flags-table"));
  assert.equal(await page.textContent("#thresholds-error"), "");
  assert.equal(await page.getAttribute("#stats-table", "data-mark"), "same", "the statistics were not redrawn");
  assert.equal(seen.requests.length, asked, "re-judging asks the server for nothing");
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("the thresholds form is labelled and keyboard usable", async () => {
  const { page } = await ready();
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll("input, select, textarea, button")]
    .filter((c) => !c.labels?.length && !c.getAttribute("aria-label") && !c.getAttribute("aria-labelledby") && !(c.tagName === "BUTTON" && c.textContent.trim()))
    .map((c) => c.id || c.outerHTML));
  assert.deepEqual(unlabelled, [], "every control has a label");
  await choose(page, join(fixtures, "step_stored.npz"));
  await page.focus("#t-vanishing_ratio");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "t-vanishing_mean_abs");
  await page.keyboard.press("Control+A");
  await page.keyboard.type("0.01");
  assert.deepEqual(await flagsShown(page), [["fc1", "VANISHING"]]);
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.equal(outline, "solid", "the focused field shows its focus");
  await page.close();
});

test("a tensor file dropped on the page opens like a chosen one", async () => {
  const { page, seen } = await ready();
  const bytes = [...readFileSync(join(fixtures, "f32_c.npy"))];
  await page.evaluate((bytes) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(bytes)], "f32_c.npy"));
    document.querySelector("#drop").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, bytes);
  await page.waitForSelector("#stats-table");
  checkAgainstNumpy("f32_c.npy", await statsTable(page));
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("a hostile tensor key and file name show as text and run nothing", async () => {
  // numpy names each NPZ entry `<key>.npy`: the key is the hostile string, the file name too.
  const file = join(tmp, "hostile.npz");
  execFileSync("python3", ["-c", `import numpy as np, sys
np.savez(sys.argv[1], **{sys.argv[2]: np.array([1.0, np.nan], dtype=np.float32), "param.ok.weight": np.ones(3, dtype=np.float32)})`, file, HOSTILE]);
  const { page, seen } = await ready();
  await page.setInputFiles("#pick-file", { name: `${HOSTILE}.npz`, mimeType: "application/zip", buffer: readFileSync(file) });
  await page.waitForSelector("#stats-table");
  const keys = Object.keys(await statsTable(page));
  assert.ok(keys.includes(HOSTILE), `the key shows as its text: ${keys}`);
  assert.deepEqual(await flagsShown(page), [[HOSTILE, "NAN"]]);
  assert.equal(await page.textContent("#file-title"), `Tensor file: ${HOSTILE}.npz`);
  await page.waitForTimeout(200);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no script ran");
  assert.equal(await page.locator("img").count(), 0, "no element was made from the name");
  await page.screenshot({ path: join(shots, "file-hostile.png"), fullPage: true });
  assert.deepEqual(seen.errors, []);
  noForeignRequests(seen);
  await page.close();
});

test("figures escape what came from a store: hostile names in traces, ticks and titles are text", async () => {
  const { page, seen } = await ready();
  await page.evaluate(async (hostile) => {
    const { draw } = await import("/www/figure.js");
    const box = document.createElement("div");
    box.id = "hostile-figure";
    document.querySelector("main").prepend(box);
    await draw(box, {
      data: [{ type: "bar", x: [hostile, "b"], y: [1, 2], name: hostile, text: [hostile, "b"],
        hovertemplate: "%{x}: %{y}<extra>%{fullData.name}</extra>" }],
      layout: { title: { text: `run ${hostile}<br>second line` }, showlegend: true, width: 900, height: 400 },
    });
  }, HOSTILE);
  const bar = page.locator("#hostile-figure .bars path").first();
  await bar.scrollIntoViewIfNeeded();
  const b = await bar.boundingBox();
  await page.mouse.move(b.x + b.width / 2 - 4, b.y + b.height / 2);
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
  await page.waitForSelector("#hostile-figure .hoverlayer .hovertext");
  const hover = await page.textContent("#hostile-figure .hoverlayer");
  assert.ok(hover.includes(HOSTILE), `hover shows the name as text: ${hover}`);
  const title = await page.textContent("#hostile-figure .gtitle");
  assert.ok(title.includes(HOSTILE) && title.includes("second line"), `title: ${title}`);
  assert.equal(await page.locator("#hostile-figure .gtitle tspan.line").count(), 2, "the figure's own <br> still breaks the line");
  assert.ok((await page.textContent("#hostile-figure .xtick")).includes(HOSTILE), "tick label as text");
  await page.screenshot({ path: join(shots, "figure-hostile.png") });
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "no script ran");
  assert.equal(await page.locator("img").count(), 0);
  assert.deepEqual(seen.errors, [], "no CSP violation either");
  noForeignRequests(seen);
  await page.close();
});

test("the picture of a per-step dump per node agrees with numpy's statistics of its tensors", async () => {
  const { page } = await ready();
  const bytes = [...readFileSync(join(fixtures, "step_stored.npz"))];
  const seen = await page.evaluate(async (bytes) => {
    const { tensorStats } = await import("/pkg/browser.js");
    const { seenOf } = await import("/www/file-view.js");
    return seenOf(tensorStats(new Uint8Array(bytes), "step_stored.npz"));
  }, bytes);
  const e = expected["step_stored.npz"];
  const w = e["param.fc1.weight"], b = e["param.fc1.bias"], g = e["grad.fc1.weight"], a = e["act.fc1"];
  const want = {
    nan: 0, inf: 0, nonfinite: 0,
    param_norm: Math.hypot(w.l2, b.l2),
    param_mean_abs: (w.l1 + b.l1) / (w.count + b.count),
    param_absmax: Math.max(w.absmax, b.absmax),
    grad_norm: g.l2, grad_mean_abs: g.l1 / g.count, grad_zero_fraction: g.zero_fraction,
    grad_nonfinite: g.nonfinite,
    act_mean: a.mean, act_zero_fraction: a.zero_fraction,
  };
  assert.deepEqual(seen.map((n) => n.name), ["fc1", "loss"], "param/grad/act of fc1 are one node");
  const fc1 = seen.find((n) => n.name === "fc1").metrics;
  assert.deepEqual(Object.keys(fc1).sort(), Object.keys(want).sort());
  for (const [k, v] of Object.entries(want)) assert.ok(close(fc1[k], v), `fc1 ${k}: got ${fc1[k]}, numpy gives ${v}`);
  const loss = seen.find((n) => n.name === "loss").metrics;
  assert.ok(close(loss.loss, e.loss.mean), `loss: got ${loss.loss}, numpy gives ${e.loss.mean}`);
  await page.close();
});
