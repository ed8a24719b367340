// Number formatting for people: short, aligned, and never hiding NaN or infinities.

/** Whole numbers with thousands separators, as `toLocaleString("en-US")` writes them (which
 * makes a formatter on every call: a table of 1,000 runs spent 150 ms there). */
const WHOLE = new Intl.NumberFormat("en-US");

/** A number as a short readable string: integers whole, others to 4 significant digits. */
export function num(v) {
  if (v === undefined || v === null) return "–";
  if (typeof v !== "number") return String(v);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return WHOLE.format(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3).replace(/\.?0+e/, "e").replace(/-/g, "−");
  return Number(v.toPrecision(4)).toString().replace(/-/g, "−");
}

/** A share in [0, 1] as a percentage. */
export function pct(v) {
  if (typeof v !== "number" || !Number.isFinite(v)) return num(v);
  return `${Number((v * 100).toPrecision(3))} %`;
}

/** A shape as `[a × b]`, `scalar` for 0-d. */
export function shape(s) {
  return Array.isArray(s) && s.length ? s.join(" × ") : "scalar";
}

/** A number in a <data> element: readable text, the exact value in `value` for machines. */
export function numData(v) {
  const node = document.createElement("data");
  node.value = typeof v === "number" ? String(v) : "";
  node.textContent = num(v);
  return node;
}

/** A duration given in microseconds, in the unit that reads best (µs, ms, s). */
export function duration(us) {
  if (typeof us !== "number" || !Number.isFinite(us)) return num(us);
  const a = Math.abs(us);
  if (a < 1e3) return `${num(us)} µs`;
  if (a < 1e6) return `${num(us / 1e3)} ms`;
  return `${num(us / 1e6)} s`;
}
