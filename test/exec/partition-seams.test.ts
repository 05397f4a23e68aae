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
import { guardedWhileLoop } from "../../src/staging/control-flow.js";
import { cutGraph } from "../../src/onnx/partition/cut.js";
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

/** `f` staged on "auto" with the plan forced raises what eager `f` raises (same class and message), on its first call and again. */
function onPlanRaisesAsEager(what: string, f: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[]): void {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  const deterministic = sc.config.setDeterministic(false);
  try {
    let eager: Error | null = null;
    try {
      f(...xs).dataSync();
    } catch (e) {
      eager = e as Error;
    }
    assert.ok(eager instanceof sc.IndexError, `${what}: eager raises an IndexError (got ${String(eager)})`);
    const staged = sc.stage(f, { autograph: false, engine: "auto" });
    for (let call = 0; call < 2; call++) {
      assert.throws(
        () => staged(...xs).dataSync(),
        (e: Error) => e instanceof sc.IndexError && e.message.split(" (at ")[0] === eager!.message.split(" (at ")[0],
        `${what}, call ${call}: the plan must raise eager's ${eager!.message}`,
      );
    }
  } finally {
    setAutoPolicy(policy);
    sc.config.setDeterministic(deterministic);
  }
}

// (an exportable run big enough for a session in front of each index op)
const pre = (x: sc.Tensor) => x.mul(2).add(1).mul(3).sub(1);
const x64 = () => sc.tensor(Array.from({ length: 64 * 64 }, (_, i) => (i % 97) - 40), "float32", [64, 64]);

const NEGATIVE_INDEX_CASES: [string, (x: sc.Tensor) => sc.Tensor][] = [
  ["gather", (x) => sc.gather(pre(x), sc.tensor([0, -1], "int32"), 0)],
  ["gatherND", (x) => sc.gatherND(pre(x), sc.tensor([[0, 1], [-1, 2]], "int32"))],
  ["gatherElements", (x) => sc.gatherElements(pre(x), sc.full([64, 2], -1, "int32"), 1)],
  ["scatterAdd", (x) => sc.scatterAdd(pre(x), sc.tensor([0, -1], "int32"), sc.ones([2, 64]), 0)],
  ["scatterElements", (x) => sc.scatterElements(pre(x), sc.full([64, 2], -1, "int32"), sc.ones([64, 2]), 1)],
  ["scatterND", (x) => sc.scatterND(pre(x), sc.tensor([[-1]], "int32"), sc.ones([1, 64]))],
  ["gather (int64 indices computed in the graph)", (x) => sc.gather(pre(x), sc.cast(sc.argMax(pre(x), 1), "int64").sub(100), 0)],
  ["gather in a loop body", (x) => {
    const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(2), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), pre(a).add(sc.sum(sc.gather(a, sc.stack([i.sub(1), i]), 0)))], [sc.scalar(0, "int32"), x]);
    return y!;
  }],
  ["oneHot past the depth", (x) => sc.oneHot(sc.cast(sc.sum(pre(x), 1), "int32").mul(0).add(9), 8)],
  ["oneHot of a negative index", (x) => sc.oneHot(sc.cast(sc.sum(pre(x), 1), "int32").mul(0).sub(3), 8)],
];

for (const [what, f] of NEGATIVE_INDEX_CASES) {
  test(`a ${what} index out of our range raises our IndexError on the plan (onnxruntime counts negatives from the end, or gives zeros)`, () => onPlanRaisesAsEager(what, f, [x64()]));
}

// (int64 storage is a Float64Array, which converts nothing: an int64 floorDiv or mod by zero kept
// Infinity and NaN, a pow with a negative exponent 0.5, and the plan's onnxruntime gave INT64_MIN)
test("int64 and uint64 division and remainder by zero, and powers with negative exponents: 0 and integers, as int32's, eager = ours = the plan", () => {
  const a = sc.tensor(Array.from({ length: 128 * 4 }, (_, k) => [5, -5, 0, 7][k % 4]! * (1 + (k >> 2))), "int64", [128, 4]);
  const b = sc.tensor([0, 0, 0, -2], "int64");
  const ops = (a: sc.Tensor, b: sc.Tensor) => [sc.floorDiv(a, b), sc.truncDiv(a, b), sc.mod(a, b), sc.fmod(a, b), sc.pow(a.add(1), b.sub(1)), sc.floorDiv(a.add(1), b).mul(3)];
  const want32 = ops(sc.cast(a, "int32"), sc.cast(b, "int32")).map((t) => Array.from(t.dataSync() as ArrayLike<number>));
  ops(a, b).forEach((t, k) => assert.deepEqual(Array.from(t.dataSync() as ArrayLike<number>), want32[k], `eager op ${k}: int64 as int32`));
  const au = sc.abs(a).cast("uint64"), bu = sc.abs(b).cast("uint64");
  assert.deepEqual(Array.from(sc.floorDiv(au, bu).dataSync() as ArrayLike<number>).slice(0, 4), [0, 0, 0, 3], "uint64 floorDiv by zero");
  for (const engine of ["stagecraft", "auto"] as const) {
    const staged = sc.stage((a: sc.Tensor, b: sc.Tensor) => ops(a.mul(1), b), { autograph: false, engine });
    staged(a, b).forEach((t, k) => assert.deepEqual(Array.from(t.dataSync() as ArrayLike<number>), want32[k], `${engine}, op ${k}`));
  }
  onPlanEqualsEager("int64 by zero", (a, b) => ops(a.mul(1), b), [a, b]);
});

