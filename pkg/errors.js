// SomatizeError: what the package throws for an error a program can branch on, with a stable
// `code` (the core's error variants, mapped in src/wasm/errors.rs; pkg/README.md lists them)
// and the store file, run and forward it concerns when known.

export class SomatizeError extends Error {
  /** @param code {string} @param message {string} @param details {{file?: string, run?: string, forward?: number}} */
  constructor(code, message, details = {}) {
    super(message);
    this.code = code;
    for (const key of DETAILS) if (details[key] !== undefined) this[key] = details[key];
  }
}
SomatizeError.prototype.name = "SomatizeError";

/** The properties a SomatizeError may carry besides its code. */
const DETAILS = ["file", "run", "forward"];

/** An error as plain data, to cross from a worker to the page or the main thread. */
export function errorData(e) {
  const data = { name: e?.name ?? "Error", message: e?.message ?? String(e) };
  if (typeof e?.code === "string") data.code = e.code;
  if (e instanceof SomatizeError) {
    data.somatize = true;
    for (const key of DETAILS) if (e[key] !== undefined) data[key] = e[key];
  }
  return data;
}

/** The error `errorData` described: a SomatizeError again, or an Error with its name and code. */
export function errorFrom(data) {
  if (data.somatize) return new SomatizeError(data.code, data.message, data);
  const e = new Error(data.message);
  if (data.name && data.name !== "Error") e.name = data.name;
  if (data.code) e.code = data.code;
  return e;
}
