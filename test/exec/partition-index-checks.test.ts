/**
 * The index checks of the "auto" engine's onnxruntime segments (partition/index-guard.ts) and the
 * range analysis that leaves some out (partition/index-ranges.ts): an index out of our range
 * inside a loop body still raises our IndexError on the plan, for every op with an index input,
 * whether its check stays in the body or moved to the top level; indices known in range get no
 * check in the body; and the plan's results equal eager code's bit for bit.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autoStats, setAutoPolicy } from "../../src/onnx/partition/auto.js";
import { cutGraph } from "../../src/onnx/partition/cut.js";
import { INDEX_INPUT } from "../../src/onnx/partition/index-guard.js";
import { valueRanges } from "../../src/onnx/partition/index-ranges.js";
import type { Graph, Node } from "../../src/graph/ir.js";

/** Runs `body` with the plan forced (and the suite's determinism switch off, which would keep auto on ours). */
function onPlan<T>(body: () => T): T {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  const deterministic = sc.config.setDeterministic(false);
  try {
    return body();
  } finally {
    setAutoPolicy(policy);
    sc.config.setDeterministic(deterministic);
  }
}

function onPlanEqualsEager(what: string, f: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[]): void {
  onPlan(() => {
    const staged = sc.stage(f, { autograph: false, engine: "auto" });
    const want = f(...xs).dataSync();
    const plans = autoStats.plans;
    for (let call = 0; call < 2; call++) {
      const got = staged(...xs).dataSync();
      assert.equal(got.length, want.length, `${what}: size`);
      for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) assert.fail(`${what}, call ${call}: element ${i} is ${got[i]} on the plan but ${want[i]} eager`);
    }
    assert.equal(autoStats.plans, plans + 1, `${what}: the graph went to a partitioned plan`);
  });
}

/** `f` staged on "auto" with the plan forced raises what it raises staged on ours (an IndexError, or `kind`, as eager code does), on its first call and again. */
function onPlanRaisesAsOurs(what: string, f: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[], kind: new (...a: never[]) => Error = sc.IndexError): void {
  const raised = (g: () => unknown): Error | null => {
    try {
      g();
    } catch (e) {
      return e as Error;
    }
    return null;
  };
  onPlan(() => {
    const eager = raised(() => f(...xs).dataSync());
    assert.ok(eager instanceof kind, `${what}: eager raises a ${kind.name} (got ${String(eager)})`);
    const ours = raised(() => sc.stage(f, { autograph: false, engine: "stagecraft" })(...xs).dataSync());
    assert.ok(ours instanceof kind, `${what}: ours raises a ${kind.name} (got ${String(ours)})`);
    const staged = sc.stage(f, { autograph: false, engine: "auto" });
    for (let call = 0; call < 2; call++) {
      const e = raised(() => staged(...xs).dataSync());
      assert.ok(e instanceof kind && e.message === ours.message, `${what}, call ${call}: the plan must raise ours' ${ours.message} (got ${String(e)})`);
    }
  });
}

/** The engine's graph of `f`'s only segment (which must be on the engine). */
function engineGraphOf(f: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[]): Graph {
  const cf = sc.stage(f, { autograph: false }).concrete(...xs);
  const cut = cutGraph(cf.graph, cf.library, cf.numArgInputs);
  assert.deepEqual(cut.segments.map((s) => s.onEngine), [true], "the whole graph is one engine segment");
  return cut.segments[0]!.engineGraph;
}

/** The ops of `g`'s regions (all depths). */
function regionOps(g: Graph): string[] {
  const out: string[] = [];
  const walk = (h: Graph) => h.nodes.forEach((n: Node) => n.regions.forEach((r) => (r.nodes.forEach((m) => out.push(m.op)), walk(r))));
  walk(g);
  return out;
}

