/**
 * AutoGraph's conversion against the same program written by hand with sc.whileLoop: staged,
 * both give the same graph to execute (op counts by op and by region, the graph-AD gradient
 * loops and their second-order parts included), so a converted program is as fast as the
 * hand-written one (issue 17's goal: within 3%). The programs are the counted loops of the
 * benchmarks' MAML workload (bench/peers/maml.ts), smaller.
 */
import test from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { prepareForExecution } from "../../src/exec/prepare.js";
import type { FunctionLibrary, Graph } from "../../src/graph/ir.js";
import { programOpCounts } from "../../src/graph/op-counts.js";

type T = any;
type AnyFn = (...a: any[]) => any;

function programCounts(graph: Graph, library: FunctionLibrary): Record<string, number> {
  return Object.fromEntries(programOpCounts(graph, library));
}

/**
 * The op counts of what the executor runs for `fn(...args)`: the traced program optimized for
 * the arguments' types. Scalar constants at the top level are left out: a JS number that became
 * a tensor (`let i = 0`) is a fill, which CSE merges with equal ones, where the hand-written
 * `sc.scalar(0, "int32")` is a captured eager tensor, one per call of sc.scalar; either is made
 * once per call, not per iteration. Constants inside loops and branches are counted.
 */
function executedCounts(fn: AnyFn, args: sc.Tensor[], autograph: boolean): Record<string, number> {
  const c = (sc.stage(fn, { autograph }) as any).concrete(...args) as sc.ConcreteFunction;
  const p = prepareForExecution(c.graph, c.library, [...args, ...c.captureValues()].map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })));
  const counts = programCounts(p.graph, p.library);
  counts["fill"] = (counts["fill"] ?? 0) - p.graph.nodes.filter((n) => n.op === "fill" && n.outputs[0]!.type.shape.length === 0).length;
  if (counts["fill"] === 0) delete counts["fill"];
  return counts;
}

/** The traced loops' regions only (the root also holds the converted loop's first, dead, test). */
function tracedLoopCounts(fn: AnyFn, args: sc.Tensor[], autograph: boolean): Record<string, number> {
  const c = (sc.stage(fn, { autograph }) as any).concrete(...args) as sc.ConcreteFunction;
  const all = programCounts(c.graph, c.library);
  return Object.fromEntries(Object.entries(all).filter(([k]) => k.includes("/")));
}

/** The converted function executes and traces (in its loops) the hand-written one's ops, and gives its values. */
function assertParity(conv: AnyFn, byHand: AnyFn, args: sc.Tensor[]): void {
  assert.deepEqual(executedCounts(conv, args, true), executedCounts(byHand, args, false));
  assert.deepEqual(tracedLoopCounts(conv, args, true), tracedLoopCounts(byHand, args, false));
  assertSameValues((sc.stage(conv) as AnyFn)(...args), byHand(...args));
}

function assertSameValues(a: sc.Tensor[] | sc.Tensor, b: sc.Tensor[] | sc.Tensor): void {
  const x = [a].flat(), y = [b].flat();
  assert.equal(x.length, y.length);
  x.forEach((t, i) => assert.deepEqual([...t.dataSync()], [...y[i]!.dataSync()]));
}

test("for (let i = 0; i < n; i++) over a tensor bound stages to the hand-written loop's graph (i++ is one add, its 1 shared)", () => {
  function converted(n: T, x: T): T {
    let s = x;
    for (let i = 0; i < n; i++) s = sc.mul(s, 1.5);
    return s;
  }
  const byHand = (n: sc.Tensor, x: sc.Tensor) => sc.whileLoop((i) => sc.less(i!, n), (i, s) => [sc.add(i!, 1), sc.mul(s!, 1.5)], [sc.scalar(0, "int32"), x])[1]!;
  const conv: AnyFn = sc.autograph(converted, { scope: { sc } });
  const args = [sc.scalar(4, "int32"), sc.tensor([1, 2, 3])];
  assertParity(conv, byHand, args);
});

test("x--, and x++ whose old value is used, stage to one sub / one add (no sub(x, 0) for the old value)", () => {
  function converted(n: T, x: T): T {
    let s = x, i = n;
    while (i > 0) {
      i--;
      s = sc.mul(s, 2);
    }
    let j = 0, t = x;
    while (j < n) {
      const old = j++;
      t = sc.add(t, old);
    }
    return [s, t];
  }
  const byHand = (n: sc.Tensor, x: sc.Tensor) => {
    const [, s] = sc.whileLoop((i) => sc.greater(i!, 0), (i, s) => [sc.sub(i!, 1), sc.mul(s!, 2)], [n, x]);
    const [, t] = sc.whileLoop((j) => sc.less(j!, n), (j, t) => [sc.add(j!, 1), sc.add(t!, j!)], [sc.scalar(0, "int32"), x]);
    return [s!, t!];
  };
  const conv: AnyFn = sc.autograph(converted, { scope: { sc } });
  const args = [sc.scalar(3, "int32"), sc.tensor([1, 2, 3])];
  assertParity(conv, byHand, args);
});

