// Node layer: the package as users install it. scripts/pack.sh packs pkg/ (the wasm is built by
// then), the tarball installs into an empty folder outside the repo and runs there in Node (a
// store read in its worker thread, the README's example) and through a Vite build of a small
// app (tests/browser/vite-app, which the browser layer runs in Chromium); a checkout without the
// wasm build says how to build it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeStores, root } from "./store-fixture.mjs";

let tmp, app, s;

before(() => {
  s = makeStores("pack");
  tmp = mkdtempSync(join(tmpdir(), "somatize-pack-"));
  const tarball = execFileSync(join(root, "scripts/pack.sh"), ["--no-build", tmp], { encoding: "utf8" }).trim().split("\n").at(-1);
  app = join(tmp, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), '{"name":"app","private":true,"type":"module"}');
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: app, stdio: "pipe" });
});
after(() => rmSync(tmp, { recursive: true, force: true }));

const node = (args, cwd) => spawnSync(process.execPath, args, { cwd, encoding: "utf8" });

test("the installed package imports in Node and reads a store in its worker thread", () => {
  const code = `
    import { openStore, runs, SomatizeError } from "somatize";
    const store = await openStore(process.argv[1]);
    console.log((await runs(store)).map((r) => r.run).join(","));
    await store.runs().then(() => store.diagnose({ run: "nosuch" })).catch((e) => console.log(e instanceof SomatizeError, e.code));
    await store.close();`;
  const r = node(["--input-type=module", "-e", code, s.store], app);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, "mlp,small\ntrue NO_SUCH_RUN\n");
});

test("the installed package runs the README's Node example outside the repo", () => {
  const readme = readFileSync(join(app, "node_modules/somatize/README.md"), "utf8");
  const code = /<!-- example: node -->\s*```js\n([\s\S]*?)```/.exec(readme)[1];
  writeFileSync(join(app, "runs.mjs"), code);
  const r = node(["runs.mjs", s.store], app);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^mlp: last losses /m);
});

test("a Vite build of an app importing the installed package bundles the browser entry, its worker and the wasm", async () => {
  const { build } = await import("vite");
  for (const f of ["index.html", "main.js"]) cpSync(join(root, "tests/browser/vite-app", f), join(app, f));
  const outDir = join(app, "dist");
  // Vite as an app configures it by default, but for its own log level.
  await build({ root: app, configFile: false, logLevel: "warn", build: { outDir, emptyOutDir: true } });
  const assets = readdirSync(join(outDir, "assets"));
  assert.ok(assets.some((f) => f.endsWith(".wasm")), `no wasm among ${assets}`);
  assert.ok(assets.some((f) => /^worker.*\.js$/.test(f)), `no worker among ${assets}`);
  const js = assets.filter((f) => f.endsWith(".js")).map((f) => readFileSync(join(outDir, "assets", f), "utf8")).join("\n");
  assert.doesNotMatch(js, /worker_threads|store-worker-node/, "the Node entry stayed out of the bundle");
});

test("a checkout without the wasm build says how to build it", () => {
  const pkg = join(tmp, "unbuilt/node_modules/somatize");
  cpSync(join(root, "pkg"), pkg, { recursive: true, filter: (p) => !p.includes("/wasm") });
  const r = node(["--input-type=module", "-e", 'import("somatize")'], join(tmp, "unbuilt"));
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /the wasm core is not built .*scripts\/build-wasm\.sh/s);
});
