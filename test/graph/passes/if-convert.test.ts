/**
 * ifConvert (graph/passes/if-convert.ts): a cond whose branches are a few cheap ops that
 * cannot fail becomes both branches and a select (logicalAnd / logicalOr for AutoGraph's
 * `&&` / `||`, where otherwise); conds with effects, large or unknown-size values, loops,
 * products or integer division are kept. The converted graph gives the original's results
 * bit for bit (interpreter, random inputs taking both branches).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag } from "../../../src/autograph/operators/index.js";
import { cloneProgram, ifConvert, optimizeCopy, prune } from "../../../src/graph/passes/index.js";
import { graphsWithin } from "../../../src/graph/passes/util.js";
import type { Graph } from "../../../src/graph/ir.js";
import { applyPasses, ops } from "./helpers.js";

/** The ops of `g` and of its regions. */
const allOps = (g: Graph): string[] => graphsWithin(g).flatMap(ops);

const bothBranches = 8;

test("AutoGraph's && and || on tensors (a cond per test) become logicalAnd / logicalOr, as written by hand", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => {
      const a = ag.and(() => sc.greater(sc.sum(x), 0), () => sc.less(sc.sqrt(sc.sum(sc.square(y))), 1.5)) as sc.Tensor;
      const o = ag.or(() => sc.greater(sc.max(x), 0.5), () => sc.all(sc.less(y, 0))) as sc.Tensor;
      return [a, o];
    },
    [sc.ones([4]), sc.ones([3])],
    [ifConvert, prune],
    bothBranches,
  );
  assert.match(r.before, /= cond\(/);
  assert.doesNotMatch(r.after, /cond\(/);
  assert.equal(ops(r.graph).filter((o) => o === "logicalAnd").length, 1);
  assert.equal(ops(r.graph).filter((o) => o === "logicalOr").length, 1);
  assert.ok(!ops(r.graph).includes("where"));
});

