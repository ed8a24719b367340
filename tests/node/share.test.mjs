// A store on object storage read from Node without credentials (`somatize share`): the runs,
// forwards, curves and verdict the package reads through the share document (a saved file, and
// the link `--put` prints) are exactly what the CLI reads from s3:// itself; the share source
// reads files made of several objects, ranges across their boundaries, and refuses bad documents.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "somatize";
import { parseShare, shareSource } from "../../pkg/sources.js";
import { httpRequester } from "../../pkg/sources-node.js";
import { cli, root } from "./store-fixture.mjs";
import { startMoto } from "./moto.mjs";

let moto, store, dir;

before(async () => {
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  moto = await startMoto();
  store = moto.url("shared");
  dir = join(root, "target/js-stores/share");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // Two writers of one run and a second run, recorded straight to the bucket as a user would.
  for (const [run, writer, steps] of [["mlp", "w0", 12], ["mlp", "w1", 8], ["small", "w0", 3]]) {
    execFileSync(cli, ["record", "--store", store, "--run", run, "--writer", writer, "--",
      "python3", join(root, "examples/train_numpy.py"), "--steps", String(steps)],
    { cwd: root, env: moto.env, stdio: ["ignore", "ignore", "pipe"] });
  }
});
after(() => moto?.stop());

const cliJson = (...args) => JSON.parse(execFileSync(cli, [...args, "--json"], { env: moto.env, encoding: "utf8" }));

/** What the package reads of the store opened from `source` equals what the CLI reads of the s3:// store. */
async function sameAsCli(source) {
  const opened = await openStore(source);
  try {
    await checkSame(opened);
  } finally {
    await opened.close();
  }
}

async function checkSame(opened) {
  const runs = (await opened.runs()).rows;
  assert.deepEqual(runs, cliJson("runs", store));
  assert.deepEqual(runs.map((r) => r.run), ["mlp", "small"]);
  for (const { run } of runs) {
    const row = (f) => [f.forward, f.writer, f.written_us];
    const forwards = (await opened.forwards({ run })).rows.map(row);
    assert.deepEqual(forwards, cliJson("forwards", store, "--run", run).map(row), run);
    assert.deepEqual((await opened.curve({ run })).rows, cliJson("curve", store, "--run", run), run);
    const diagnosed = Object.fromEntries(await opened.diagnose({ run }));
    assert.deepEqual(diagnosed, cliJson("diagnose", store, "--run", run), run);
  }
}

test("a share document saved to a file opens as the store the CLI reads on s3://", async () => {
  const file = join(dir, "share.json");
  execFileSync(cli, ["share", store, "-o", file], { env: moto.env, stdio: ["ignore", "ignore", "pipe"] });
  const doc = parseShare(readFileSync(file, "utf8"), file);
  assert.ok(Object.keys(doc.files).some((p) => p.startsWith("runs/mlp/w1/")), "both writers are shared");
  await sameAsCli(file);
});

test("the link --put prints opens the same store", async () => {
  const link = execFileSync(cli, ["share", store, "--put", "--expires", "1h"], { env: moto.env, encoding: "utf8" }).trim();
  assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/somatize-js\/shared\/shares\/\d+-[0-9a-f]+\.json\?.*X-Amz-Signature=/);
  await sameAsCli(link);
});

test("a file made of several objects reads whole and in ranges across their boundaries", async () => {
  const text = "0123456789abcdefghijklmnopqrstuvwxyz";
  const objects = { "/a": text.slice(0, 10), "/b": text.slice(10, 11), "/c": text.slice(11) };
  // The objects' server is another process: the source's requests block this thread.
  const server = spawn(process.execPath, ["--input-type=module", "-e", `
    import { createServer } from "node:http";
    const objects = ${JSON.stringify(objects)};
    const s = createServer((req, res) => {
      if (!(req.url in objects)) return res.writeHead(404).end();
      const body = Buffer.from(objects[req.url]);
      const m = /bytes=(\\d+)-(\\d+)/.exec(req.headers.range ?? "");
      if (!m) return res.writeHead(200, { "Content-Length": body.length }).end(body);
      const [a, b] = [Number(m[1]), Math.min(Number(m[2]), body.length - 1)];
      res.writeHead(206, { "Content-Range": "bytes " + a + "-" + b + "/" + body.length }).end(body.subarray(a, b + 1));
    });
    s.listen(0, "127.0.0.1", () => console.log(s.address().port));`], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((resolve, reject) => {
    server.stdout.once("data", (d) => resolve(Number(String(d).trim())));
    server.once("exit", (code) => reject(new Error(`the objects' server exited (${code})`)));
  });
  const base = `http://127.0.0.1:${port}`;
  const part = (p) => ({ url: `${base}${p}`, len: objects[p].length });
  const doc = parseShare(JSON.stringify({ format: "somatize-share", version: 1, store: "s3://x/y",
    files: { "runs/r/w/index.jsonl": { len: text.length, parts: ["/a", "/b", "/c"].map(part) },
      "gone.txt": { len: 3, parts: [{ url: `${base}/none`, len: 3 }] } } }));
  const request = httpRequester();
  try {
    const src = shareSource(doc, request);
    const dec = (b) => new TextDecoder().decode(b);
    assert.equal(dec(src.read("runs/r/w/index.jsonl")), text);
    // [offset, len]: inside one part, across two, across all three, past the end.
    for (const [offset, len] of [[2, 5], [8, 4], [9, 20], [30, 100], [36, 4]]) {
      assert.equal(dec(src.readRange("runs/r/w/index.jsonl", offset, len)), text.slice(offset, offset + len), `${offset}+${len}`);
    }
    const target = new Uint8Array(7);
    assert.equal(src.readRangeInto("runs/r/w/index.jsonl", 7, target), 7);
    assert.equal(dec(target), text.slice(7, 14));
    assert.equal(src.size("runs/r/w/index.jsonl"), text.length);
    assert.equal(src.size("runs/r/w/nothing"), null);
    assert.equal(src.read("runs/r/w/nothing"), null);
    assert.deepEqual(src.list(""), ["runs", "gone.txt"]);
    assert.deepEqual(src.list("runs/r/w"), ["index.jsonl"]);
    assert.throws(() => src.read("gone.txt"), /gone or shorter than shared.*share again/);
  } finally {
    request.close();
    server.kill();
  }
});

test("a bad share document is refused with what is wrong", () => {
  const file = (files, extra = {}) => JSON.stringify({ format: "somatize-share", version: 1, store: "s3://x", files, ...extra });
  const one = (len, parts) => ({ "a.json": { len, parts } });
  // [document, what the error says]
  const table = [
    ["{", /not a somatize share document/],
    [JSON.stringify({ format: "somatize-store" }), /not a somatize share document/],
    [file({}, { version: 2 }), /version 2; this package reads version 1/],
    [file(one(5, [{ url: "http://h/a", len: 4 }])), /bad entry for "a.json"/],
    [file(one(-1, [])), /bad entry/],
    [file(one(1, [{ url: 7, len: 1 }])), /bad entry/],
    [file({ "runs/../x": { len: 0, parts: [] } }), /bad entry for "runs\/..\/x"/],
    [JSON.stringify({ format: "somatize-share", version: 1 }), /has no files/],
  ];
  for (const [text, said] of table) assert.throws(() => parseShare(text), said, text);
});
