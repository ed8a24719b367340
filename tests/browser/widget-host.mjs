// The notebook widget rendered in Chromium without Jupyter (tests/browser/widget.test.mjs and
// scripts/measure-widget.mjs): the widget's module with a stand-in of the anywidget model, whose
// messages reach the real kernel side (tests/browser/widget_kernel.py) over a pipe.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { openPage, root } from "./harness.mjs";
import { binary } from "./report-fixture.mjs";

export const python = process.env.SOMATIZE_PYTHON ?? join(process.env.HOME, ".cache/somatize/torch-venv/bin/python");

/** Write the host page (served by the harness's `serve()` at /target/widget-test/host.html). */
export function writeHost() {
  mkdirSync(join(root, "target/widget-test"), { recursive: true });
  writeFileSync(join(root, "target/widget-test/host.html"), `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>widget host</title></head>
<body><div id="cell"></div>
<script type="module">
import widget from "/python/somatize/_widget/widget.js";
const handlers = new Set();
const events = new Map(); // other events: name -> Set of handlers
const model = {
  state: {},
  get(k) { return this.state[k]; },
  on(ev, f) {
    if (ev === "msg:custom") handlers.add(f);
    else events.set(ev, (events.get(ev) ?? new Set()).add(f));
  },
  off(ev, f) { (ev === "msg:custom" ? handlers : events.get(ev))?.delete(f); },
  send(content, callbacks, buffers) { window.toKernel(JSON.stringify(content)); },
};
window.fromKernel = (content, b64s) => {
  const buffers = b64s.map((b) => {
    const bin = atob(b);
    const u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return new DataView(u.buffer);
  });
  for (const h of [...handlers]) h(content, buffers);
};
// What Jupyter's widget manager does when the kernel restarts (ipywidgets' disconnect(): every
// model's comm_live set false, which triggers "comm_live_update").
window.restartKernel = () => {
  for (const f of [...(events.get("comm_live_update") ?? [])]) f();
};
window.start = (state) => {
  model.state = state;
  return widget.render({ model, el: document.getElementById("cell") }).then(() => true);
};
</script></body></html>`);
}

/** The widget's kernel side for `args`, and a page rendering the widget against it. */
export async function rendered(browser, server, args) {
  const kernel = spawn(python, [join(root, "tests/browser/widget_kernel.py"), join(root, "python"), ...args], {
    cwd: root, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, SOMATIZE_BIN: binary() },
  });
  kernel.stdin.on("error", () => {}); // a kernel killed by a test: what is sent to it is lost
  // The kernel's first line (its state) may come before the page is open: listened to at once.
  const lines = createInterface({ input: kernel.stdout });
  const early = [];
  let onLine = (line) => early.push(line);
  lines.on("line", (line) => onLine(line));
  const { page, seen } = await openPage(browser, `${server.origin}/target/widget-test/host.html`);
  const messages = { toKernel: 0, fromKernel: 0, bytes: 0 };
  await page.exposeFunction("toKernel", (text) => {
    messages.toKernel += 1;
    if (process.env.SOMATIZE_LOG_ASKS) console.error(text.slice(0, 600));
    kernel.stdin.write(`${JSON.stringify({ content: JSON.parse(text) })}\n`);
  });
  let state;
  const figures = [];
  let delivered = Promise.resolve();
  const gotState = new Promise((ok) => {
    onLine = (line) => {
      const msg = JSON.parse(line);
      if (msg.state) return ok((state = msg.state));
      if (msg.figure) return figures.push(msg.figure);
      messages.fromKernel += 1;
      messages.bytes += msg.buffers.reduce((n, b) => n + (b.length * 3) / 4, 0);
      // In order, as a comm delivers them.
      delivered = delivered.then(() => page.evaluate(([c, b]) => window.fromKernel(c, b), [msg.content, msg.buffers]));
    };
    for (const line of early.splice(0)) onLine(line);
  });
  await gotState;
  await page.waitForFunction(() => typeof window.start === "function");
  const t0 = Date.now();
  await page.evaluate((s) => window.start(s), state);
  const frame = await (await page.waitForSelector("iframe.somatize-widget")).contentFrame();
  const framed = Date.now() - t0; // the page arrived and was put in its iframe
  await frame.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset.widget), null, { timeout: 60000 });
  return {
    page, frame, seen, kernel, messages, t0, figures, framed, ready: Date.now() - t0,
    send: (obj) => kernel.stdin.write(`${JSON.stringify(obj)}\n`),
    close: async () => {
      kernel.stdin.end();
      await new Promise((ok) => (kernel.exitCode !== null || kernel.signalCode !== null ? ok() : kernel.on("exit", ok)));
      await page.close();
    },
  };
}

