// The ONE place the page talks to a store and to the package's worker: adjust names here at merge.
//
// Expected of the package (issue 8): `openStore(source)` → a Store whose methods return Promises
// and whose errors carry the core's message; `store.call(name, options)` for any store function
// of the core, or a method of that name; `background.tensorStats(blob, name)` in the worker.
import * as pkg from "../pkg/browser.js";

/** Thrown when the package has no store access (yet): the page says so instead of failing. */
export class NoStoreSupport extends Error {}

/** Whether this build of the package can open stores. */
export const canOpenStores = () => typeof pkg.openStore === "function";

/** Open a store from a URL, a snapshot File, dropped files, a FileSystemDirectoryHandle. */
export async function openStore(source, options = {}) {
  if (!canOpenStores()) {
    throw new NoStoreSupport("This build of the somatize package cannot open stores yet (openStore is missing); tensor files work.");
  }
  return pkg.openStore(source, options);
}

let skippedListener = () => {};
/** Be told what a store answer left out (`skipped`: messages naming run, writer and line). */
export function onSkipped(f) {
  skippedListener = f;
}

/** Call store function `name` with an options object (a method of that name if the Store has
 * one); an answer `{rows, skipped}` gives its rows, and what it skipped goes to the listener. */
async function call(store, name, options = {}) {
  const got = await (typeof store[name] === "function" ? store[name](options) : store.call(name, options));
  if (got && typeof got === "object" && "rows" in got && Array.isArray(got.skipped)) {
    if (got.skipped.length) skippedListener(name, got.skipped);
    return got.rows;
  }
  return got;
}

/** Every run: [{run, forwards, …}] (rows shown as they come; a list of names becomes rows). */
export async function runs(store) {
  const got = await call(store, "runs");
  return (Array.isArray(got) ? got : got?.runs ?? []).map((r) => (typeof r === "string" ? { run: r } : r));
}

/**
 * Every run at a glance, newest last: `[{run, healthy, flags: [{flag, node, since, advice}],
 * final, best, forwards, broke, writers, first_written_us, last_written_us, took_us,
 * mean_took_us, ended_ok, from}]` (the package's `compare`). `lazy`: a run without a summary
 * in the store is not judged (`healthy: null`); `runs`: a glob. A package without `compare`
 * gives the `runs` rows, not judged.
 */
export async function compare(store, options = {}) {
  if (typeof store.compare !== "function") {
    return (await runs(store)).map((r) => ({ healthy: null, flags: [], ...r, from: "index" }));
  }
  return call(store, "compare", options);
}

/** A run's forwards (index rows, oldest first): [{forward, …}]. */
export async function forwards(store, run) {
  const got = await call(store, "forwards", { run });
  return Array.isArray(got) ? got : got?.rows ?? [];
}

/** The last `n` forwards of a run (index rows, oldest first), as `forwards` gives them: one
 * read of the index's end, however long the run. */
export async function lastForwards(store, run, n) {
  const got = await store.call("scan", { run, last: n });
  return (got?.rows ?? []).map(({ fields, ...row }) => ({ ...row, ...(fields ?? {}) }));
}

/** The latest of each metric of every node (over the `last` forwards): `{node: {metric: value}}`. */
export function seen(store, run, last) {
  return call(store, "seen", { run, last });
}

/**
 * The verdict on a run (its `last` forwards) at `thresholds` (`{name: value}`), as
 * `{verdict: {node: [flag]}, thresholds, forwards: {count, first, last}}`: the package's
 * `diagnosed` answers `{run, forwards, diagnosis, thresholds}`, the thresholds being those the
 * verdict was taken at (its `diagnose` is the seed's bare `{where: [flags]}`, a Map).
 */
export async function diagnose(store, run, thresholds, last) {
  const got = await call(store, typeof store.diagnosed === "function" ? "diagnosed" : "diagnose", { run, thresholds, last });
  const verdict = got?.diagnosis ?? got?.verdict ?? got?.where ?? got;
  return { verdict, thresholds: got?.thresholds ?? thresholds, forwards: got?.forwards };
}