test("a cond with other results becomes where(p, then, else); a result both branches share is used as it is", () => {
  const r = applyPasses(
    (p: sc.Tensor, x: sc.Tensor) => sc.cond(sc.greater(sc.sum(p), 0), () => [sc.mul(x, 2), x, sc.cast(sc.greater(x, 0), "int32")], () => [sc.neg(x), x, sc.sub(sc.cast(x, "int32"), 1)]),
    [sc.ones([2]), sc.ones([2, 3])],
    [ifConvert, prune],
    bothBranches,
  );
  assert.doesNotMatch(r.after, /cond\(/);
  assert.equal(ops(r.graph).filter((o) => o === "where").length, 2);
});

test("conds inside loop conditions are converted (L-BFGS's `k < N && norm > tol`), and the loop still runs to the same result", () => {
  const r = applyPasses(
    (g: sc.Tensor) => sc.whileLoop(
      (k, v) => ag.and(() => sc.less(k!, 6), () => sc.greater(sc.sqrt(sc.sum(sc.square(v!))), 0.01)) as sc.Tensor,
      (k, v) => [sc.add(k!, 1), sc.mul(v!, 0.5)],
      [sc.scalar(0, "int32"), g],
    ),
    [sc.ones([5])],
    [ifConvert, prune],
    bothBranches,
  );
  assert.match(r.before, /= cond\(/);
  assert.ok(!allOps(r.graph).includes("cond"), r.after);
  assert.ok(allOps(r.graph).includes("logicalAnd"), r.after);
});

test("conds are kept where running the other branch could fail, do something, or cost much", () => {
  const kept = (name: string, fn: (...x: sc.Tensor[]) => unknown, args: sc.Tensor[]) => {
    const r = applyPasses(fn, args, [ifConvert, prune], bothBranches);
    assert.ok(allOps(r.graph).includes("cond"), `${name}: ${r.after}`);
  };
  const p = (x: sc.Tensor) => sc.greater(sc.sum(x), 0);
  kept("a product", (x, w) => sc.cond(p(x), () => sc.matmul(w, w), () => w), [sc.ones([2]), sc.ones([4, 4])]);
  kept("integer division", (x, n) => sc.cond(p(x), () => sc.mod(sc.scalar(7, "int32"), n), () => n), [sc.ones([2]), sc.scalar(2, "int32")]);
  kept("a large value", (x, big) => sc.cond(p(x), () => sc.mul(big, 2), () => big), [sc.ones([2]), sc.ones([64, 64])]);
  kept("a print", (x) => sc.cond(p(x), () => { sc.print(x); return x; }, () => x), [sc.ones([2])]);
  kept("a loop", (x) => sc.cond(p(x), () => sc.whileLoop((v) => sc.less(sc.sum(v!), 10), (v) => [sc.mul(v!, 2)], [x])[0]!, () => x), [sc.ones([2])]);
  // (in range here, so that the original runs on random inputs; the branch not taken could have an index out of range)
  kept("a gather (an index out of range fails)", (x) => sc.cond(p(x), () => sc.gather(x, sc.cast(sc.less(sc.max(x), 0), "int32"), 0), () => sc.sum(x)), [sc.ones([2])]);
  kept("many ops", (x) => sc.cond(p(x), () => { let v = x; for (let k = 0; k < 20; k++) v = sc.sin(v); return v; }, () => x), [sc.ones([2])]);
});

test("two large operands passed through are not converted (AutoGraph's `if (p) y = a; else y = b;`): a select would read and write them every run", () => {
  const p = (x: sc.Tensor) => sc.greater(sc.sum(x), 0);
  const big = sc.ones([512, 512]);
  for (const [name, fn] of [
    ["one result", (x: sc.Tensor, a: sc.Tensor, b: sc.Tensor) => sc.cond(p(x), () => a, () => b)],
    ["beside a small computed result", (x: sc.Tensor, a: sc.Tensor, b: sc.Tensor) => sc.cond(p(x), () => [sc.neg(x), a], () => [sc.square(x), b])],
  ] as const) {
    const r = applyPasses(fn, [sc.ones([2]), big, big], [ifConvert, prune], 2);
    assert.ok(allOps(r.graph).includes("cond"), `${name}: ${r.after}`);
  }
  // small operands passed through are converted, and a large one both branches pass through needs no select
  const small = applyPasses((x: sc.Tensor, a: sc.Tensor, b: sc.Tensor) => sc.cond(p(x), () => a, () => b), [sc.ones([2]), sc.ones([4, 3]), sc.ones([4, 3])], [ifConvert, prune], bothBranches);
  assert.deepEqual(allOps(small.graph).filter((o) => o === "cond" || o === "where"), ["where"], small.after);
  const shared = applyPasses((x: sc.Tensor, a: sc.Tensor) => sc.cond(p(x), () => [sc.neg(x), a], () => [sc.square(x), a]), [sc.ones([2]), big], [ifConvert, prune], 2);
  assert.ok(!allOps(shared.graph).includes("cond"), shared.after);
});

test("operands of unknown shape passed through are not converted (their size is not known to be small)", () => {
  const f = sc.stage((x: sc.Tensor, a: sc.Tensor, b: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => a, () => b), {
    autograph: false,
    inputSignature: [sc.spec([2]), sc.spec([null, 3]), sc.spec([null, 3])],
  });
  const cf = f.concrete(sc.ones([2]), sc.ones([4, 3]), sc.ones([4, 3]));
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  ifConvert(graph, library);
  assert.ok(allOps(graph).includes("cond"), sc.printGraph(graph));
  // and it still runs, taking each branch
  for (const [x, want] of [[sc.ones([2]), 1], [sc.neg(sc.ones([2])), 2]] as const) {
    const out = f(x, sc.ones([5, 3]), sc.full([5, 3], 2)) as sc.Tensor;
    assert.deepEqual(out.shape, [5, 3]);
    assert.deepEqual([...out.dataSync()], new Array(15).fill(want));
  }
});

test("a staged function with a converted cond computes what the original computes on the compiled executor (both predicate values), its gradient too", () => {
  const f = (x: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.mul(sc.square(x), 3), () => sc.sin(x));
  const staged = sc.stage(f, { autograph: false });
  for (const x of [sc.tensor([0.5, 1, 2]), sc.tensor([-0.5, -1, -2])]) {
    assert.deepEqual([...(staged(x) as sc.Tensor).dataSync()], [...(f(x) as sc.Tensor).dataSync()]);
    const g = sc.stage((v: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(f(u)))(v), { autograph: false });
    assert.deepEqual([...(g(x) as sc.Tensor).dataSync()], [...(sc.grad((u: sc.Tensor) => sc.sum(f(u)))(x) as sc.Tensor).dataSync()]);
  }
  const cf = staged.concrete(sc.tensor([1, 2, 3]));
  assert.ok(allOps(cf.graph).includes("cond"));
  const { graph } = optimizeCopy(cf.graph, cf.library);
  assert.ok(!allOps(graph).includes("cond"), "what the executor runs has no cond (the where is fused with the branches)");
});

test("a guarded sqrt (if x > 0 then sqrt(x) else 0) keeps a zero gradient at x = 0 however it is run: if-conversion changes only the executed copy, never the graph that AD differentiates", () => {
  // The untaken branch's sqrt'(0) is infinite: had AD differentiated the if-converted select,
  // 0 * Infinity would make the gradient NaN. Each route below runs the optimized copy.
  const guarded = (x: sc.Tensor) => sc.cond(sc.greater(x, 0), () => sc.sqrt(x), () => sc.zerosLike(x));
  const loss = (x: sc.Tensor) => sc.sum(guarded(x));
  const x = sc.scalar(0);
  const eager = sc.grad(loss)(x);
  const stagedForward = sc.stage(guarded);
  const throughStaged = sc.grad((v: sc.Tensor) => sc.sum(stagedForward(v)))(x);
  const stagedGrad = sc.stage(sc.grad(loss));
  const restagedGrad = sc.stage((v: sc.Tensor) => sc.grad((w: sc.Tensor) => sc.sum(stagedForward(w)))(v));
  const second = sc.stage(sc.grad((v: sc.Tensor) => sc.sum(sc.grad(loss)(v))));
  for (const [name, g] of [["eager tape", eager], ["tape through a staged function", throughStaged], ["staged grad", stagedGrad(x)], ["grad of a staged call, staged", restagedGrad(x)], ["second order, staged", second(x)]] as const) {
    assert.deepEqual(Array.from(g.dataSync()), [0], name);
  }
  // and away from zero, both branches still give the right values and gradients
  assert.ok(Math.abs(stagedGrad(sc.scalar(4)).dataSync()[0]! - 0.25) < 1e-6);
  assert.deepEqual(Array.from(stagedForward(sc.scalar(-3)).dataSync()), [0]);
});
