/**
 * Seams of the "auto" engine's partitioned plan found by running the test suite with the plan
 * forced (STAGECRAFT_ENGINE=auto STAGECRAFT_AUTO=plan): cases where a segment on onnxruntime gave
 * other answers than our executor, beyond float32 rounding. Each case is forced to the plan
 * (setAutoPolicy) and must equal eager code bit for bit: its float arithmetic is IEEE-exact on
 * both sides (adds and products of numbers whose sum and product round the same everywhere), so
 * only the seam itself could make a difference.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autoStats, setAutoPolicy } from "../../src/onnx/partition/auto.js";
import { Rng } from "../util/rng.js";

function identical(staged: sc.Tensor[], eager: sc.Tensor[], what: string): void {
  assert.equal(staged.length, eager.length, `${what}: outputs`);
  staged.forEach((s, k) => {
    assert.equal(s.dtype, eager[k]!.dtype, `${what}: output ${k} dtype`);
    const a = s.dataSync(), b = eager[k]!.dataSync();
    for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: output ${k} (${s.dtype}) element ${i} is ${a[i]} on the plan but ${b[i]} eager`);
  });
}

/** Calls `f` staged on "auto" with the plan forced, three times, against eager `f`; checks a plan was made. */
function onPlanEqualsEager(what: string, f: (...xs: sc.Tensor[]) => sc.Tensor[], xs: sc.Tensor[]): void {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  // (the suite's runner turns the determinism switch on, which would keep auto on ours)
  const deterministic = sc.config.setDeterministic(false);
  try {
    const staged = sc.stage(f, { autograph: false, engine: "auto" });
    const eager = f(...xs);
    const plans = autoStats.plans;
    for (let call = 0; call < 3; call++) identical(staged(...xs), eager, `${what}, call ${call}`);
    assert.equal(autoStats.plans, plans + 1, `${what}: the graph went to a partitioned plan`);
  } finally {
    setAutoPolicy(policy);
    sc.config.setDeterministic(deterministic);
  }
}

test("casts to int64 and uint64 give our values on the plan: negatives as uint64, -0, values beyond 2^63 (ours keeps numbers, onnxruntime wraps)", () => {
  const rng = new Rng(27);
  // (halves and quarters: every product and sum below is exact in float32)
  const x = sc.tensor(Array.from({ length: 128 * 128 }, () => Math.round(rng.uniform(-400, 400)) / 4), "float32", [128, 128]);
  const i = sc.tensor(Array.from({ length: 64 }, (_, k) => (k - 32) * 1000), "int32");
  onPlanEqualsEager("casts", (x, i) => {
    const y = x.mul(2).add(0.5).sub(1).mul(-1); // (an exportable run big enough for a session)
    return [
      sc.cast(y, "uint64"), // negatives
      sc.cast(y.mul(0.001), "int64"), // -0.x truncates to -0
      sc.cast(y.mul(1e17), "int64"), // beyond 2^63
      sc.cast(sc.cast(y, "float64").mul(1e17), "uint64"),
      sc.cast(i, "uint64"), // negative ints
      sc.cast(sc.cast(i, "int64"), "uint64"),
      sc.cast(i, "int64"), // exact: may go to the engine
      y,
    ];
  }, [x, i]);
});