// (an exportable run big enough for a session)
const pre = (x: sc.Tensor) => x.mul(2).add(1).mul(3).sub(1);
const x64 = () => sc.tensor(Array.from({ length: 64 * 64 }, (_, i) => (i % 97) - 40), "float32", [64, 64]);

/** Each op with an index input, fed indices `idx` ([2] int32) in a loop body: a [64, 64] result. */
const USES: [string, (a: sc.Tensor, idx: sc.Tensor) => sc.Tensor][] = [
  // (max, not sum: exact on both sides)
  ["gather", (a, idx) => a.add(sc.max(sc.gather(a, idx, 0)))],
  ["gatherND", (a, idx) => a.add(sc.max(sc.gatherND(a, sc.expandDims(idx, 1))))],
  ["gatherElements", (a, idx) => a.add(sc.max(sc.gatherElements(a, sc.broadcastTo(idx, [64, 2]), 1)))],
  ["scatterAdd", (a, idx) => sc.scatterAdd(a, idx, sc.ones([2, 64]), 0)],
  ["scatterElements", (a, idx) => sc.scatterElements(a, sc.broadcastTo(idx, [64, 2]), sc.ones([64, 2]), 1)],
  ["scatterND", (a, idx) => sc.scatterND(a, sc.expandDims(idx, 1), sc.ones([2, 64]))],
  ["oneHot", (a, idx) => a.add(sc.sum(sc.oneHot(idx, 64)))],
];

test("the uses below cover every op with an index input", () => {
  // (stackRead: its own test below, a row of an iteration stack)
  assert.deepEqual([...USES.map(([op]) => op), "stackRead"].sort(), [...INDEX_INPUT.keys()].sort());
});

// An iteration stack's row exports as a Gather, which took a negative row from the end: the plan
// gave the stack's last row where ours raises (found by the review of the index checks).
test("stackRead of a row from an argument, in a loop body: a negative row or one past the end raises ours' error on the plan, valid rows equal eager", () => {
  const f = (x: sc.Tensor, rows: sc.Tensor) => {
    let s = sc.emptyStack(x);
    for (let k = 0; k < 3; k++) s = sc.stackPush(s, pre(x).add(k));
    const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(2), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), pre(a).add(sc.max(sc.stackRead(s, sc.gather(rows, i, 0))))], [sc.scalar(0, "int32"), x]);
    return y!;
  };
  const rows = (r: number[]) => sc.tensor(r, "int32");
  onPlanEqualsEager("stackRead, valid rows", f, [x64(), rows([2, 0])]);
  onPlanRaisesAsOurs("stackRead, a negative row", f, [x64(), rows([0, -1])], sc.ShapeError);
  onPlanRaisesAsOurs("stackRead, a row past the end", f, [x64(), rows([0, 3])], sc.ShapeError);
});

test("a differentiated loop's backward in a callee (its stack reads at rows the loop's condition keeps in range) is inlined on the engine, unchecked", () => {
  const loss = sc.stage((w: sc.Tensor) => {
    const [, a] = sc.whileLoop((i: sc.Tensor) => i.less(5), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), sc.tanh(pre(a).matmul(w))], [sc.scalar(0, "int32"), w]);
    return sc.sum(a!);
  }, { autograph: false });
  const f = sc.stage(sc.valueAndGrad(loss), { autograph: false });
  const w = sc.random.normal([64, 64], { seed: 1 }).mul(0.1);
  const cf = f.concrete(w);
  const backward = [...cf.library.functions.values()].filter((g) => regionOps(g).includes("stackRead"));
  assert.ok(backward.length > 0, "a callee reads iteration stacks");
  const cut = cutGraph(cf.graph, cf.library, cf.numArgInputs);
  assert.deepEqual(cut.segments.map((s) => s.onEngine), [true], "the whole graph, callees inlined, is one engine segment");
  onPlan(() => {
    const want = sc.stage(sc.valueAndGrad(loss), { autograph: false, engine: "stagecraft" })(w);
    const got = f(w);
    const lossOf = (r: sc.Tensor[]) => Number(r[0]!.item());
    assert.ok(Math.abs(lossOf(got) - lossOf(want)) <= 1e-4 * Math.abs(lossOf(want)), "the loss");
  });
});

