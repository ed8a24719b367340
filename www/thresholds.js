// The thresholds editor: a form generated from the core's defaults; every edit re-judges at once.
import { thresholdsDefault } from "../pkg/browser.js";
import { el, fill } from "./dom.js";
import { boundsByName } from "./flags.js";

/**
 * Build the editor into `form`. `onChange(thresholds)` is called with `{name: value}` for every
 * threshold (a number, or the text typed when it is no number, so the core names the problem)
 * and returns (or resolves to) an error message or "": the editor shows it and marks the field
 * edited last. A slower answer to an older edit is dropped.
 * Returns `{current()}`.
 */
export function thresholdsEditor(form, onChange) {
  const defaults = thresholdsDefault();
  const meanings = boundsByName();
  const inputs = new Map();
  const error = el("p", { class: "error", id: "thresholds-error", role: "alert" });
  const rows = Object.entries(defaults).map(([name, value]) => {
    const id = `t-${name}`;
    const about = meanings.get(name);
    const hint = about?.meaning ?? "";
    const input = el("input", {
      id, name, type: "text", inputmode: "decimal", value: String(value), spellcheck: "false",
      autocomplete: "off", "aria-describedby": hint ? `${id}-hint` : null, dataset: { default: String(value) },
    });
    inputs.set(name, input);
    return el("div", { class: "threshold" },
      el("label", { for: id }, name),
      input,
      hint ? el("small", { id: `${id}-hint` }, hint) : null);
  });
  const reset = el("button", { type: "button", id: "thresholds-reset" }, "Back to the defaults");
  fill(form, rows, el("div", { class: "threshold-actions" }, reset), error);

  const current = () => {
    const out = {};
    for (const [name, input] of inputs) {
      const text = input.value.trim();
      const n = text === "" ? NaN : Number(text);
      out[name] = Number.isFinite(n) ? n : text;
    }
    return out;
  };
  let asked = 0;
  const apply = async (edited) => {
    const mine = ++asked;
    for (const input of inputs.values()) {
      input.classList.toggle("edited", input.value.trim() !== input.dataset.default);
      input.removeAttribute("aria-invalid");
    }
    const message = await onChange(current());
    if (mine !== asked) return;
    error.textContent = message || "";
    if (message && edited) edited.setAttribute("aria-invalid", "true");
  };
  form.addEventListener("input", (e) => apply(e.target));
  form.addEventListener("submit", (e) => e.preventDefault());
  reset.addEventListener("click", () => {
    for (const input of inputs.values()) input.value = input.dataset.default;
    apply(null);
  });
  return { current, rejudge: () => apply(null) };
}
