// The conformance suite's stores and binary: the built-in demo trained by the CLI
// (`somatize demo --every 150`: forwards 0, 150 and 299 of seven runs), run "nest" written by
// `somatize.Recorder` (tests/conformance/make_nest.py: a finding inside a node, a node named
// "1"), and run "obs" written by `somatize observe` over the shared example_cnn steps with
// hand-written specs (tests/conformance/specs.json). Everything under target/conformance/.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../", import.meta.url));
/** ../shared beside the repo (SOMATIZE_SHARED names another, e.g. from a worktree). */
export const shared = process.env.SOMATIZE_SHARED ?? join(root, "../shared");
export const here = fileURLToPath(new URL("./", import.meta.url));

/** The binary: $SOMATIZE_BIN, else this checkout's release build, else its debug build (built now). */
export function binary() {
  if (process.env.SOMATIZE_BIN) return process.env.SOMATIZE_BIN;
  const release = join(root, "target/release/somatize");
  if (existsSync(release)) return release;
  execFileSync("cargo", ["build", "--quiet", "--bin", "somatize"], { cwd: root, stdio: "inherit" });
  return join(root, "target/debug/somatize");
}

/** Run the CLI: {code, out, err}. */
export function run(...args) {
  const p = spawnSync(binary(), args, { encoding: "utf8", maxBuffer: 1 << 28 });
  return { code: p.status, out: p.stdout, err: p.stderr };
}

/** Run the CLI, expect exit 0, parse stdout as JSON. */
export function json(...args) {
  const p = run(...args);
  if (p.code !== 0) throw new Error(`somatize ${args.join(" ")} exited ${p.code}: ${p.err}`);
  return JSON.parse(p.out);
}

/** The python that runs make_nest.py: the torch venv's when present, else python3. */
function python() {
  const venv = join(process.env.SOMATIZE_VENV ?? join(process.env.HOME ?? "/root", ".cache/somatize/torch-venv"), "bin/python");
  return existsSync(venv) ? venv : "python3";
}

/** Write run "nest" (make_nest.py) into the store `path`; returns `path`. */
export function makeNest(path) {
  execFileSync(python(), [join(here, "make_nest.py"), path], {
    env: { ...process.env, SOMATIZE_BIN: binary(), PYTHONPATH: join(root, "python") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return path;
}

/** The stores, made once per process: {dir, demo, nest, obs, steps}. */
export function stores() {
  const dir = join(root, "target/conformance", String(process.pid));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const demo = join(dir, "demo");
  run("demo", "--store", demo, "--every", "150");
  const nest = makeNest(join(dir, "nest"));
  const obs = join(dir, "obs");
  const steps = [0, 1, 2].map((i) => join(shared, `runs/example_cnn/step_00000${i}.npz`));
  const out = json("observe", ...steps, "--store", obs, "--run", "obs", "--specs", join(here, "specs.json"), "--budget-ms", "11.5", "--json");
  return { dir, demo, nest, obs, steps, observed: out, done: () => rmSync(dir, { recursive: true, force: true }) };
}