test("index ops with valid indices still run on the plan's onnxruntime segments and give our values", () => {
  onPlanEqualsEager("valid indices", (x) => {
    const y = pre(x);
    return [
      sc.gather(y, sc.tensor([0, 63, 5], "int32"), 0),
      sc.gatherND(y, sc.tensor([[0, 1], [63, 2]], "int64")),
      sc.gatherElements(y, sc.full([64, 2], 3, "int32"), 1),
      sc.scatterAdd(y, sc.tensor([0, 63], "int32"), sc.ones([2, 64]), 0),
      sc.scatterND(y, sc.tensor([[7]], "int32"), sc.ones([1, 64])),
    ];
  }, [x64()]);
});

// seq2seq's decoder loop one-hot encodes its tokens: a oneHot kept ours split that graph in three
// around the loop, where the whole graph as one session was 1.25x as fast (bench/RESULTS.md).
test("oneHot with valid int32 and int64 indices goes to the engine, in a loop body too (its indices checked there), and gives our values", () => {
  const f = (x: sc.Tensor) => {
    const y = pre(x);
    const tokens = sc.cast(sc.argMax(y, 1), "int32"); // (valid: 0..63)
    const [, acc] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), a.add(sc.oneHot(tokens, 64).mul(2))], [sc.scalar(0, "int32"), y]);
    return [acc!, sc.oneHot(sc.cast(tokens, "int64"), 64, "int32")];
  };
  const cf = sc.stage(f, { autograph: false }).concrete(x64());
  const cut = cutGraph(cf.graph, cf.library, 1);
  assert.deepEqual(cut.segments.map((s) => s.onEngine), [true], "the whole graph is one engine segment");
  onPlanEqualsEager("oneHot", f, [x64()]);
});

test("a guarded loop (an imported Loop's maxLoopIterations) stops at its bound on the plan, as on ours (the export for a model file writes no trip count for it)", () => {
  const count = (x: sc.Tensor) => {
    // (big enough for a session: the loop carries a [128, 128] tensor)
    const [s, y] = guardedWhileLoop((s) => sc.less(s!, 100), (s, y) => [sc.add(s!, 1), y!.mul(1).add(1)], [sc.sum(x).mul(0), x], { maxIterations: 5 });
    return [s!, y!];
  };
  onPlanEqualsEager("guarded loop", count, [sc.zeros([128, 128])]);
  assert.equal(count(sc.zeros([128, 128]))[0]!.dataSync()[0], 5, "eager stops at the bound");
});

// A call whose plan fails partway (here: onnxruntime refuses the guarded negative index) goes on
// from the failed segment on ours (segments.ts), not from its start: the host call before it ran once.
test("a call whose plan fails partway runs its host calls once, and raises ours' error", () => {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  const deterministic = sc.config.setDeterministic(false);
  try {
    let hostCalls = 0;
    const f = sc.stage((x: sc.Tensor, i: sc.Tensor) => {
      const h = sc.hostCall((t: sc.Tensor) => (hostCalls++, t), sc.spec([64, 64], "float32"), x) as sc.Tensor;
      return sc.gather(pre(h), i, 0);
    }, { autograph: false, engine: "auto" });
    assert.throws(() => f(x64(), sc.tensor([-1], "int32")), sc.IndexError);
    assert.equal(hostCalls, 1, "the host call ran once");
  } finally {
    setAutoPolicy(policy);
    sc.config.setDeterministic(deterministic);
  }
});

// Meeting point: a gradient staged again, of a staged function whose last op is an index op
// (gather; its gradient a scatter), after a host callback, all on the plan forced: the gradient
// (6 at each gathered row: exact in float32) equals the eager tape's bit for bit and the callback
// runs once per call.
test("on the plan: a staged gradient of a staged function ending in gather, after a host callback, equals the eager tape's gradient, the callback once per call", () => {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  const deterministic = sc.config.setDeterministic(false);
  try {
    const idx = sc.tensor([0, 63, 5, 5], "int32");
    const inner = sc.stage((y: sc.Tensor) => sc.gather(pre(y), idx, 0), { autograph: false, engine: "auto" });
    let hostCalls = 0;
    const step = sc.stage((x: sc.Tensor) => {
      const h = sc.hostCall((t: sc.Tensor) => (hostCalls++, t), sc.spec([64, 64], "float32"), x) as sc.Tensor;
      return sc.grad((y: sc.Tensor) => sc.sum(inner(y)))(h);
    }, { autograph: false, engine: "auto" });
    const eager = sc.grad((y: sc.Tensor) => sc.sum(sc.gather(pre(y), idx, 0)))(x64());
    const plans = autoStats.plans;
    for (let call = 0; call < 3; call++) identical([step(x64())], [eager], `gradient, call ${call}`);
    assert.equal(hostCalls, 3, "the host callback ran once per call");
    assert.ok(autoStats.plans > plans, "the staged gradient went to a partitioned plan");
  } finally {
    setAutoPolicy(policy);
    sc.config.setDeterministic(deterministic);
  }
});
