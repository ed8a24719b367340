// Browser layer, the page's health views over a store written by `somatize record`: the flags
// table lists the alerts (one per fault, with its first forward, evidence, what it explains
// and advice), as `somatize diagnose` prints them; `where` as a table and a node's
// measurement over the run (`history`) as a figure hold what the package and the CLI say.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { servedBrowser, openPage, shots, drawAll } from "./harness.mjs";
import { makeStores, cli } from "../node/store-fixture.mjs";

/** Bounds at which the recorded MLP (fc1 → relu → fc2) raises one fault: OVERSTEPPING rooted at
 * fc1, with fc2's overstepping and the dead ReLU it explains folded under it; every update is
 * judged too big and every ReLU layer dead, on every forward, so each holds for the whole run. */
const BOUNDS = { overstepping_update_ratio: 0, dead_layer_fraction: -1, persist_window: 2, persist_count: 1 };

let origin, browser, close, s, node, boundsFile;

before(async () => {
  s = makeStores("health");
  node = await openStore(s.store);
  boundsFile = join(s.dir, "bounds.json");
  writeFileSync(boundsFile, JSON.stringify(BOUNDS));
  ({ origin, browser, close } = await servedBrowser());
});
after(async () => {
  await node?.close();
  await close?.();
});

const somatize = (...args) => execFileSync(cli, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** `somatize diagnose` as a person reads it: [node, flag, since, advice] per row of its table. */
function cliAlerts(run) {
  const text = somatize("diagnose", s.store, "--run", run, "--thresholds", boundsFile);
  const lines = text.split("\n");
  const head = lines.findIndex((l) => /^\s+node\s+flag\s+since\s+until\s+held\s+what to do$/.test(l));
  assert.ok(head > 0, `a table in:\n${text}`);
  // A fault's row, then its evidence ("taken on:") and what it explains ("explains:").
  const row = /^\s+\S+\s{2,}\S+\s{2,}\d+\s{2,}\d+\s{2,}\d+\/\d+\s{2,}/;
  return lines.slice(head + 1).filter((l) => row.test(l)).map((l) => {
    const [n, flag, since, , , ...advice] = l.trim().split(/\s{2,}/);
    return [n, flag, Number(since), advice.join("  ")];
  });
}

async function openAt(run) {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(s.url("store/"))}`);
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForSelector("#fig-history[data-drawn=true], #fig-history[data-drawn=waiting]");
  if ((await page.inputValue("#run")) !== run) {
    await page.selectOption("#run", run);
    await page.waitForFunction((r) => document.querySelector("#status").textContent.startsWith(`Showing run ${r}`), run);
  }
  for (const [name, value] of Object.entries(BOUNDS)) await page.fill(`#t-${name}`, String(value));
  await page.waitForFunction(() => document.querySelector("#flags-table"));
  const alerts = cliAlerts(run);
  await page.waitForFunction(([n, nodes]) => document.querySelectorAll("#flags-table tbody tr").length === n &&
    document.querySelectorAll("#where-table tbody tr").length === nodes, [alerts.length, new Set(alerts.map(([n]) => n)).size]);
  return { page, seen };
}

/** The flags table as [node, flag, since, advice]. */
const flagsShown = (page) => page.evaluate(() => [...document.querySelectorAll("#flags-table tbody tr")].map((tr) => {
  const cols = [...document.querySelectorAll("#flags-table thead th")].map((th) => th.textContent);
  const cell = (name) => tr.children[cols.indexOf(name)];
  return [cell("Node").textContent, cell("Flag").textContent, Number(cell("Since forward").querySelector("data").value),
    cell("What to do").textContent];
}));

