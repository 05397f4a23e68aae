/**
 * STAGECRAFT_ENGINE: the process-wide engine of staged functions whose options name none (read
 * once, when Stagecraft loads). Each case runs in a child process with the variable set; the
 * child reports which engine its functions resolved to and whether the engine really ran them
 * (the onnxruntime engine's session and run counts, the auto engine's plans).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { setDefaultEngine } from "../../src/api/internals.js";
import { engineStats } from "../../src/onnx/engine.js";
import { engineChildReport } from "../util/fresh-process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

const script = `
  const sc = await import(${JSON.stringify(root + "src/api/index.ts")});
  const { engineStats } = await import(${JSON.stringify(root + "src/onnx/engine.ts")});
  const { autoStats } = await import(${JSON.stringify(root + "src/onnx/partition/auto.ts")});
  const body = (x) => x.matmul(x).tanh().add(1).mul(0.5).sub(0.25);
  const x = sc.ones([128, 128]);
  const report = {};
  try {
    const byDefault = sc.stage(body, { autograph: false });
    const ours = sc.stage(body, { autograph: false, engine: "stagecraft" });
    const runs0 = engineStats.runs, plans0 = autoStats.plans;
    const a = byDefault(x).dataSync()[0];
    const runs1 = engineStats.runs;
    const b = ours(x).dataSync()[0];
    report.engine = byDefault.concrete(x).engine;
    report.perCall = ours.concrete(x).engine;
    report.defaultRanOnEngine = runs1 - runs0;
    report.perCallRanOnEngine = engineStats.runs - runs1;
    report.plans = autoStats.plans - plans0;
    report.close = Math.abs(a - b) <= 1e-5 * (1 + Math.abs(b));
  } catch (e) {
    report.error = { name: e.constructor.name, message: e.message };
  }
  console.log(JSON.stringify(report));`;

function run(env: Record<string, string>): Record<string, unknown> {
  // (the determinism switch off, as where the suite's runner did not set it: these are auto's tests)
  return engineChildReport(script, env, root);
}

test("STAGECRAFT_ENGINE unset: staged functions run on auto (onnxruntime-node is installed here), on ours for their first calls", () => {
  const r = run({ STAGECRAFT_ENGINE: "" });
  assert.deepEqual(r, { engine: "auto", perCall: "stagecraft", defaultRanOnEngine: 0, perCallRanOnEngine: 0, plans: 0, close: true });
});

test("STAGECRAFT_ENGINE=stagecraft: staged functions run on our executor", () => {
  const r = run({ STAGECRAFT_ENGINE: "stagecraft" });
  assert.deepEqual(r, { engine: null, perCall: "stagecraft", defaultRanOnEngine: 0, perCallRanOnEngine: 0, plans: 0, close: true });
});

test("STAGECRAFT_ENGINE unset where onnxruntime-node cannot be found: the default is our executor, silently", () => {
  // (the preload makes every resolution of onnxruntime-node fail, as where it is not installed)
  const r = run({ STAGECRAFT_ENGINE: "", STAGECRAFT_AUTO: "plan", NODE_OPTIONS: `--require ${JSON.stringify(root + "test/staging/child/no-onnxruntime.cjs")}` });
  assert.deepEqual(r, { engine: null, perCall: "stagecraft", defaultRanOnEngine: 0, perCallRanOnEngine: 0, plans: 0, close: true });
});

test("STAGECRAFT_ENGINE=onnxruntime: functions naming no engine run on onnxruntime; a per-call engine still wins", () => {
  const r = run({ STAGECRAFT_ENGINE: "onnxruntime" });
  assert.equal(r.engine, "onnxruntime");
  assert.equal(r.perCall, "stagecraft");
  assert.equal(r.defaultRanOnEngine, 1, "the default function's call was one onnxruntime run");
  assert.equal(r.perCallRanOnEngine, 0, "engine: \"stagecraft\" kept its call on ours");
  assert.equal(r.close, true);
});

test("STAGECRAFT_ENGINE=auto: functions naming no engine run on auto (here forced to its plan)", () => {
  const r = run({ STAGECRAFT_ENGINE: "auto", STAGECRAFT_AUTO: "plan" });
  assert.equal(r.engine, "auto");
  assert.equal(r.perCall, "stagecraft");
  assert.equal(r.plans, 1, "auto made a plan for the default function's graph");
  assert.equal(r.perCallRanOnEngine, 0);
  assert.equal(r.close, true);
});

test("STAGECRAFT_ENGINE naming no installed engine: stage() throws a ValueError naming the variable and the engines", () => {
  const r = run({ STAGECRAFT_ENGINE: "onnx-runtime" });
  const error = r.error as { name: string; message: string };
  assert.equal(error.name, "ValueError");
  assert.match(error.message, /STAGECRAFT_ENGINE is "onnx-runtime"/);
  assert.match(error.message, /"onnxruntime"/);
  assert.match(error.message, /"auto"/);
});

test("setDefaultEngine (internals) changes the engine of functions staged afterwards; those staged before keep theirs", () => {
  const body = (x: sc.Tensor) => x.mul(2).add(1);
  const x = sc.tensor([1, 2, 3], "float32");
  // (from our executor, whatever STAGECRAFT_ENGINE this process was given)
  const previous = setDefaultEngine(null);
  const before = sc.stage(body, { autograph: false });
  setDefaultEngine("onnxruntime");
  try {
    const after = sc.stage(body, { autograph: false });
    const runs0 = engineStats.runs;
    assert.deepEqual(after(x).arraySync(), [3, 5, 7]);
    assert.equal(engineStats.runs - runs0, 1, "staged after: ran on onnxruntime");
    assert.deepEqual(before(x).arraySync(), [3, 5, 7]);
    assert.equal(engineStats.runs - runs0, 1, "staged before: still ours");
    assert.equal(after.concrete(x).engine, "onnxruntime");
    assert.equal(before.concrete(x).engine, null);
    assert.throws(() => setDefaultEngine("onnx"), (e: Error) => e.name === "ValueError" && /"onnx" is not an installed engine/.test(e.message));
    setDefaultEngine("stagecraft");
    assert.equal(sc.stage(body, { autograph: false }).concrete(x).engine, null, "\"stagecraft\" is our executor");
  } finally {
    setDefaultEngine(previous);
  }
});

test("STAGECRAFT_ENGINE without the package entry (no engine installed): stage() works, and a call says no executor is installed, as without the variable", () => {
  const code = `
    import { tensor } from "./src/ops/index.js";
    import { stage } from "./src/staging/stage.js";
    try { stage((x) => x.mul(2), { autograph: false })(tensor([1, 2])); console.log("no error"); } catch (e) { console.log(e.constructor.name + ": " + e.message); }`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: root, env: { ...process.env, STAGECRAFT_ENGINE: "auto" }, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout.trim(), /^StagingError: no executor is installed to run staged functions: import Stagecraft through its package entry/);
});
