// One tensor file (.pt/.pth/.npz/.npy/.safetensors): per-tensor statistics and the flags it can show.
import { verdict } from "../pkg/browser.js";
import { el, fill, table } from "./dom.js";
import { judgeable } from "./flags.js";
import { numData, pct, shape } from "./format.js";

/** Names a tensor file can have. */
export const TENSOR_FILE = /\.(pt|pth|npz|npy|safetensors)$/i;

/** The role (`param`, `grad`, `act`, `loss`, or `tensor`) and node a key belongs to. */
export function nodeOf(key) {
  const m = /^(param|grad|act)\.(.+)$/.exec(key);
  if (!m) return key === "loss" ? { role: "loss", node: "loss" } : { role: "tensor", node: key };
  const [, role, rest] = m;
  // Parameters and gradients are `<node>.<parameter>`; activations are the node's own output.
  const cut = role === "act" ? -1 : rest.lastIndexOf(".");
  return { role, node: cut > 0 ? rest.slice(0, cut) : rest };
}

/** Sums over one role's tensors of a node. */
function sums(list) {
  let finite = 0, l1 = 0, l2sq = 0, absmax = 0, zeros = 0, total = 0;
  for (const s of list) {
    const f = s.count - s.nonfinite;
    finite += f;
    total += s.mean !== undefined ? s.mean * f : 0;
    l1 += s.l1 ?? 0;
    l2sq += (s.l2 ?? 0) ** 2;
    absmax = Math.max(absmax, s.absmax ?? 0);
    zeros += (s.zero_fraction ?? 0) * f;
  }
  return { finite, l1, l2: Math.sqrt(l2sq), absmax, zeros, total };
}

/**
 * What one picture of the file says per node, in the vocabulary of the verdict: nan and inf
 * counts over every tensor; param_norm, param_absmax, param_mean_abs over `param.*`;
 * grad_norm, grad_mean_abs, grad_zero_fraction, grad_nonfinite over `grad.*`; act_mean,
 * act_zero_fraction over `act.*`; the loss. Nodes keep the file's order.
 */
export function seenOf(stats) {
  const nodes = new Map();
  for (const [key, s] of Object.entries(stats)) {
    const { role, node } = nodeOf(key);
    if (!nodes.has(node)) nodes.set(node, { param: [], grad: [], act: [], loss: [], tensor: [] });
    nodes.get(node)[role].push(s);
  }
  return [...nodes].map(([name, by]) => {
    const all = Object.values(by).flat();
    const nan = all.reduce((a, s) => a + s.nan, 0);
    const metrics = { nan, inf: all.reduce((a, s) => a + s.nonfinite - s.nan, 0) };
    metrics.nonfinite = metrics.nan + metrics.inf;
    // The gradients' share, which tells the verdict a NaN the backward carried from one the
    // forward made (verdict/src/judge.rs `origin`).
    if (by.grad.length) metrics.grad_nonfinite = by.grad.reduce((a, s) => a + s.nonfinite, 0);
    const put = (prefix, list) => {
      if (!list.length) return;
      const t = sums(list);
      if (prefix === "param" || prefix === "grad") {
        metrics[`${prefix}_norm`] = t.l2;
        if (t.finite > 0) metrics[`${prefix}_mean_abs`] = t.l1 / t.finite;
      }
      if (prefix === "param") metrics.param_absmax = t.absmax;
      if (prefix === "grad" && t.finite > 0) metrics.grad_zero_fraction = t.zeros / t.finite;
      if (prefix === "act" && t.finite > 0) {
        metrics.act_mean = t.total / t.finite;
        metrics.act_zero_fraction = t.zeros / t.finite;
      }
    };
    put("param", by.param);
    put("grad", by.grad);
    put("act", by.act);
    const loss = by.loss[0];
    if (loss && loss.count === 1 && loss.nonfinite === 0) metrics.loss = loss.mean;
    return { name, kind: "", metrics };
  });
}

/** The statistics table. */
export function statsTable(stats) {
  const rows = Object.entries(stats).map(([key, s]) => ({ key, ...s }));
  const n = (key) => ({ key, label: key, numeric: true, cell: (r) => numData(r[key]) });
  return table(`${rows.length} tensor${rows.length === 1 ? "" : "s"}`, [
    { key: "key", label: "key" },
    { key: "shape", label: "shape", cell: (r) => shape(r.shape) },
    { key: "dtype", label: "dtype" },
    n("count"), n("nonfinite"), n("nan"), n("l2"), n("mean"), n("std"), n("min"), n("max"), n("absmax"),
    { key: "zero_fraction", label: "zero_fraction", numeric: true, cell: (r) => {
      const d = numData(r.zero_fraction);
      d.textContent = pct(r.zero_fraction);
      return d;
    } },
  ], rows, { id: "stats-table", class: "stats" });
}

/** The verdict over one file's picture at `thresholds`; throws the core's error for bad thresholds. */
export function judgeFile(seen, thresholds) {
  return verdict(seen, thresholds);
}

/** The per-node picture that was judged, as a table: one row per node, one column per metric. */
export function seenTable(seen) {
  const metrics = [...new Set(seen.flatMap((n) => Object.keys(n.metrics)))];
  return table("What was judged, per node", [
    { key: "name", label: "node" },
    ...metrics.map((m) => ({ key: m, label: m, numeric: true, cell: (n) => numData(n.metrics[m]) })),
  ], seen, { id: "seen-table", class: "stats" });
}

/** What the file lets one judge: which flags, from which tensors, and what the rest would need. */
export function judgeableNote(container, seen) {
  const have = new Set(seen.flatMap((n) => Object.keys(n.metrics)));
  const { judged, not } = judgeable(have);
  const grads = have.has("grad_norm");
  fill(container,
    el("p", {}, grads
      ? "This file holds gradients as well as weights: "
      : "From weights alone only broken numbers can be judged: ",
    "judged here: ", el("strong", { id: "judged-flags" }, judged.join(", ")), "."),
    el("details", {}, el("summary", {}, `Not judged from this file (${not.length} flags)`),
      el("ul", {}, not.map((n) => el("li", {}, el("code", {}, n.flag), n.overTime
        ? " needs a history of forwards (a store), not one picture."
        : ` needs ${n.needs.join(" or ")}, measured while training (a store written by somatize record).`)))),
    el("details", {}, el("summary", {}, `What was judged (${seen.length} node${seen.length === 1 ? "" : "s"})`),
      el("div", { class: "scroll" }, seenTable(seen))));
}
