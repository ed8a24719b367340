// The report tests' store and binary: the built-in demo recorded by the CLI, reports written by
// `somatize report`, and the CLI's `--json` answers the pages are checked against.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { drawAll, root } from "./harness.mjs";

/** The binary: $SOMATIZE_BIN, else this repository's release build, else its debug build (built now). */
export function binary() {
  if (process.env.SOMATIZE_BIN) return process.env.SOMATIZE_BIN;
  const release = join(root, "target/release/somatize");
  if (existsSync(release)) return release;
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  return join(root, "target/debug/somatize");
}

/** Run the CLI and give its stdout. */
export const cli = (...args) => execFileSync(binary(), args, { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
/** Run the CLI with `--json` (or a figure, which is JSON) and parse it. */
export const json = (...args) => JSON.parse(cli(...args));

/** A fresh folder under target/js-stores/`name` with the demo trained into `demo/` (300 steps,
 * recorded at steps 0, 150 and 299 to keep it quick in a debug build). */
export function demoStore(name) {
  const dir = join(root, "target/js-stores", name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const store = join(dir, "demo");
  cli("demo", "--store", store, "--every", "150");
  return { dir, store };
}

/** Write the report of `run` to `dir/<run>.html`; its path and file: URL. */
export function writeReport(dir, store, run, ...extra) {
  const path = join(dir, `${run}.html`);
  cli("report", store, "--run", run, "-o", path, ...extra);
  return { path, url: pathToFileURL(path).href };
}

/** What a figure container's traces hold, comparable with the CLI's figure JSON. */
export const tracesOf = (data) => JSON.parse(JSON.stringify(data.map((t) => ({
  type: t.type ?? null, x: t.x ?? null, y: t.y ?? null, cells: t.cells?.values ?? null,
}))));

/** Check, in `frame` (a page or an iframe) showing `run` of `store`, that the runs table (that
 * run's row, or with `everyRun` every run's), the flags, the thresholds and every figure hold
 * what the CLI answers. */
export async function checkViews(assert, frame, store, run, { everyRun = false } = {}) {
  const runs = json("runs", store, "--json").filter((r) => everyRun || r.run === run);
  const shown = await frame.evaluate(() => {
    const table = document.querySelector("#runs-table");
    const cols = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    return [...table.querySelectorAll("tbody tr")].map((tr) => {
      const num = (name) => Number(tr.children[cols.indexOf(name)].querySelector("data").value);
      return { run: tr.children[cols.indexOf("run")].textContent, writers: num("writers"),
        forwards: num("forwards"), broke: num("broke"), took_us: num("took_us") };
    });
  });
  assert.deepEqual(shown, runs.map((r) => ({ run: r.run, writers: r.writers, forwards: r.forwards, broke: r.broke, took_us: r.took_us })),
    "the runs table is `somatize runs --json` for the run");

  const d = json("diagnose", store, "--run", run, "--with-bounds");
  const flags = await frame.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent]));
  assert.deepEqual(flags, Object.entries(d.diagnosis).flatMap(([n, fs]) => fs.map((f) => [n, f])),
    "the flags are `somatize diagnose --json`'s");
  assert.match(await frame.textContent("#verdict-summary"), new RegExp(`Judged over ${d.forwards.count} forwards \\(${d.forwards.first}–${d.forwards.last}\\)`));
  const form = await frame.evaluate(() => Object.fromEntries([...document.querySelectorAll("#thresholds input")]
    .map((i) => [i.name || i.id, Number(i.value)])));
  for (const [name, value] of Object.entries(form)) {
    if (name in d.thresholds) assert.equal(value, d.thresholds[name], `threshold ${name}`);
  }
  assert.ok(Object.keys(form).some((k) => k in d.thresholds), "the thresholds form names the verdict's thresholds");

  await drawAll(frame); // the page draws a figure once it is on screen
  const forward = Number(await frame.inputValue("#forward"));
  const measure = await frame.inputValue("#measure");
  const figures = {
    "fig-progress": ["progress"],
    "fig-profile": ["profile", "--of", measure],
    "fig-flags": ["flags"],
    "fig-overlaid": ["overlaid"],
    "fig-spent": ["spent"],
    "fig-gantt": ["gantt", "--forward", String(forward)],
    "fig-machines": ["machines"],
  };
  for (const [id, [kind, ...opts]] of Object.entries(figures)) {
    const drawn = await frame.evaluate((id) => document.getElementById(id).data, id);
    assert.ok(drawn?.length, `${id} is drawn`);
    assert.deepEqual(tracesOf(drawn), tracesOf(json("figure", kind, store, "--run", run, ...opts).data),
      `${id} holds what \`somatize figure ${kind}\` gives`);
  }
  return d;
}
