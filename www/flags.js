// The health flags the core knows, what each needs, and which of them one file can judge.
import { about } from "../pkg/browser.js";

/** Every flag, in the core's order (each is checked against `about` when the page starts). */
export const FLAGS = ["NAN", "INF", "VANISHING", "EXPLODING", "DEAD", "SATURATED", "STALLED",
  "OVERSTEPPING", "DEAD_CHANNELS", "IGNORED_CHANNELS", "LEAKAGE", "NARROWING",
  "MISSING_NORMALISATION", "LOSING_PLASTICITY"];

/** Flags judged over a history of forwards only, never over one picture. */
export const OVER_TIME = new Set(["LOSING_PLASTICITY"]);

const cache = new Map();

/** `about(flag)` for a flag as written in a verdict (`DEAD_CHANNELS(3)` → DEAD_CHANNELS), cached. */
export function aboutFlag(flag) {
  const base = String(flag).replace(/\(\d+\)$/, "");
  if (!cache.has(base)) cache.set(base, about(base));
  return cache.get(base);
}

/** For each threshold name: its meaning and the flags it bounds. */
export function boundsByName() {
  const out = new Map();
  for (const flag of FLAGS) {
    for (const b of aboutFlag(flag).bounds) {
      const entry = out.get(b.name) ?? { meaning: b.meaning, source: b.source, flags: [] };
      entry.flags.push(flag);
      out.set(b.name, entry);
    }
  }
  return out;
}

/**
 * Split the flags into those the metrics in `have` let one picture judge and the rest, each
 * with the metrics it would need: `{judged: [flag], not: [{flag, needs: [metric], overTime}]}`.
 */
export function judgeable(have) {
  const judged = [];
  const not = [];
  for (const flag of FLAGS) {
    const needs = aboutFlag(flag).metrics;
    if (!OVER_TIME.has(flag) && needs.some((m) => have.has(m))) judged.push(flag);
    else not.push({ flag, needs, overTime: OVER_TIME.has(flag) });
  }
  return { judged, not };
}
