// Measure the notebook widget against issue 22's targets and print the numbers:
//   - what it adds to the wheel: python/somatize/_widget/ (the gzipped page and wasm, the module)
//     and python/somatize/widget.py, deflated as a wheel (a zip) stores them (< 1.5 MB target);
//   - the time from rendering `somatize.show(demo store)` to its verdict shown (< 1 s target),
//     in headless Chromium with the stand-in anywidget model of tests/browser/widget-host.mjs
//     (the real kernel side over a pipe), ROUNDS times (default 5): medians and each round (what
//     a Jupyter user sees is measured by tests/browser/jupyter.test.mjs and notebook7.test.mjs);
//   - a `Live` widget pushed 100 forwards a second for 10 s: the browser's main-thread time
//     (CDP Performance.getMetrics TaskDuration, the page and its iframe) as a share of one core
//     (< 5 % target); the stand-in's own relaying (an evaluate per message) is counted in it.
// Run `scripts/build-wasm.sh` and `scripts/build-widget.sh` first (the packaged page is used).
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { launch, root, serve } from "../tests/browser/harness.mjs";
import { demoStore } from "../tests/browser/report-fixture.mjs";
import { python, rendered, writeHost } from "../tests/browser/widget-host.mjs";

const page = join(root, "python/somatize/_widget/page.html.gz");
if (!existsSync(page)) throw new Error(`${page} is missing: run scripts/build-widget.sh`);
const files = ["python/somatize/_widget/page.html.gz", "python/somatize/_widget/page.wasm.gz", "python/somatize/_widget/widget.js", "python/somatize/widget.py"];
const zipped = Number(execFileSync(python, ["-c", `
import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    for f in sys.argv[1:]:
        z.write(f)
print(len(buf.getvalue()))`, ...files], { cwd: root, encoding: "utf8" }).trim());
for (const f of files) console.log(`${f}: ${statSync(join(root, f)).size} bytes`);
console.log(`wheel growth (these files deflated, as a wheel stores them): ${(zipped / 1e6).toFixed(2)} MB (target < 1.5 MB)`);

const rounds = Number(process.env.ROUNDS ?? 5);
const { store } = demoStore("widget-measure");
writeHost();
const server = await serve();
const browser = await launch();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const got = { framed: [], ready: [], verdict: [], asks: [] };
try {
  for (let i = 0; i < rounds; i++) {
    const w = await rendered(browser, server, ["show", store, "vanishing"]);
    await w.frame.waitForFunction(() => Number(document.getElementById("verdict")?.dataset.judged ?? 0) >= 1, null, { timeout: 60000 });
    const verdict = Date.now() - w.t0;
    got.framed.push(w.framed);
    got.ready.push(w.ready);
    got.verdict.push(verdict);
    got.asks.push(w.messages.toKernel);
    const times = JSON.parse(await w.page.evaluate(() => document.getElementById("cell").dataset.somatizeTimes ?? "{}"));
    console.log(`round ${i + 1}: page in its iframe ${w.framed} ms, view ready ${w.ready} ms, verdict shown ${verdict} ms; ${w.messages.toKernel} messages to the kernel, ${(w.messages.bytes / 1048576).toFixed(2)} MiB from it; the widget's marks ${JSON.stringify(times)}`);
    await w.close();
  }
  const w = await rendered(browser, server, ["live", "live at 100 forwards a second", "10"]);
  const cdp = await w.page.context().newCDPSession(w.page);
  await cdp.send("Performance.enable");
  const busy = async () => (await cdp.send("Performance.getMetrics")).metrics.find((m) => m.name === "TaskDuration").value;
  const fact = (n) => ({ facts: [{ node: "fc", kind: "Linear", began_us: 0, took_us: 100 + (n % 7) }, { node: "loss", kind: "loss", value: 1 / (n + 1) }] });
  for (let n = 0; n < 200; n++) w.send(fact(n)); // a history before measuring
  await new Promise((ok) => setTimeout(ok, 2000));
  const b0 = await busy();
  const t0 = Date.now();
  let n = 200;
  while (Date.now() - t0 < 10000) {
    const due = 200 + Math.floor(((Date.now() - t0) / 1000) * 100);
    while (n < due) w.send(fact(n++));
    await new Promise((ok) => setTimeout(ok, 10));
  }
  const seconds = (Date.now() - t0) / 1000;
  const cpu = (await busy()) - b0;
  await w.frame.waitForFunction((n) => Number(document.getElementById("fig-live")?.dataset.forwards) === n, n, { timeout: 20000 });
  console.log(`Live at ${((n - 200) / seconds).toFixed(0)} forwards a second for ${seconds.toFixed(1)} s: the browser's main thread busy ${(100 * cpu / seconds).toFixed(1)} % of one core (target < 5 %), ${n} forwards drawn`);
  await w.close();
} finally {
  await browser.close();
  server.server.close();
}
console.log(`median of ${rounds}: page in its iframe ${median(got.framed)} ms, view ready ${median(got.ready)} ms, demo verdict shown ${median(got.verdict)} ms after render (target < 1000 ms)`);