/** A loop of 3 steps whose step i feeds row i of `tokens` (an argument, [3, 2]) to `use`. */
const fromTokens = (use: (a: sc.Tensor, idx: sc.Tensor) => sc.Tensor) => (x: sc.Tensor, tokens: sc.Tensor) => {
  const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), use(pre(a), sc.gather(tokens, i, 0))], [sc.scalar(0, "int32"), x]);
  return y!;
};
/** The same with the indices computed in the body (row i minus `shift`, an argument): they keep their check there. */
const computed = (use: (a: sc.Tensor, idx: sc.Tensor) => sc.Tensor) => (x: sc.Tensor, tokens: sc.Tensor, shift: sc.Tensor) => {
  const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), use(pre(a), sc.gather(tokens, i, 0).sub(shift))], [sc.scalar(0, "int32"), x]);
  return y!;
};

const tokens = (rows: number[][]) => sc.tensor(rows, "int32");
const VALID = [[0, 1], [63, 5], [7, 7]];

for (const [op, use] of USES) {
  test(`${op} in a loop body, its indices gathered from an argument: checked once outside the loop, and a negative one raises our IndexError on the plan`, () => {
    const g = engineGraphOf(fromTokens(use), [x64(), tokens(VALID)]);
    const inLoop = regionOps(g);
    assert.ok(!inLoop.includes("where"), `${op}: no check in the loop body (got ${inLoop.join(", ")})`);
    assert.ok(g.nodes.some((n) => n.op === "min"), `${op}: the tokens are checked at the top level`);
    onPlanEqualsEager(`${op} from tokens`, fromTokens(use), [x64(), tokens(VALID)]);
    onPlanRaisesAsOurs(`${op} from tokens, negative`, fromTokens(use), [x64(), tokens([[0, 1], [-1, 2], [3, 4]])]);
    // (past the end: onnxruntime refuses it itself; oneHot's check covers its depth)
    onPlanRaisesAsOurs(`${op} from tokens, past the end`, fromTokens(use), [x64(), tokens([[0, 1], [2, 64], [3, 4]])]);
  });

  test(`${op} in a loop body, its indices computed there: checked there, and a negative one raises our IndexError on the plan`, () => {
    const g = engineGraphOf(computed(use), [x64(), tokens(VALID), sc.scalar(0, "int32")]);
    assert.ok(regionOps(g).includes("where"), `${op}: the indices are checked in the body`);
    onPlanEqualsEager(`${op} computed`, computed(use), [x64(), tokens(VALID), sc.scalar(0, "int32")]);
    onPlanRaisesAsOurs(`${op} computed, negative`, computed(use), [x64(), tokens(VALID), sc.scalar(8, "int32")]);
  });
}

test("indices known in range get no check in a loop body: a counter from 0 under `i < n`, argMax over an axis, a range, a clip", () => {
  const f = (x: sc.Tensor, n: sc.Tensor) => {
    const y = pre(x);
    const best = sc.argMax(y, 1); // [64] in [0, 64)
    const [, a] = sc.whileLoop((i: sc.Tensor) => i.less(n), (i: sc.Tensor, a: sc.Tensor) => {
      const rows = sc.gather(a, sc.stack([i, sc.clip(i.add(5), 0, 63)]), 0); // (the counter: i < n, n an int32)
      const hot = sc.oneHot(sc.gather(best, i, 0), 64); // argMax's values gathered
      const wrapped = sc.gather(a, sc.arange(0, 8, 1, "int32"), 0);
      return [i.add(1), a.add(sc.max(rows)).add(hot).add(sc.max(wrapped))];
    }, [sc.zeros([], "int32"), y]);
    return a!;
  };
  const n = sc.scalar(3, "int32");
  const g = engineGraphOf(f, [x64(), n]);
  const ops = [...regionOps(g), ...g.nodes.map((m) => m.op)];
  assert.ok(!ops.includes("where"), `no check at all (got ${ops.join(", ")})`);
  onPlanEqualsEager("known in range", f, [x64(), n]);
});

