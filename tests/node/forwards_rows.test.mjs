// forwards' rows, which cross from wasm as columns and are built in JS (numbers written by JS
// where it writes them as the core does), equal the CLI's --json exactly: every key, its
// order, and every field's text, over values of every magnitude and fields of every kind.
// The store is written here by hand in the documented format (docs/store-format.md).
import { test } from "node:test";
import { deepStrictEqual, ok } from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { openStore } from "../../pkg/node.js";
import { cli, root } from "./store-fixture.mjs";

/** Doubles from random bit patterns (a fixed seed), the finite ones. */
function randomDoubles(n) {
  const view = new DataView(new ArrayBuffer(8));
  let x = 0x2545f4914f6cdd1dn;
  const out = [];
  while (out.length < n) {
    x ^= x << 13n;
    x ^= x >> 7n;
    x ^= x << 17n;
    x &= (1n << 64n) - 1n;
    view.setBigUint64(0, x);
    const v = view.getFloat64(0);
    if (Number.isFinite(v)) out.push(v);
  }
  return out;
}

/** Numbers at the edges of JS's and Rust's ways of writing them, and random ones. */
const NUMBERS = [
  0, -0, 1, -1, 0.1, 1 / 3, 2 / 3, 1e-7, 9.999999999999999e-7, 1e-6, 1.5e-6, -1e-6, 1.0000000000000002e-6,
  2 ** 53, 2 ** 53 + 2, 2 ** 60, 1e20, 999999999999999900000, 1e21, -1e21, 1.7976931348623157e308, 5e-324, 123456789.125,
  ...randomDoubles(3000),
  ...randomDoubles(2000).map((v) => v / 2 ** Math.floor(Math.log2(Math.abs(v) || 1))), // between 1 and 2
  ...Array.from({ length: 2000 }, (_, i) => (i + 1) / 997), // short decimals
];

/** Fields other than plain numbers: text, non-ASCII and astral text, non-finite numbers as
 * their text, booleans, null, repeated names, and names JS objects treat apart. */
const ODD = [
  '"loss.value":"NaN","acc.text":"é","a":1,"a":"again"',
  '"acc.text":"a😀b","loss.value":"-Infinity","ok.flag":true,"no.flag":false,"x.null":null',
  '"__proto__":"not a prototype","forward":"shadowed","0":"an index key","loss.value":"Infinity"',
  '"acc.text":"","loss.value":-0',
];

/** A store of one run written by two writers: every number above, then the odd fields. */
function writeStore() {
  const dir = mkdtempSync(join(tmpdir(), "somatize-fwrows-"));
  const store = join(dir, "store");
  writeFileSync(join(mkdir(store), "somatize-store.json"), '{"format":"somatize-store","version":"1.1"}');
  for (const [w, part] of [["w0", 0], ["w1", 1]]) {
    const lines = [];
    let f = 0;
    for (let i = part; i < NUMBERS.length; i += 2, f++) {
      const broke = f % 13 === 0;
      const error = broke ? `,"error":"${f % 2 ? "ünïcode" : "nan loss"}"` : "";
      lines.push(`{"forward":${f},"written_us":${1764500000000000 + f * 1000 + part},"took_us":${900 + (f % 7)},"broke":${broke}${error},"fields":{"loss.value":${JSON.stringify(NUMBERS[i])}}}`);
    }
    for (const fields of ODD) {
      lines.push(`{"forward":${f++},"written_us":1764600000000000,"took_us":5,"broke":false,"fields":{${fields}}}`);
    }
    lines.push(`{"forward":${f},"written_us":1764600000000001,"took_us":0,"broke":true,"error":"killed"}`);
    writeFileSync(join(mkdir(join(store, "runs/r", w)), "index.jsonl"), lines.join("\n") + "\n");
  }
  return store;
}

function mkdir(path) {
  mkdirSync(path, { recursive: true });
  return path;
}

test("forwards' rows built in JS equal the CLI's --json: keys, their order and every text", async () => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  const path = writeStore();
  const want = JSON.parse(execFileSync(cli, ["forwards", path, "--run", "r", "--json"], { encoding: "utf8", maxBuffer: 1 << 28 }));
  const store = await openStore(path);
  const got = await store.forwards({ run: "r" });
  await store.close();
  deepStrictEqual(got.skipped, []);
  deepStrictEqual(got.rows.length, want.length);
  for (let i = 0; i < want.length; i++) {
    deepStrictEqual(Object.keys(got.rows[i]), Object.keys(want[i]), `row ${i}'s keys`);
    deepStrictEqual(got.rows[i], want[i], `row ${i}`);
  }
  const proto = got.rows.find((r) => Object.hasOwn(r, "__proto__"));
  ok(proto && Object.getPrototypeOf(proto) === Object.prototype, "__proto__ is an own key, the prototype untouched");
  deepStrictEqual(Object.getOwnPropertyDescriptor(proto, "__proto__").value, "not a prototype");
  ok(got.rows.some((r) => r["loss.value"] === "0.0000001"), "1e-7 written without an exponent, as Rust writes it");
});