test("a loop test `k < n && norm(w) > tol` (a cond: && does not evaluate its right side when the left is false) executes as the hand-written logicalAnd", () => {
  function converted(w0: T): T {
    let w = w0, k = 0;
    while (k < 6 && (sc.sqrt(sc.sum(sc.square(w))) as T) > 0.01) {
      w = sc.mul(w, 0.5);
      k = k + 1;
    }
    return [w, k];
  }
  const byHand = (w0: sc.Tensor) => {
    const [k, w] = sc.whileLoop((k, w) => sc.logicalAnd(sc.less(k!, 6), sc.greater(sc.sqrt(sc.sum(sc.square(w!))), 0.01)), (k, w) => [sc.add(k!, 1), sc.mul(w!, 0.5)], [sc.scalar(0, "int32"), w0]);
    return [w!, k!];
  };
  const conv: AnyFn = sc.autograph(converted, { scope: { sc } });
  const args = [sc.tensor([0.3, -0.2, 0.1])];
  assert.deepEqual(executedCounts(conv, args, true), executedCounts(byHand, args, false));
  assertSameValues((sc.stage(conv) as AnyFn)(...args), byHand(args[0]!));
});

// MAML as in bench/peers/maml.ts, smaller: a 1-8-1 network, 2 tasks of 4 points, second order through the inner loops.
const TASKS = 2, ALPHA = 0.05;
const net = (x: T, w1: T, b1: T, w2: T, b2: T): T => sc.add(sc.matmul(sc.relu(sc.add(sc.matmul(x, w1), b1)), w2), b2);
const mse = (x: T, y: T, ...p: T[]) => sc.mean(sc.square(sc.sub(net(x, ...(p as [T, T, T, T])), y)));
const innerGrad = (x: T, y: T, ...p: T[]): T[] => sc.grad((...q: T[]) => mse(x, y, ...q), { argnums: [0, 1, 2, 3] })(...p) as T[];
const sgd = (p: T[], g: T[]) => p.map((v, i) => sc.sub(v, sc.mul(g[i], ALPHA)));

function metaGrad(xs: T, ys: T, steps: T, ...params: T[]): T[] {
  const metaLoss = (...init: T[]) => {
    let total = sc.scalar(0);
    for (let task = 0; task < TASKS; task++) {
      const x = sc.gather(xs, task, 0), y = sc.gather(ys, task, 0);
      let [w1, b1, w2, b2] = init;
      for (let i = 0; i < steps; i++) [w1, b1, w2, b2] = sgd([w1, b1, w2, b2], innerGrad(x, y, w1, b1, w2, b2));
      total = sc.add(total, mse(x, y, w1, b1, w2, b2));
    }
    return sc.div(total, TASKS);
  };
  return sc.grad(metaLoss, { argnums: [0, 1, 2, 3] })(...params) as T[];
}

function metaGradByHand(xs: sc.Tensor, ys: sc.Tensor, steps: sc.Tensor, ...params: sc.Tensor[]): sc.Tensor[] {
  const metaLoss = (...init: sc.Tensor[]) => {
    let total = sc.scalar(0);
    for (let task = 0; task < TASKS; task++) {
      const x = sc.gather(xs, task, 0), y = sc.gather(ys, task, 0);
      const [, ...adapted] = sc.whileLoop((i) => sc.less(i!, steps), (i, ...p) => [sc.add(i!, 1), ...sgd(p, innerGrad(x, y, ...p))], [sc.scalar(0, "int32"), ...init]);
      total = sc.add(total, mse(x, y, ...adapted));
    }
    return sc.div(total, TASKS);
  };
  return sc.grad(metaLoss, { argnums: [0, 1, 2, 3] })(...params) as sc.Tensor[];
}

test("MAML's meta-gradient (second order through a counted inner loop): AutoGraph's conversion executes the hand-written graph, gradient loops included", () => {
  const wave = (n: number, f: number) => Array.from({ length: n }, (_, i) => Math.sin(f * (i + 1)));
  const xs = sc.tensor(wave(TASKS * 4, 2.3).map((v) => 3 * v), "float32", [TASKS, 4, 1]);
  const ys = sc.sin(xs);
  const params = [sc.tensor(wave(8, 1.7), "float32", [1, 8]), sc.tensor(wave(8, 0.9).map((v) => 0.1 * v), "float32", [8]), sc.tensor(wave(8, 3.1).map((v) => 0.3 * v), "float32", [8, 1]), sc.zeros([1])];
  const args = [xs, ys, sc.scalar(3, "int32"), ...params];
  const conv: AnyFn = sc.autograph(metaGrad, { scope: { sc, sgd, innerGrad, mse, TASKS } });
  const counts = executedCounts(conv, args, true);
  assert.deepEqual(counts, executedCounts(metaGradByHand, args, false));
  // the forward inner loops and the graph-AD loops that run them backwards (stacks of the forward values)
  assert.ok((counts["while"] ?? 0) >= 2 * TASKS && (counts["while.1/stackPush"] ?? 0) > 0 && (counts["while.1/stackRead"] ?? 0) > 0, JSON.stringify(counts));
  assert.deepEqual(tracedLoopCounts(conv, args, true), tracedLoopCounts(metaGradByHand, args, false));
  const want = (conv(...args) as sc.Tensor[]).map((g) => [...g.dataSync()]);
  for (const staged of [sc.stage(conv), sc.stage(metaGradByHand as AnyFn, { autograph: false })] as AnyFn[]) {
    (staged(...args) as sc.Tensor[]).forEach((g, i) => g.dataSync().forEach((v, j) => assert.ok(Math.abs(v - want[i]![j]!) <= 1e-5 * (1 + Math.abs(want[i]![j]!)), `gradient ${i}[${j}]: ${v} vs ${want[i]![j]}`)));
  }
});
