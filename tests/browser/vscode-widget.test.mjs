// Browser layer, the notebook widget through VS Code's renderer: `@vscode/jupyter-ipywidgets8` (the
// bundle VS Code's Jupyter extension loads into a notebook's webview to render ipywidgets 8: its
// `activate()`, `load()` and `vscIPyWidgets.WidgetManager`, unchanged) renders `somatize.show` in
// headless Chromium. What stands for VS Code is what it gives that bundle: a kernel connection
// (@jupyterlab/services' KernelConnection, as the extension's webview side makes one; here over a
// real kernel's websocket from `jupyter lab`, tests/browser/jupyter-harness.mjs, where VS Code
// relays the same messages through its extension host), require.js, and a widget script loader
// that hands require.js the kernel environment's nbextension of a widget module the bundle does
// not hold (anywidget's `share/jupyter/nbextensions/anywidget/index.js`, as VS Code finds it for a
// local kernel). The kernel runs `somatize.show(store, "vanishing")`; its display_data's model is
// rendered as VS Code's renderer renders one (`get_model`, `create_view`, `display_view`), and the
// view draws the demo store's runs, verdict and figures as the CLI answers them.
// Screenshot: vscode-widget.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "vite";
import { launch, root, shots } from "./harness.mjs";
import { startJupyter, venv } from "./jupyter-harness.mjs";
import { checkViews, demoStore, json } from "./report-fixture.mjs";

const out = join(root, "target/vscode-widget");
const modules = join(root, "node_modules");
let jupyter, browser, store;

/** @jupyterlab/services' kernel connection and server settings as one browser module (VS Code's
 * webview side bundles the same package into its own script). */