/** What is wrong, loudly, in the verdict's order: `[{node, flag, first_forward, means, advice}]`. */
export function alerts(store, run, thresholds, last) {
  return call(store, "alerts", { run, thresholds, last });
}

/** The verdict folded onto the graph's nodes, in declaration order: `[[node, [flag, …]]]`. */
export async function where(store, run, thresholds, last) {
  const got = await call(store, "where", { run, thresholds, last });
  return got instanceof Map ? [...got] : Object.entries(got ?? {});
}

/**
 * What a threshold edit asks, in one call when the package has `judge` (one read of the run,
 * one verdict): `{diagnose, alerts, where, profile, flags, overlaid}`, each as `diagnose`,
 * `alerts`, `where` and `figure` here give it (`of`: the profile's measurement). A package
 * without `judge` is asked the six questions at once instead. Each part is `{ok}` or `{error}`.
 */
export async function judge(store, run, thresholds, last, of) {
  if (typeof store.judge !== "function") {
    const [d, a, w, profile, flags, overlaid] = await Promise.all([
      diagnose(store, run, thresholds, last), alerts(store, run, thresholds, last), where(store, run, thresholds, last),
      figure(store, "profile", { run, of, thresholds, last }), figure(store, "flags", { run, thresholds, last }),
      figure(store, "overlaid", { run, thresholds, last }),
    ].map((p) => p.then((ok) => ({ ok }), (error) => ({ error }))));
    return { diagnose: d, alerts: a, where: w, profile, flags, overlaid };
  }
  let got;
  try {
    got = await store.judge({ run, thresholds, last, of });
  } catch (error) {
    return Object.fromEntries(["diagnose", "alerts", "where", "profile", "flags", "overlaid"].map((k) => [k, { error }]));
  }
  for (const name of ["profile", "flags", "overlaid"]) {
    if (got[name]?.skipped?.length) skippedListener(name, got[name].skipped);
  }
  const d = got.diagnose;
  return {
    diagnose: { ok: { verdict: d?.diagnosis, thresholds: d?.thresholds ?? thresholds, forwards: d?.forwards } },
    alerts: { ok: got.alerts },
    where: { ok: Object.entries(got.where ?? {}) },
    profile: { ok: got.profile },
    flags: { ok: got.flags },
    overlaid: { ok: got.overlaid },
  };
}

/** One node's measurement `of` over the run's forwards (the `last` of them): `[[forward, value]]`. */
export function history(store, run, node, of, last) {
  return call(store, "history", { run, node, of, last });
}

/**
 * Plotly figure JSON `{data, layout}` of figure `name`, with its options: progress {run, of, smooth},
 * spent/machines {run, last}, gantt {run, forward}, profile {run, of, thresholds, last},
 * flags/overlaid {run, thresholds, last}, compare {runs: [names] | glob, of, ema | smooth, x,
 * logY, groupBy}. The package's `store.figure({kind, …})` answers
 * `{data, layout, skipped}`.
 */
export async function figure(store, name, options) {
  const got = typeof store.figure === "function"
    ? await store.figure({ kind: name, ...options })
    : await call(store, name, options);
  if (Array.isArray(got?.skipped) && got.skipped.length) skippedListener(name, got.skipped);
  return got;
}

/** Statistics of a tensor file, in the package's worker when it has one (the page stays responsive). */
export async function tensorStats(file) {
  if (pkg.background?.tensorStats) return pkg.background.tensorStats(file, file.name);
  return pkg.tensorStats(new Uint8Array(await file.arrayBuffer()), file.name);
}

/** See files written since (a folder being followed live); `{unchanged: true}` when the package
 * could tell that nothing it read changed (a directory handle's store). */
export function refresh(store) {
  return typeof store.refresh === "function" ? store.refresh() : Promise.resolve();
}
