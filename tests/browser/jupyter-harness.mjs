// A real Jupyter front-end for the widget's tests (jupyter.test.mjs: JupyterLab; notebook7.test.mjs:
// Notebook 7): the torch venv's `jupyter lab` or `jupyter notebook` started on 127.0.0.1 over a
// copy of examples/notebook.ipynb, and the notebook run in Chromium with the `somatize.show` cell
// timed: from the moment the cell is run (the cells above it done, the kernel idle) to the
// verdict drawn in the widget, with the widget's own marks (python/somatize/_widget/widget.js's
// `data-somatize-times`).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { root } from "./harness.mjs";
import { binary } from "./report-fixture.mjs";

export const venv = process.env.SOMATIZE_VENV ?? join(process.env.HOME, ".cache/somatize/torch-venv");

/** A free port on 127.0.0.1 (asked of the system, then let go for the server to take). */
const freePort = () => new Promise((ok, bad) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => ok(p));
  }).on("error", bad);
});

/**
 * Start `jupyter lab` (app "lab") or `jupyter notebook` (app "notebook", Notebook 7) over a copy of
 * the example notebook in target/<name>/examples. Gives {port, token, url (the notebook's page),
 * stop(), log()}.
 */
export async function startJupyter(app, name) {
  const base = join(root, "target", name);
  const dir = join(base, "examples");
  rmSync(base, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(root, "examples/notebook.ipynb"), join(dir, "notebook.ipynb"));
  const port = await freePort();
  const token = `somatize-${process.pid}`;
  const appClass = app === "lab" ? "LabApp" : "JupyterNotebookApp";
  let log = "";
  const server = spawn(join(venv, "bin/jupyter"), [app, "--no-browser", "--ip=127.0.0.1", `--port=${port}`, "--port-retries=0",
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${dir}`, `--${appClass}.expose_app_in_browser=True`,
    ...(app === "lab" ? ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
      "--LabApp.extension_manager=readonly"] : []), ...(process.getuid?.() === 0 ? ["--allow-root"] : [])], {
    cwd: dir, stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, SOMATIZE_BIN: binary(), PYTHONPATH: process.env.SOMATIZE_PYTHONPATH ?? join(root, "python"), JUPYTER_CONFIG_DIR: join(base, "config"),
      JUPYTER_RUNTIME_DIR: join(base, "runtime"), IPYTHONDIR: join(base, "ipython") },
  });
  server.stdout.on("data", (b) => (log += b));
  server.stderr.on("data", (b) => (log += b));
  const t0 = Date.now();
  const path = app === "lab" ? "lab" : "tree";
  while (!log.includes(`127.0.0.1:${port}/${path}`)) {
    if (server.exitCode !== null || Date.now() - t0 > 120000) throw new Error(`jupyter ${app} did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const url = `http://127.0.0.1:${port}/${app === "lab" ? "lab/tree" : "notebooks"}/notebook.ipynb?token=${token}`;
  return {
    port, token, url, log: () => log,
    stop: async () => {
      if (server.exitCode === null) {
        server.kill("SIGTERM");
        await new Promise((ok) => server.on("exit", ok));
      }
    },
  };
}

/** Wait until the notebook's kernel is idle. */
export const kernelIdle = (page, timeout = 120000) => page.waitForFunction(
  () => window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === "idle", null, { timeout });

/** Once the opened notebook has its kernel, idle: the index of its `somatize.show` cell. */
export async function showCellIndex(page) {
  await page.waitForFunction(() => window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel, null, { timeout: 120000 });
  await kernelIdle(page);
  const showIndex = await page.evaluate(() => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    return nb.widgets.findIndex((c) => c.model.type === "code" && c.model.sharedModel.getSource().includes("somatize.show("));
  });
  if (showIndex < 0) throw new Error("the notebook has no somatize.show cell");
  return showIndex;
}

/** Run the cells above the show cell; back when each is done and the kernel idle. */
export async function runCellsAbove(page, showIndex) {
  await page.evaluate((i) => {
    const app = window.jupyterapp;
    app.shell.currentWidget.content.activeCellIndex = i;
    return app.commands.execute("notebook:run-all-above");
  }, showIndex);
  await page.waitForFunction((i) => {
    const nb = window.jupyterapp.shell.currentWidget;
    const above = nb.content.widgets.slice(0, i).filter((c) => c.model.type === "code");
    return nb.context.sessionContext.session.kernel.status === "idle" && above.every((c) => c.model.executionCount !== null);
  }, showIndex, { timeout: 300000, polling: 100 });
}

/** Run the show cell; the page's clock (performance.now()) at its run. */
const runShowCell = (page, showIndex) => page.evaluate((i) => {
  const app = window.jupyterapp;
  app.shell.currentWidget.content.activeCellIndex = i;
  const t = performance.now();
  app.commands.execute("notebook:run-cell");
  return t;
}, showIndex);

/**
 * Run the opened notebook: the cells above the `somatize.show` cell, then that cell alone (timed),
 * then the rest. Gives {frame (the widget's iframe), iframe, times (the widget's marks), openMs
 * (the cell run to the verdict drawn), shownMs (to the whole view shown: the runs overlaid, the
 * progress and the other figures on screen drawn too), showIndex}.
 */
export async function runNotebookTimed(page) {
  const showIndex = await showCellIndex(page);
  await runCellsAbove(page, showIndex);
  // The show cell, timed from its run.
  const started = await runShowCell(page, showIndex);
  const iframe = await page.waitForSelector("iframe.somatize-widget", { timeout: 120000, state: "attached" });
  await page.waitForFunction(() => {
    const el = document.querySelector("[data-somatize-times]");
    const t = el && JSON.parse(el.dataset.somatizeTimes);
    return el && ((t.verdict !== undefined && t.shown !== undefined) || el.dataset.somatize === "failed");
  }, null, { timeout: 120000, polling: 20 });
  const times = await page.evaluate(() => JSON.parse(document.querySelector("[data-somatize-times]").dataset.somatizeTimes));
  const openMs = Math.round(times.at + times.verdict - started);
  const shownMs = Math.round(times.at + times.shown - started);
  // The rest of the notebook.
  await page.evaluate((i) => {
    const app = window.jupyterapp;
    app.shell.currentWidget.content.activeCellIndex = i + 1;
    return app.commands.execute("notebook:run-all-below");
  }, showIndex);
  return { iframe, frame: await iframe.contentFrame(), times, openMs, shownMs, showIndex };
}

/** Run the show cell again (the page and wasm already in this window): the time to its verdict. */
export async function rerunShowCell(page, showIndex) {
  await kernelIdle(page, 300000);
  const started = await runShowCell(page, showIndex);
  const newest = (started) => [...document.querySelectorAll("[data-somatize-times]")]
    .map((el) => JSON.parse(el.dataset.somatizeTimes)).find((t) => t.at > started && t.verdict !== undefined && t.shown !== undefined);
  await page.waitForFunction(`(${newest})(${started})`, null, { timeout: 120000, polling: 20 });
  const times = await page.evaluate(`(${newest})(${started})`);
  return { times, openMs: Math.round(times.at + times.verdict - started), shownMs: Math.round(times.at + times.shown - started) };
}

/** One line of the widget's marks, for the test's log. */
export function describe(label, { times, openMs, shownMs }) {
  const f = times.frame ?? {};
  return `${label}: the cell run to the verdict drawn ${openMs} ms, to the whole view shown ${shownMs} ms (render ${Math.round(openMs - times.verdict)} ms after the run; ` +
    `then the page here ${times.page} ms, the wasm ${times.wasm} ms, the view ready ${times.ready} ms, shown ${times.shown} ms, verdict ${times.verdict} ms; ` +
    `in the frame: wasm ready ${f["somatize:wasm-ready"]} ms, verdict ${f["somatize:verdict"]} ms after its start; ` +
    `the store's bytes sent unasked (the listing, the run's files) here ${times.primed?.ms} ms, ${((times.primed?.bytes ?? 0) / 1048576).toFixed(2)} MiB; ` +
    `${times.kernel?.trips ?? 0} round trips to the kernel after, waited on for ${times.kernel?.ms ?? 0} ms in all, ${((times.kernel?.bytes ?? 0) / 1048576).toFixed(2)} MiB)`;
}

/** The store view's checks: every run, the vanishing run judged with VANISHING. */
export async function checkStoreView(frame) {
  await frame.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.widget), null, { timeout: 120000 });
  assert.equal(await frame.evaluate(() => document.body.dataset.widget), "ready", await frame.textContent("#error"));
  await frame.waitForFunction(() => Number(document.getElementById("verdict")?.dataset.judged ?? 0) >= 1, null, { timeout: 60000 });
  assert.equal(await frame.inputValue("#run"), "vanishing");
  const runs = await frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
  assert.deepEqual([...runs].sort(), ["dead_relu", "exploding", "healthy", "overstepping", "saturated", "stalled", "vanishing"]);
  const flags = await frame.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")].map((tr) => tr.children[1].textContent));
  assert.ok(flags.some((f) => f.startsWith("VANISHING")), `the vanishing run raises VANISHING: ${flags}`);
}