test("the flags table lists one row per fault, as the CLI prints them", async () => {
  const run = "mlp";
  const { page, seen } = await openAt(run);
  const shown = await flagsShown(page);
  assert.deepEqual(shown, cliAlerts(run));
  // One row per fault: OVERSTEPPING at fc1 (where it starts), fc2's overstepping and the dead
  // ReLU it explains folded under it.
  // The diagnosis (the faults' roots) keeps the nodes' declaration order (fc1, relu, fc2).
  const flagged = ["fc1", "relu", "fc2"].filter((n) => shown.some(([m]) => m === n));
  assert.deepEqual(shown.map(([n, f]) => [n, f]), [["fc1", "OVERSTEPPING"]]);
  const alerts = await node.alerts({ run, thresholds: BOUNDS });
  const over = alerts.find((a) => a.flag === "OVERSTEPPING");
  assert.ok(over.folded.some((f) => f.startsWith("OVERSTEPPING at fc2")), `${over.folded}`);
  // How sure and what it explains are on the page, as the package says them.
  const cells = await page.evaluate(() => {
    const cols = [...document.querySelectorAll("#flags-table thead th")].map((th) => th.textContent);
    return [...document.querySelectorAll("#flags-table tbody tr")].map((tr) => ({
      flag: tr.children[cols.indexOf("Flag")].textContent,
      sure: tr.children[cols.indexOf("Taken on")].textContent,
      explains: tr.children[cols.indexOf("Explains")].textContent,
    }));
  });
  const row = cells.find((c) => c.flag === "OVERSTEPPING");
  assert.match(row.sure, new RegExp(`held on ${over.window[0]} of the last ${over.window[1]} forwards measured`));
  assert.match(row.sure, /update_ratio/, "the evidence names the metric it was taken on");
  assert.match(row.explains, /OVERSTEPPING at fc2/);
  assert.match(row.explains, /DEAD at relu/);
  const json = JSON.parse(somatize("diagnose", s.store, "--run", run, "--thresholds", boundsFile, "--with-bounds"));
  assert.deepEqual(Object.keys(json.diagnosis), flagged, "diagnose --json writes its nodes in that order too");
  assert.deepEqual([...(await node.diagnose({ run, thresholds: BOUNDS })).keys()], flagged, "and so does the package");
  assert.deepEqual(shown.map(([n, f, since]) => [n, f, since]),
    (await node.alerts({ run, thresholds: BOUNDS })).map((a) => [a.node, a.flag, a.first_forward]));
  await page.locator("#verdict-section").screenshot({ path: join(shots, "store-alerts.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});

test("where is a table of the verdict folded onto the nodes; history draws a node's measurement", async () => {
  const run = "mlp";
  const { page, seen } = await openAt(run);
  const where = await page.evaluate(() => [...document.querySelectorAll("#where-table tbody tr")]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent.split(", ")]));
  assert.deepEqual(where, [...(await node.where({ run, thresholds: BOUNDS }))]);
  const json = JSON.parse(somatize("diagnose", s.store, "--run", run, "--thresholds", boundsFile, "--with-bounds"));
  assert.deepEqual(where, Object.entries(json.diagnosis), "no flag from inside a node: where is the diagnosis");

  const cliSeen = JSON.parse(somatize("seen", s.store, "--run", run, "--json"));
  assert.deepEqual(await page.locator("#history-node option").allTextContents(), Object.keys(cliSeen),
    "the nodes offered, in declaration order");
  const drawn = () => page.evaluate(() => {
    const t = document.getElementById("fig-history").data[0];
    return { x: [...t.x], y: [...t.y] };
  });
  for (const [n, of] of [["fc1", "grad_norm"], ["fc2", "update_ratio"], ["relu", "dead_unit_fraction"]]) {
    await page.selectOption("#history-node", n);
    await page.selectOption("#history-of", of);
    await page.locator("#fig-history").scrollIntoViewIfNeeded();
    await page.waitForFunction(([n, of]) => document.querySelector("#fig-history .gtitle")?.textContent.startsWith(`${of} of ${n} `), [n, of]);
    const pairs = await node.history({ run, node: n, of });
    assert.deepEqual(await drawn(), { x: pairs.map((p) => p[0]), y: pairs.map((p) => p[1]) }, `${n} ${of}`);
    const forwards = JSON.parse(somatize("diagnose", s.store, "--run", run, "--with-bounds")).forwards;
    // One point per forward judged that has it (an update ratio needs the forward before).
    assert.ok(pairs.length >= forwards.count - 1 && pairs.length <= forwards.count, `${n} ${of}: ${pairs.length} points`);
    assert.ok(pairs.every(([f]) => f >= forwards.first && f <= forwards.last), `${n} ${of}: within the forwards judged`);
    assert.equal(pairs.at(-1)[1], cliSeen[n][of], `${n} ${of}: the last point is what seen --json says`);
  }
  await drawAll(page);
  await page.locator("#store-figures").screenshot({ path: join(shots, "store-where-history.png") });
  assert.deepEqual(seen.errors, []);
  await page.close();
});