// The MNIST demo's whole training loop picks batch i's rows as arange(0, B) + mod(i, N) * B.
test("rows picked by a counter modulo the batch count get no check in a loop body, and mod by a divisor of either sign keeps its range", () => {
  const f = (x: sc.Tensor, n: sc.Tensor) => {
    const [, a] = sc.whileLoop((i: sc.Tensor) => i.less(n), (i: sc.Tensor, a: sc.Tensor) => {
      const rows = sc.arange(0, 8, 1, "int32").add(sc.mod(i, sc.full([], 8, "int32")).mul(8));
      return [i.add(1), a.add(sc.max(sc.gather(a, rows, 0)))];
    }, [sc.zeros([], "int32"), pre(x)]);
    return a!;
  };
  const n = sc.scalar(11, "int32");
  const g = engineGraphOf(f, [x64(), n]);
  const ops = [...regionOps(g), ...g.nodes.map((m) => m.op)];
  assert.ok(!ops.includes("where"), `no check at all (got ${ops.join(", ")})`);
  onPlanEqualsEager("rows by a counter modulo", f, [x64(), n]);
  const ranges = (x: sc.Tensor, m: number) => {
    const cf = sc.stage((v: sc.Tensor) => sc.mod(v, sc.full([], m, "int32")), { autograph: false }).concrete(x);
    return valueRanges(cf.graph).get(cf.graph.outputs[0]!);
  };
  const INT32 = { lo: -(2 ** 31), hi: 2 ** 31 - 1 };
  assert.deepEqual(ranges(sc.tensor([-5, 3], "int32"), 4), { lo: 0, hi: 3 });
  assert.deepEqual(ranges(sc.tensor([-5, 3], "int32"), -4), { lo: -3, hi: 0 });
  const unknown = sc.stage((v: sc.Tensor, m: sc.Tensor) => sc.mod(v, m), { autograph: false }).concrete(sc.tensor([1], "int32"), sc.tensor([2], "int32"));
  const r = valueRanges(unknown.graph).get(unknown.graph.outputs[0]!);
  assert.ok(r === undefined || (r.lo === INT32.lo && r.hi === INT32.hi), `a divisor of unknown sign: the whole range (got ${JSON.stringify(r)})`);
});

// seq2seq's decoder: tokens gathered from the target in the loop, pushed on a stack for the
// gradient's loop, which reads them back for the embedding's gradient (a scatterAdd)
test("tokens a loop pushes on a stack and its gradient's loop reads back: checked once, at the top level, and a negative one raises our IndexError", () => {
  const f = (emb: sc.Tensor, tokens: sc.Tensor) => sc.grad((e: sc.Tensor) => {
    const [, acc] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, acc: sc.Tensor) => [i.add(1), acc.add(sc.sum(sc.gather(pre(e), sc.gather(tokens, i, 0), 0)))], [sc.scalar(0, "int32"), sc.scalar(0)]);
    return acc!;
  })(emb);
  const g = engineGraphOf(f, [x64(), tokens(VALID)]);
  const inLoops = regionOps(g);
  assert.ok(inLoops.includes("scatterAdd") && inLoops.includes("stackRead"), "the gradient's loop reads the tokens from a stack and scatters");
  assert.ok(!inLoops.includes("where"), `no check in the loops (got ${inLoops.join(", ")})`);
  onPlanEqualsEager("tokens through a stack", f, [x64(), tokens(VALID)]);
  onPlanRaisesAsOurs("tokens through a stack, negative", f, [x64(), tokens([[0, 1], [2, -3], [3, 4]])]);
});

