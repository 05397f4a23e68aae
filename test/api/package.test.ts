import { test } from "node:test";
import assert from "node:assert/strict";

test("the built package resolves as 'stagecraft' through package.json exports", async () => {
  // Self-reference resolves through the "exports" map to dist/, exactly as a dependent project would.
  const sc = await import("stagecraft");
  const y = sc.add(sc.tensor([1, 2]), 1);
  assert.deepEqual(y.arraySync(), [2, 3]);
  assert.equal(typeof sc.GradientTape, "function");
});

test("npm reads the project's configuration without a warning, and onnxruntime-node's download-only install script is denied", async (t) => {
  const { spawnSync } = await import("node:child_process");
  const { readFileSync, writeFileSync, mkdtempSync } = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const root = path.resolve(import.meta.dirname, "../..");
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { allowScripts?: Record<string, boolean> };
  // onnxruntime-node's postinstall only downloads CUDA providers (it fails offline): npm skips a denied package's scripts.
  assert.equal(pkg.allowScripts?.["onnxruntime-node"], false);
  // An empty user config, so only the project's own files (package.json, .npmrc) are read.
  const userconfig = path.join(mkdtempSync(path.join(os.tmpdir(), "npmrc-")), ".npmrc");
  writeFileSync(userconfig, "");
  // (and no npm_config_* variables: under `npm test`, npm passes the user's config on to children through them)
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
  const r = spawnSync("npm", ["install-scripts", "ls", "--json", "--userconfig", userconfig], { cwd: root, encoding: "utf8", timeout: 60_000, env });
  if (r.status !== 0 && /Unknown command|install-scripts/.test(r.stderr) && !/warn/.test(r.stderr)) {
    t.skip(`this npm has no install-scripts command (npm ${spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim()})`);
    return;
  }
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /warn/i, "npm printed a warning");
  // Every dependency with install scripts is reviewed in package.json's allowScripts (none pending).
  assert.deepEqual(JSON.parse(r.stdout), { allowScripts: [] });
});

test("internals are not on the public surface; the documented stagecraft/internals entry has them", async () => {
  const sc = (await import("stagecraft")) as Record<string, unknown>;
  for (const name of ["compileGraph", "createCompiledExecutor", "compiledExecutor", "interpretExecutor", "addOp", "reduceAttrs", "toIndexTensor"]) {
    assert.equal(sc[name], undefined, `${name} is not public`);
  }
  const stageOf = sc.stage as (f: (x: unknown) => unknown) => Record<string, unknown>;
  assert.equal(stageOf((x) => x).pythonFunction, undefined);
  const internals = (await import("stagecraft/internals")) as Record<string, unknown>;
  for (const name of ["compileGraph", "createCompiledExecutor", "compiledExecutor", "interpretExecutor", "condOp", "registerBackend", "cpuBackend"]) {
    assert.ok(internals[name] !== undefined, `${name} is in stagecraft/internals`);
  }
});
