// Browser layer, the notebook widget in Notebook 7: `jupyter notebook --no-browser` (the torch
// venv's; scripts/test.sh installs notebook>=7 there) is started on 127.0.0.1 with a copy of
// examples/notebook.ipynb (tests/browser/jupyter-harness.mjs); Chromium runs it as the JupyterLab
// test does (the `somatize.show` cell timed) and the widget renders the store view: every run,
// the vanishing run judged with VANISHING. Screenshot: notebook7-widget.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { launch, shots } from "./harness.mjs";
import { checkStoreView, describe, runNotebookTimed, startJupyter } from "./jupyter-harness.mjs";

let jupyter, browser;
before(async () => {
  jupyter = await startJupyter("notebook", "notebook7-test");
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await jupyter?.stop();
});

test("Notebook 7 runs examples/notebook.ipynb and the somatize.show widget renders the store view", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(jupyter.url);
  const shown = await runNotebookTimed(page);
  console.log(describe("Notebook 7", shown));
  await shown.iframe.scrollIntoViewIfNeeded();
  await checkStoreView(shown.frame);
  await shown.frame.evaluate(() => document.getElementById("store-title").scrollIntoView({ block: "start" }));
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(shots, "notebook7-widget.png") });
  assert.deepEqual(requests.filter((u) => !/^http:\/\/127\.0\.0\.1:\d+\//.test(u) && !/^(data|about|blob):/.test(u)), []);
  await page.close();
});
