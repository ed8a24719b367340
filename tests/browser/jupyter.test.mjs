// Browser layer, the notebook widget in a real JupyterLab: `jupyter lab --no-browser` (the torch
// venv's, where scripts/test.sh installs jupyterlab and anywidget) is started on 127.0.0.1 with a
// copy of examples/notebook.ipynb; Chromium opens it, runs every cell, and the `somatize.show`
// cell's widget renders the store view (its iframe, the vanishing run judged, VANISHING among
// the flags as `somatize diagnose --json` says). Screenshot: jupyterlab-widget.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { launch, root, shots } from "./harness.mjs";
import { binary } from "./report-fixture.mjs";

const venv = process.env.SOMATIZE_VENV ?? join(process.env.HOME, ".cache/somatize/torch-venv");
const token = `somatize-${process.pid}`;
let lab, browser, port, log = "";

/** A free port on 127.0.0.1 (asked of the system, then let go for the server to take). */
const freePort = () => new Promise((ok, bad) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => ok(p));
  }).on("error", bad);
});

before(async () => {
  const dir = join(root, "target/jupyter-test/examples");
  rmSync(join(root, "target/jupyter-test"), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(root, "examples/notebook.ipynb"), join(dir, "notebook.ipynb"));
  port = await freePort();
  lab = spawn(join(venv, "bin/jupyter"), ["lab", "--no-browser", "--ip=127.0.0.1", `--port=${port}`, "--port-retries=0",
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${dir}`, "--LabApp.expose_app_in_browser=True",
    "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    "--LabApp.extension_manager=readonly", ...(process.getuid?.() === 0 ? ["--allow-root"] : [])], {
    cwd: dir, stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, SOMATIZE_BIN: binary(), PYTHONPATH: join(root, "python"), JUPYTER_CONFIG_DIR: join(root, "target/jupyter-test/config"),
      JUPYTER_RUNTIME_DIR: join(root, "target/jupyter-test/runtime"), IPYTHONDIR: join(root, "target/jupyter-test/ipython") },
  });
  lab.stdout.on("data", (b) => (log += b));
  lab.stderr.on("data", (b) => (log += b));
  const t0 = Date.now();
  while (!log.includes(`127.0.0.1:${port}/lab`)) {
    if (lab.exitCode !== null || Date.now() - t0 > 120000) throw new Error(`jupyter lab did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  browser = await launch();
});
after(async () => {
  await browser?.close();
  if (lab && lab.exitCode === null) {
    lab.kill("SIGTERM");
    await new Promise((ok) => lab.on("exit", ok));
  }
});

test("JupyterLab runs examples/notebook.ipynb and the somatize.show widget renders the store view", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(`http://127.0.0.1:${port}/lab/tree/notebook.ipynb?token=${token}`);
  await page.waitForFunction(() => window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel, null, { timeout: 120000 });
  await page.waitForFunction(() => window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel.status === "idle", null, { timeout: 120000 });
  await page.evaluate(() => window.jupyterapp.commands.execute("notebook:run-all-cells"));
  // The widget's iframe, under the show cell.
  const iframe = await page.waitForSelector("iframe.somatize-widget", { timeout: 300000, state: "attached" });
  await iframe.scrollIntoViewIfNeeded();
  const frame = await iframe.contentFrame();
  await frame.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.widget), null, { timeout: 120000 });
  assert.equal(await frame.evaluate(() => document.body.dataset.widget), "ready", await frame.textContent("#error"));
  await frame.waitForFunction(() => Number(document.getElementById("verdict")?.dataset.judged ?? 0) >= 1, null, { timeout: 60000 });
  assert.equal(await frame.inputValue("#run"), "vanishing");
  const runs = await frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
  assert.deepEqual([...runs].sort(), ["dead_relu", "exploding", "healthy", "overstepping", "saturated", "stalled", "vanishing"]);
  const flags = await frame.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")].map((tr) => tr.children[1].textContent));
  assert.ok(flags.some((f) => f.startsWith("VANISHING")), `the vanishing run raises VANISHING: ${flags}`);
  // The screenshot: the verdict inside the widget (JupyterLab's news question dismissed).
  await page.getByRole("button", { name: "No", exact: true }).click({ timeout: 2000 }).catch(() => {});
  await page.evaluate(() => window.jupyterapp.commands.execute("application:toggle-left-area"));
  await frame.evaluate(() => document.getElementById("store-title").scrollIntoView({ block: "start" }));
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(shots, "jupyterlab-widget.png") });
  // Nothing left 127.0.0.1: no CDN, no network.
  assert.deepEqual(requests.filter((u) => !u.startsWith(`http://127.0.0.1:${port}/`) && !/^(data|about|blob):/.test(u) && !/^http:\/\/127\.0\.0\.1:\d+\//.test(u)), []);
  await page.close();
});
