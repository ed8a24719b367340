// The seeds' API as functions over a store ("functions and not a type", seed 003): each takes
// an open Store first and the seed's keyword arguments as one options object (camelCase),
// and answers in the seed's shape: a list of rows (what was skipped to give it on a
// non-enumerable `skipped` property), not `{rows, skipped}`. Unknown options are refused by
// the core, naming them. The Store methods stay; these are the same calls.
import { Store } from "./store.js";
import { thresholdsAsDict } from "./core.js";
import { SomatizeError } from "./errors.js";

/** A SomatizeError with a stable code, as the core's errors carry (pkg/README.md). */
const somatizeError = (code, message) => new SomatizeError(code, message);
/** An argument of the wrong type: a TypeError, as JS has it, with the same stable code. */
const typeError = (code, message) => Object.assign(new TypeError(message), { code });

function check(store, name) {
  if (!(store instanceof Store)) {
    throw typeError("NOT_A_STORE", `${name}(store, options): the first argument is an open Store (await openStore(path)), not ${store === null ? "null" : typeof store}`);
  }
}

/** Rows with what was skipped to give them as a non-enumerable `skipped`. */
function rows(answer) {
  const out = answer.rows;
  Object.defineProperty(out, "skipped", { value: answer.skipped, enumerable: false });
  return out;
}

const plain = (name) => (store, options) => (check(store, name), store.call(name, options));
const listed = (name) => async (store, options) => (check(store, name), rows(await store.call(name, options)));
const figure = (kind) => (store, options = {}) => {
  check(store, kind);
  if (options === null || typeof options !== "object") throw typeError("BAD_OPTION", `${kind}(store, options): options is an object`);
  if ("kind" in options) throw somatizeError("UNKNOWN_OPTION", `${kind}(store, options): unknown option kind (the function names the figure)`);
  return store.figure({ ...options, kind });
};

// somatize.record
/** Every run, newest last: runs(store) -> [row] (one scan). */
export const runs = async (store, options) => {
  check(store, "runs");
  if (options !== undefined) throw somatizeError("UNKNOWN_OPTION", "runs(store) takes no options");
  return rows(await store.runs());
};
/** Every forward of a run in order: forwards(store, {run}) -> [row]. */
export const forwards = listed("forwards");
/** One number per forward: curve(store, {run, of = "loss.value"}) -> [[forward, value]]. */
export const curve = listed("curve");
/** "scan" or "fetch": what curve would cost, asked before paying: curveCosts(store, {run, of}). */
export const curveCosts = plain("curveCosts");
/** The facts of one forward in arrival order, or null for no such forward: facts(store, {run, forward}). */
export const facts = plain("facts");
/** Per node: nodes(store, {run, last?}) -> [row] (a fetch per forward; last=N reads N). */
export const nodes = listed("nodes");
/** Per machine: fleet(store, {run, last?}) -> [row]. */
export const fleet = listed("fleet");
/** Every machine's newest reading: standing(store) -> {id: reading}. */
export const standing = async (store, options) => {
  check(store, "standing");
  if (options !== undefined) throw somatizeError("UNKNOWN_OPTION", "standing(store) takes no options");
  return store.standing();
};
/** One value observe wrote, by exact id and step (the seed's ValueSink.query): query(store, {run, id, step}) -> value | null. */
export const query = plain("query");
export const progress = figure("progress");
export const spent = figure("spent");
export const gantt = figure("gantt");
export const machines = figure("machines");

// somatize.health
/** The latest of each number per node: seen(store, {run, last?}) -> {node: {kind, metric: value}}. */
export const seen = plain("seen");
/** The seed's {where: [flag, …]}: diagnose(store, {run, thresholds?, last?}) -> Map in declaration order. */
export const diagnose = plain("diagnose");
/** One measurement of one node: history(store, {run, node, of = "grad_norm", last?}) -> [[forward, value]]. */
export const history = plain("history");
/** The diagnosis folded onto the graph's nodes: where(store, {run, thresholds?, last?}) -> Map. */
export const where = plain("where");
/** What is wrong, loudly: alerts(store, {run, thresholds?, last?}) -> [alert]. */
export const alerts = plain("alerts");
export const profile = figure("profile");
export const flags = figure("flags");
export const overlaid = figure("overlaid");

/** The bounds a verdict is taken at, the seed's Thresholds(**over): `new Thresholds({name:
 * value})` (an unknown name or a non-number throws, naming it). Pass it as `thresholds`; its own
 * properties are the overrides; `asDict()` is every bound with them applied (the seed's as_dict). */
export class Thresholds {
  constructor(over = {}) {
    thresholdsAsDict(over);
    Object.assign(this, over);
    Object.freeze(this);
  }
  /** Every bound by name, the overrides applied, in the documented order. */
  asDict() {
    return thresholdsAsDict({ ...this });
  }
}