async function bundleServices() {
  mkdirSync(out, { recursive: true });
  await build({
    root: out, configFile: false, logLevel: "error",
    build: {
      outDir: join(out, "dist"), emptyOutDir: true, minify: false,
      lib: { entry: join(root, "tests/browser/vscode-services.js"), formats: ["es"], fileName: "services" },
    },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  return readFileSync(join(out, "dist/services.js"), "utf8");
}

before(async () => {
  ({ store } = demoStore("vscode-widget"));
  jupyter = await startJupyter("lab", "vscode-widget-test");
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await jupyter?.stop();
});

/** The webview's page: require.js, the ipywidgets 8 bundle, the kernel connection, the renderer. */
const page = (token) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>VS Code's ipywidgets 8 renderer, stood in for</title>
<script src="require.js"></script></head>
<body><div id="cell" style="width: 1200px"></div>
<script type="module">
import { activate } from "./ipywidgets.js";
import { KernelConnection, ServerConnection } from "./services.js";
const log = (window.log = []);
try {
  // What the extension's webview does with the bundle: activate, load (defines the AMD modules
  // @jupyter-widgets/base, controls and output in require.js), then a WidgetManager per kernel.
  activate();
  window.vscIPyWidgets8.load();
  const token = ${JSON.stringify(token)};
  const serverSettings = ServerConnection.makeSettings({ baseUrl: location.origin + "/", wsUrl: "ws://" + location.host + "/", token, appendToken: true });
  const made = await fetch("/api/kernels", { method: "POST", headers: { Authorization: "token " + token }, body: JSON.stringify({ name: "python3" }) });
  if (!made.ok) throw new Error("no kernel: " + made.status);
  const kernel = new KernelConnection({ model: await made.json(), serverSettings, handleComms: true });
  window.kernel = kernel;
  // The widget script loader: a module the bundle does not hold is looked for in the kernel's
  // environment (its nbextensions), as VS Code does for a local kernel.
  const scriptLoader = {
    widgetsRegisteredInRequireJs: new Set(),
    async loadWidgetScript(moduleName, version) {
      log.push("load " + moduleName + "@" + version);
      window.requirejs.config({ paths: { [moduleName]: "nbextensions/" + moduleName + "/index" } });
      this.widgetsRegisteredInRequireJs.add(moduleName);
    },
    successHandler(className, moduleName, version) { log.push("loaded " + className + " of " + moduleName + "@" + version); },
    errorHandler(className, moduleName, version, error) { log.push("failed " + className + " of " + moduleName + ": " + error); },
  };
  const cell = document.getElementById("cell");
  const manager = new window.vscIPyWidgets.WidgetManager(kernel, cell, scriptLoader, (m) => log.push(m), undefined);
  // The cell: its display_data's widget view rendered as VS Code's renderer renders one.
  const future = kernel.requestExecute({ code: window.cellCode, store_history: false });
  future.onIOPub = async (msg) => {
    const view = msg.content?.data?.["application/vnd.jupyter.widget-view+json"];
    if (msg.header.msg_type === "error") log.push("error " + msg.content.ename + ": " + msg.content.evalue);
    if (!view) return;
    try {
      const model = await manager.get_model(view.model_id);
      const v = await manager.create_view(model, { el: cell });
      await manager.display_view(undefined, v, { node: cell });
      document.body.dataset.rendered = "true";
    } catch (e) {
      log.push("render failed: " + e.message);
      document.body.dataset.rendered = "failed";
    }
  };
} catch (e) {
  log.push("failed: " + e.message);
  document.body.dataset.rendered = "failed";
}
</script></body></html>`;

test("VS Code's ipywidgets 8 renderer (@vscode/jupyter-ipywidgets8) renders somatize.show: the demo store's verdict as the CLI answers", async () => {
  const services = await bundleServices();
  // The webview's page is a file of the server's (its kernel websocket checks the page's origin,
  // and Chromium lets only a page from a local address open a local one); what it loads beside
  // it is handed over by the test, as VS Code hands its webview the extension's files.
  const dir = "somatize-vscode";
  mkdirSync(join(root, "target/vscode-widget-test/examples", dir), { recursive: true });
  writeFileSync(join(root, "target/vscode-widget-test/examples", dir, "index.html"), page(jupyter.token));
  const base = `http://127.0.0.1:${jupyter.port}/files/${dir}/`;
  const files = {
    "require.js": ["text/javascript", readFileSync(join(modules, "requirejs/require.js"))],
    "ipywidgets.js": ["text/javascript", readFileSync(join(modules, "@vscode/jupyter-ipywidgets8/dist/ipywidgets.js"))],
    "services.js": ["text/javascript", services],
    "nbextensions/anywidget/index.js": ["text/javascript", readFileSync(join(venv, "share/jupyter/nbextensions/anywidget/index.js"))],
  };
  const p = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests = [];
  p.on("request", (r) => requests.push(r.url()));
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  const consoled = [];
  p.on("console", (m) => consoled.push(`${m.type()}: ${m.text()}`));
  // The webview's files, on the server's origin (its kernel websocket checks the origin).
  await p.route((url) => url.href.startsWith(base) && url.pathname.slice(`/files/${dir}/`.length) in files, (route) => {
    const [type, body] = files[new URL(route.request().url()).pathname.slice(`/files/${dir}/`.length)];
    return route.fulfill({ status: 200, contentType: type, body });
  });
  await p.addInitScript((code) => (window.cellCode = code), `import somatize\nsomatize.show(${JSON.stringify(store)}, "vanishing")`);
  await p.goto(`${base}index.html?token=${jupyter.token}`);
  await p.waitForFunction(() => document.body.dataset.rendered, null, { timeout: 120000 }).catch(async (e) => {
    throw new Error(`${e.message}\n${(await p.evaluate(() => window.log)).join("\n")}\n${errors.join("\n")}\n${consoled.join("\n")}`);
  });
  const log = await p.evaluate(() => window.log);
  assert.equal(await p.evaluate(() => document.body.dataset.rendered), "true", `${log.join("\n")}\n${errors.join("\n")}`);
  // anywidget's model came from the kernel environment's nbextension (the bundle does not hold it).
  assert.ok(log.some((l) => l.startsWith("load anywidget")), log.join("\n"));
  const iframe = await p.waitForSelector("iframe.somatize-widget", { timeout: 120000, state: "attached" });
  const frame = await iframe.contentFrame();
  await frame.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.widget), null, { timeout: 120000 });
  assert.equal(await frame.evaluate(() => document.body.dataset.widget), "ready", await frame.textContent("#error"));
  await frame.waitForFunction(() => Number(document.getElementById("verdict")?.dataset.judged ?? 0) >= 1, null, { timeout: 120000 });
  assert.equal(await frame.inputValue("#run"), "vanishing");
  const runs = await frame.evaluate(() => [...document.querySelectorAll("#runs-table tbody tr")].map((tr) => tr.children[0].textContent));
  assert.deepEqual([...runs].sort(), json("runs", store, "--json").map((r) => r.run).sort(), "every run, as `somatize runs --json`");
  await checkViews(assert, frame, store, "vanishing", { everyRun: true });
  await iframe.scrollIntoViewIfNeeded();
  await frame.evaluate(() => document.getElementById("verdict-section").scrollIntoView({ block: "start" }));
  await p.screenshot({ path: join(shots, "vscode-widget.png") });
  // Nothing asked of any host but the kernel's server.
  assert.deepEqual(requests.filter((u) => !/^(http|ws):\/\/127\.0\.0\.1:\d+\//.test(u) && !/^(data|about|blob):/.test(u)), []);
  assert.deepEqual(errors, []);
  await p.evaluate(() => window.kernel.shutdown());
  await p.close();
});
