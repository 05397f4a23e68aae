/**
 * The determinism switch (sc.config.setDeterministic, STAGECRAFT_DETERMINISTIC) and the cost of
 * the "auto" default engine: with the switch on, no graph goes to a partitioned plan (results
 * bit-identical to eager code); and onnxruntime-node is loaded only when a graph gets warm, never
 * by importing Stagecraft, staging a function or its first calls.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { autoStats, setAutoPolicy } from "../../src/onnx/partition/auto.js";
import { engineChildReport } from "../util/fresh-process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Runs `body` (module code, `sc` and `report` in scope) in a fresh process; returns what it put in `report`. */
function inChild(body: string, env: Record<string, string>): Record<string, unknown> {
  const script = `
    import { createRequire } from "node:module";
    const ortModules = () => Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes("onnxruntime")).length;
    const report = {};
    try {
      const sc = await import(${JSON.stringify(root + "src/api/index.ts")});
      const { engineStats } = await import(${JSON.stringify(root + "src/onnx/engine.ts")});
      const { autoStats } = await import(${JSON.stringify(root + "src/onnx/partition/auto.ts")});
      ${body}
    } catch (e) {
      report.error = { name: e.constructor.name, message: e.message };
    }
    console.log(JSON.stringify(report));`;
  return engineChildReport(script, env, root);
}

// (a graph the cut sends to onnxruntime: above the size threshold, 5 nodes)
const body = (x: sc.Tensor) => x.matmul(x).tanh().add(1).mul(0.5).sub(0.25);
const input = () => sc.tensor(Array.from({ length: 128 * 128 }, (_, i) => Math.sin(i * 0.37) * 0.1), "float32", [128, 128]);
const childBody = `
  const body = (x) => x.matmul(x).tanh().add(1).mul(0.5).sub(0.25);
  const x = sc.tensor(Array.from({ length: 128 * 128 }, (_, i) => Math.sin(i * 0.37) * 0.1), "float32", [128, 128]);`;

test("the default engine loads onnxruntime-node only when a graph gets warm: not on import, stage() or the first calls", () => {
  // (STAGECRAFT_NATIVE=0: the native kernels, which load onnxruntime-node's binding when Stagecraft
  // is wired, are off, so what is loaded is what the engine loaded)
  const r = inChild(
    `${childBody}
    report.afterImport = ortModules();
    const f = sc.stage(body, { autograph: false });
    report.engine = f.concrete(x).engine;
    for (let i = 0; i < 5; i++) f(x).dataSync();
    report.afterFewCalls = { modules: ortModules(), sessions: engineStats.sessions, plans: autoStats.plans };
    // (warm at the latest at the policy's maxWarmUpCalls: then the graph's plan is made and measured)
    for (let i = 0; i < 1010; i++) f(x).dataSync();
    report.afterWarm = { loaded: ortModules() > 0, sessions: engineStats.sessions > 0, plans: autoStats.plans };`,
    { STAGECRAFT_NATIVE: "0" },
  );
  assert.deepEqual(r, { afterImport: 0, engine: "auto", afterFewCalls: { modules: 0, sessions: 0, plans: 0 }, afterWarm: { loaded: true, sessions: true, plans: 1 } });
});

test("STAGECRAFT_DETERMINISTIC=1: functions on the default engine never go to a plan (even forced) and equal eager code bit for bit", () => {
  const r = inChild(
    `${childBody}
    const f = sc.stage(body, { autograph: false });
    const eager = Array.from(body(x).dataSync());
    let same = true;
    for (let i = 0; i < 5; i++) same &&= Array.from(f(x).dataSync()).every((v, k) => Object.is(v, eager[k]));
    report.deterministic = sc.config.isDeterministic();
    report.same = same;
    report.plans = autoStats.plans;
    report.sessions = engineStats.sessions;`,
    { STAGECRAFT_DETERMINISTIC: "1", STAGECRAFT_AUTO: "plan" },
  );
  assert.deepEqual(r, { deterministic: true, same: true, plans: 0, sessions: 0 });
});

test("STAGECRAFT_DETERMINISTIC with a value it does not take: stage() throws a ValueError naming the variable and its values", () => {
  const r = inChild(`sc.stage(body => body, { autograph: false });`, { STAGECRAFT_DETERMINISTIC: "yes" });
  const error = r.error as { name: string; message: string };
  assert.equal(error.name, "ValueError");
  assert.match(error.message, /STAGECRAFT_DETERMINISTIC is "yes"; it takes 1 or true \(on\), 0 or false \(off\)/);
});

test("sc.config.setDeterministic holds at the next call, for functions staged before it too; off again, auto goes on to its plan", () => {
  const policy = setAutoPolicy({ choice: "plan" });
  const previous = sc.config.setDeterministic(false);
  try {
    const x = input();
    const eager = Array.from(body(x).dataSync());
    const byDefault = sc.stage(body, { autograph: false });
    const named = sc.stage(body, { autograph: false, engine: "auto" });
    assert.equal(byDefault.concrete(x).engine, "auto", "the default engine is auto here (onnxruntime-node is installed)");
    assert.equal(sc.config.setDeterministic(true), false, "returns the previous setting");
    assert.equal(sc.config.isDeterministic(), true);
    const plans0 = autoStats.plans;
    for (const f of [byDefault, named]) {
      for (let i = 0; i < 3; i++) {
        const got = f(x).dataSync();
        for (let k = 0; k < eager.length; k++) if (!Object.is(got[k], eager[k])) assert.fail(`element ${k}: ${got[k]} staged, ${eager[k]} eager`);
      }
    }
    assert.equal(autoStats.plans, plans0, "no plan while the switch is on");
    sc.config.setDeterministic(false);
    const got = byDefault(x).dataSync();
    assert.equal(autoStats.plans, plans0 + 1, "off: the same function's next call goes to auto's (forced) plan");
    for (let k = 0; k < eager.length; k++) assert.ok(Math.abs(got[k]! - eager[k]!) <= 1e-5, `element ${k} close`);
  } finally {
    sc.config.setDeterministic(previous);
    setAutoPolicy(policy);
  }
});

test("sc.config.setDeterministic takes a boolean: anything else is a ValueError, and the setting is unchanged", () => {
  const before = sc.config.isDeterministic();
  for (const bad of ["true", 1, undefined, null]) {
    assert.throws(
      () => sc.config.setDeterministic(bad as unknown as boolean),
      (e: Error) => e instanceof sc.ValueError && /^config\.setDeterministic: expected true or false, got /.test(e.message),
      String(bad),
    );
  }
  assert.equal(sc.config.isDeterministic(), before);
});
