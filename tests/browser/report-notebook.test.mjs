// Browser layer, the example notebook's outputs: the HTML each cell showed when
// tests/notebook_test.py ran every code cell of examples/notebook.ipynb (run here first when its
// outputs are missing) is loaded in Chromium; the report cell's views hold what the CLI's --json
// says. The live view (`somatize.notebook.live`) is started by the helper here and its iframe
// shows the served page over the whole store, as `somatize runs --json` lists it, and follows
// the run shown while `somatize record` adds to it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { launch, openPage, root, shots } from "./harness.mjs";
import { binary, checkViews, json, tracesOf } from "./report-fixture.mjs";

const out = process.env.SOMATIZE_NOTEBOOK_OUT ?? join(root, "target/notebook");
let browser, manifest;

before(async () => {
  const path = join(out, "manifest.json");
  const stale = () => !existsSync(path) || !existsSync(JSON.parse(readFileSync(path, "utf8")).store);
  if (stale()) {
    // The torch venv's python: the notebook's somatize.show cell needs anywidget (scripts/test.sh).
    const python = process.env.SOMATIZE_PYTHON ?? join(process.env.HOME, ".cache/somatize/torch-venv/bin/python");
    execFileSync(python, [join(root, "tests/notebook_test.py")], {
      cwd: root, stdio: "inherit", env: { ...process.env, SOMATIZE_BIN: binary(), SOMATIZE_NOTEBOOK_OUT: out },
    });
  }
  manifest = JSON.parse(readFileSync(path, "utf8"));
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("the notebook's report cell draws the run as the CLI answers, asking no network", async () => {
  const [cell] = manifest.outputs.filter((o) => o.kind === "Report");
  assert.ok(cell, "the notebook showed a report");
  const url = pathToFileURL(join(out, cell.file)).href;
  const { page, seen } = await openPage(browser, url);
  const frame = await (await page.waitForSelector("iframe[srcdoc]")).contentFrame();
  await frame.waitForFunction(() => ["true", "waiting"].includes(document.querySelector("#fig-machines")?.dataset.drawn) || document.querySelector("#error")?.textContent);
  assert.equal(await frame.textContent("#error"), "");
  const d = await checkViews(assert, frame, manifest.store, cell.run);
  assert.ok(Object.values(d.diagnosis).flat().some((f) => f.startsWith("VANISHING")), "the vanishing run raises VANISHING");
  await page.screenshot({ path: join(shots, "notebook-report.png"), fullPage: true });
  assert.deepEqual(seen.requests.filter((u) => u !== url && !/^(data|about|blob):/.test(u)), []);
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("the live view shows the served page over the whole store", async () => {
  const program = [
    "import sys; sys.path.insert(0, 'python'); import somatize.notebook as sn",
    "view = sn.live(sys.argv[1])",
    "print(view._repr_html_(), flush=True)",
    "sys.stdin.read()",
    "view.stop()",
  ].join("\n");
  const child = spawn("python3", ["-c", program, manifest.store], {
    cwd: root, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, SOMATIZE_BIN: binary() },
  });
  try {
    const cell = await new Promise((ok, bad) => {
      let text = "";
      child.stdout.on("data", (b) => {
        text += b;
        if (text.includes("</iframe>")) ok(text.trim());
      });
      child.on("exit", (code) => bad(new Error(`the live helper exited (${code})`)));
    });
    const src = /src="(http:\/\/127\.0\.0\.1:\d+\/[^"]*)"/.exec(cell)?.[1]?.replaceAll("&amp;", "&");
    assert.ok(src, cell);
    const host = join(out, "live.html");
    writeFileSync(host, `<!doctype html><html><head><meta charset="utf-8"><title>live</title></head><body>${cell}</body></html>`);
    const { page, seen } = await openPage(browser, pathToFileURL(host).href);
    const frame = await (await page.waitForSelector("iframe")).contentFrame();
    await frame.waitForFunction(() => ["true", "waiting"].includes(document.querySelector("#fig-machines")?.dataset.drawn) || document.querySelector("#error")?.textContent);
    assert.equal(await frame.textContent("#error"), "");
    const runs = await frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
    assert.deepEqual(runs, json("runs", manifest.store, "--json").map((r) => r.run), "every run of the store, as `somatize runs --json`");
    assert.equal(await frame.isChecked("#live"), true, "the page follows the store (&live=1)");
    const origin = new URL(src).origin;
    assert.deepEqual(seen.requests.filter((u) => !u.startsWith(origin) && !u.startsWith("file:") && !/^(data|about|blob):/.test(u)), [],
      "only the local server is asked");
    await page.screenshot({ path: join(shots, "notebook-live.png") });

    // The run shown is written to while the page follows it: its progress is drawn again with
    // the new forwards, as the CLI then draws it.
    const run = await frame.inputValue("#run");
    await frame.locator("#fig-progress").scrollIntoViewIfNeeded(); // on screen: drawn as it changes
    await frame.waitForSelector("#fig-progress[data-drawn=true]"); // drawn once on screen
    const before = tracesOf(await frame.evaluate(() => document.getElementById("fig-progress").data));
    execFileSync(binary(), ["record", "--store", manifest.store, "--run", run, "--writer", `live-${process.pid}-${Date.now()}`, "--",
      "python3", join(root, "examples/train_numpy.py"), "--steps", "3"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    const want = tracesOf(json("figure", "progress", manifest.store, "--run", run).data);
    assert.notDeepEqual(want, before, "the new forwards change the progress figure");
    await frame.waitForFunction((want) => JSON.stringify(document.getElementById("fig-progress").data
      .map((t) => ({ type: t.type ?? null, x: t.x ?? null, y: t.y ?? null, cells: t.cells?.values ?? null }))) === want,
    JSON.stringify(want), { timeout: 15000 });
    await page.close();
  } finally {
    child.stdin.end();
    await new Promise((ok) => (child.exitCode !== null ? ok() : child.on("exit", ok)));
  }
});
