// Browser layer, the notebook widget in a real JupyterLab: `jupyter lab --no-browser` (the torch
// venv's, where scripts/test.sh installs jupyterlab and anywidget) is started on 127.0.0.1 with a
// copy of examples/notebook.ipynb (tests/browser/jupyter-harness.mjs); Chromium runs the cells above
// the `somatize.show` cell, then that cell, timed from its run to the verdict drawn (the open time
// of docs/notebooks.md, printed), then the rest. The widget renders the store view (its iframe, the
// vanishing run judged, VANISHING among the flags as `somatize diagnose --json` says); run again, it
// opens from the page and wasm this window already has; a kernel restarted under it makes it say
// that the kernel went away. Screenshot: jupyterlab-widget.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { launch, shots } from "./harness.mjs";
import { checkStoreView, describe, rerunShowCell, runNotebookTimed, startJupyter } from "./jupyter-harness.mjs";

let jupyter, browser;
before(async () => {
  jupyter = await startJupyter("lab", "jupyter-test");
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await jupyter?.stop();
});

test("JupyterLab runs examples/notebook.ipynb and the somatize.show widget renders the store view", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(jupyter.url);
  const first = await runNotebookTimed(page);
  console.log(describe("JupyterLab, first view", first));
  await first.iframe.scrollIntoViewIfNeeded();
  await checkStoreView(first.frame);
  // The screenshot: the verdict inside the widget (JupyterLab's news question dismissed).
  await page.getByRole("button", { name: "No", exact: true }).click({ timeout: 2000 }).catch(() => {});
  await page.evaluate(() => window.jupyterapp.commands.execute("application:toggle-left-area"));
  await first.frame.evaluate(() => document.getElementById("store-title").scrollIntoView({ block: "start" }));
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(shots, "jupyterlab-widget.png") });
  // Run again: the page and wasm are this window's already.
  const again = await rerunShowCell(page, first.showIndex);
  console.log(describe("JupyterLab, the cell run again", again));
  // Nothing left 127.0.0.1: no CDN, no network.
  assert.deepEqual(requests.filter((u) => !/^http:\/\/127\.0\.0\.1:\d+\//.test(u) && !/^(data|about|blob):/.test(u)), []);
  // The kernel restarted under the view: it says so at once.
  await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel.restart());
  await page.waitForFunction(() => [...document.querySelectorAll(".somatize-widget-status")]
    .some((p) => p.textContent.includes("the kernel went away")), null, { timeout: 30000 });
  await page.close();
});