test("a loop counter started at an argument is checked once at the loop's entry: a negative start raises our IndexError on the plan", () => {
  const f = (x: sc.Tensor, start: sc.Tensor) => {
    const [, a] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), pre(a).add(sc.sum(sc.gather(a, i, 0)))], [start, x]);
    return a!;
  };
  const g = engineGraphOf(f, [x64(), sc.scalar(0, "int32")]);
  assert.ok(!regionOps(g).includes("where"), "no check in the loop body");
  onPlanEqualsEager("counter from an argument", f, [x64(), sc.scalar(1, "int32")]);
  onPlanRaisesAsOurs("counter from a negative argument", f, [x64(), sc.scalar(-2, "int32")]);
});

test("a negative index captured as a constant, in a loop body, raises our IndexError on the plan (the engine bakes captures)", () => {
  const idx = sc.tensor([1, -1], "int32");
  onPlanRaisesAsOurs("captured negative", (x) => {
    const [, a] = sc.whileLoop((i: sc.Tensor) => i.less(2), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), pre(a).add(sc.sum(sc.gather(a, idx, 0)))], [sc.scalar(0, "int32"), x]);
    return a!;
  }, [x64()]);
});

test("the range analysis: loop counters narrowed by their condition, growth widened to the dtype's range, wrapping casts and sums widened", () => {
  const f = (n: sc.Tensor, big: sc.Tensor) => {
    // (started from fills: a scalar made with sc.scalar in a staged function is a capture, whose value the analysis does not see)
    const [up, down, doubled] = sc.whileLoop(
      (i: sc.Tensor) => i.less(n),
      (i: sc.Tensor, d: sc.Tensor, p: sc.Tensor) => [i.add(1), d.sub(1), p.mul(2)],
      [sc.zeros([], "int32"), sc.full([], 10, "int32"), sc.ones([], "int32")],
    );
    return [up!, down!, doubled!, sc.cast(big, "int32"), sc.cast(sc.argMax(sc.cast(big, "float32"), 0), "int64").add(1)];
  };
  const cf = sc.stage(f, { autograph: false }).concrete(sc.scalar(3, "int32"), sc.tensor([1, 2], "int64"));
  const r = valueRanges(cf.graph);
  const [up, down, doubled, narrowed, arg] = cf.graph.outputs.map((v) => r.get(v));
  const INT32 = { lo: -(2 ** 31), hi: 2 ** 31 - 1 };
  // (i < n with n an int32: i + 1 <= 2^31 - 1, no wrapping)
  assert.deepEqual(up, { lo: 0, hi: 2 ** 31 - 1 });
  assert.deepEqual(down, INT32, "a decrement the condition does not bound may wrap below -2^31: the whole range");
  assert.deepEqual(doubled, INT32, "a product that keeps growing wraps: the whole range");
  assert.deepEqual(narrowed, INT32, "int64 to int32 wraps");
  assert.deepEqual(arg, { lo: 1, hi: 2 });
});

test("indices sliced from a large tensor: checked once on the slice, not on the whole tensor (a check of that could cost more than it saves)", () => {
  const big = sc.tensor(Array.from({ length: 300 * 300 }, (_, i) => i % 64), "int32", [300, 300]);
  const f = (x: sc.Tensor, idx: sc.Tensor) => {
    const [a, b] = sc.unstack(sc.slice(idx, [0, 0], [2, 2]), 0) as [sc.Tensor, sc.Tensor];
    const y = pre(x);
    return sc.gather(y, a, 0).add(sc.gather(y, b, 0));
  };
  const g = engineGraphOf(f, [x64(), big]);
  const checked = g.nodes.filter((n) => n.op === "min").map((n) => n.inputs[0]!.type.shape);
  assert.deepEqual(checked, [[2, 2]], "one check, of the slice");
  onPlanEqualsEager("sliced from a large tensor", f, [x64(), big]);
});
