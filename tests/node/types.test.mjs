// Node layer: the declarations type-check: the browser entry's (tests/types/usage.ts, a bundler project with lib dom) and the Node entry's (tests/types/node/, no lib dom) as the README uses them (tsc --noEmit).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

test("the declarations type-check against tests/types/usage.ts", () => {
  const tsc = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url));
  const r = spawnSync(process.execPath, [tsc, "-p", "tests/types/tsconfig.json"], { cwd: root, encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("a Node-only project (no lib dom, no @types/node, skipLibCheck false) compiles against the Node entry's declarations", () => {
  const tsc = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url));
  const r = spawnSync(process.execPath, [tsc, "-p", "tests/types/node/tsconfig.json"], { cwd: root, encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
