/**
 * Differentiating staged programs (graph AD): gradients of staged functions through
 * straight-line code, conditionals, data-dependent loops, calls and recursion, checked
 * against the eager tape (same math with JS control flow) and float64 finite differences,
 * to first, second and third order.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { assertClose, numericGrad } from "../util/gradcheck.js";

type F = (...xs: sc.Tensor[]) => sc.Tensor;

interface Program {
  name: string;
  /** Written with staged control flow (sc.cond / sc.whileLoop / sc.scan / staged calls). */
  staged: F;
  /** The same math with JS control flow, run eagerly. */
  eager: F;
  inputs: (r: Rng) => sc.Tensor[];
  /** Highest derivative order to check (default 1). */
  order?: 1 | 2 | 3;
  /** The gradient is not the derivative by design (stopGradient, customGradient). */
  noFiniteDifferences?: boolean;
}

const f64 = (v: sc.NestedArray) => sc.tensor(v, "float64");
const num = (t: sc.Tensor) => t.item() as number;
const w1 = sc.variable(sc.tensor([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3]], "float64"));
const w2 = sc.variable(sc.tensor([[0.2], [-0.5], [0.7]], "float64"));

const mlp = (x: sc.Tensor) => sc.sum(sc.matmul(sc.tanh(sc.matmul(x, w1)), w2));
const body = (v: sc.Tensor) => v.mul(v).mul(0.3).add(v.sin());
/** Strictly increasing for v > 0, so loops on `v < bound` terminate. */
const grow = (v: sc.Tensor) => v.mul(1.3).add(v.sin().mul(0.2));
const condStaged = (p: sc.Tensor, a: () => sc.Tensor, b: () => sc.Tensor) => sc.cond(p, a, b);
const condEager = (p: sc.Tensor, a: () => sc.Tensor, b: () => sc.Tensor) => ((p.item() as boolean) ? a() : b());

const inner = sc.stage((x: sc.Tensor) => x.sin().mul(x));
const recurse: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (n: sc.Tensor, x: sc.Tensor): sc.Tensor => sc.cond(sc.lessEqual(n, 0), () => x, () => recurse(n.sub(1), x.mul(0.9).add(x.sin().mul(0.2)))),
);
const recurseEager = (n: number, x: sc.Tensor): sc.Tensor => (n <= 0 ? x : recurseEager(n - 1, x.mul(0.9).add(x.sin().mul(0.2))));

/** Tree recursion (TreeLSTM-style): node i has children 2i+1, 2i+2 when < size; leaves read x[i]. */
const treeSize = 7;
const treeW = sc.variable(sc.tensor([[0.5, -0.3], [0.2, 0.4]], "float64"));
const treeB = sc.variable(sc.tensor([0.1, -0.2], "float64"));
const tree: (i: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (i: sc.Tensor, x: sc.Tensor): sc.Tensor =>
    sc.cond(
      sc.greaterEqual(i.mul(2).add(1), treeSize),
      () => sc.tanh(sc.gather(x, sc.cast(i, "int32"), 0)),
      () => {
        const l = tree(i.mul(2).add(1), x);
        const r = tree(i.mul(2).add(2), x);
        return sc.tanh(sc.matmul(l.add(r).reshape([1, 2]), treeW).add(treeB).reshape([2]).add(sc.gather(x, sc.cast(i, "int32"), 0)));
      },
    ),
  { outputSignature: sc.spec([2], "float64") },
);
const treeEager = (i: number, x: sc.Tensor): sc.Tensor => {
  const xi = sc.gather(x, sc.scalar(i, "int32"), 0);
  if (2 * i + 1 >= treeSize) return sc.tanh(xi);
  const l = treeEager(2 * i + 1, x);
  const r = treeEager(2 * i + 2, x);
  return sc.tanh(sc.matmul(l.add(r).reshape([1, 2]), treeW).add(treeB).reshape([2]).add(xi));
};

const programs: Program[] = [
  // straight-line
  { name: "polynomial", staged: (x) => sc.sum(x.mul(x).mul(x).sub(x.mul(2))), eager: (x) => sc.sum(x.mul(x).mul(x).sub(x.mul(2))), inputs: (r) => [r.tensor([3])], order: 3 },
  { name: "mlp with variables", staged: mlp, eager: mlp, inputs: (r) => [r.tensor([4, 2])], order: 2 },
  { name: "softmax cross-entropy", staged: (x) => sc.sum(sc.logSoftmax(x, -1).mul(f64([1, 0, 0]))), eager: (x) => sc.sum(sc.logSoftmax(x, -1).mul(f64([1, 0, 0]))), inputs: (r) => [r.tensor([2, 3])], order: 2 },
  { name: "broadcasting", staged: (a, b) => sc.sum(a.mul(b).add(b.exp())), eager: (a, b) => sc.sum(a.mul(b).add(b.exp())), inputs: (r) => [r.tensor([2, 3]), r.tensor([3])], order: 2 },
  { name: "reductions", staged: (x) => sc.logSumExp(x, 1).sum().add(sc.max(x).mul(2)), eager: (x) => sc.logSumExp(x, 1).sum().add(sc.max(x).mul(2)), inputs: (r) => [r.tensor([3, 4])], order: 2 },
  { name: "small convnet", staged: (x, k) => sc.sum(sc.relu(sc.conv2d(x, k, { padding: "same" })).square()), eager: (x, k) => sc.sum(sc.relu(sc.conv2d(x, k, { padding: "same" })).square()), inputs: (r) => [r.tensor([1, 2, 4, 4]), r.tensor([3, 2, 3, 3])] },
  { name: "shape ops", staged: (x) => sc.sum(sc.concat([x.transpose(), x.transpose().flip(0)], 1).square()), eager: (x) => sc.sum(sc.concat([x.transpose(), x.transpose().flip(0)], 1).square()), inputs: (r) => [r.tensor([2, 3])], order: 2 },
  // conditionals
  ...[0.6, -0.6].map((v): Program => ({ name: `cond (${v > 0 ? "then" : "else"})`, staged: (x) => condStaged(sc.greater(sc.sum(x), 0), () => sc.sum(x.sin().mul(x)), () => sc.sum(x.exp())), eager: (x) => condEager(sc.greater(sc.sum(x), 0), () => sc.sum(x.sin().mul(x)), () => sc.sum(x.exp())), inputs: (r) => [r.tensor([3], v - 0.2, v + 0.2)], order: 3 })),
  ...[[0.5, 0.5], [0.5, -0.5], [-0.5, 0.5], [-0.5, -0.5]].map(([a, b]): Program => ({
    name: `nested cond (${a}, ${b})`,
    staged: (x, y) => condStaged(sc.greater(sc.sum(x), 0), () => condStaged(sc.greater(sc.sum(y), 0), () => sc.sum(x.mul(y)), () => sc.sum(x.sub(y).square())), () => sc.sum(y.cos().mul(x))),
    eager: (x, y) => condEager(sc.greater(sc.sum(x), 0), () => condEager(sc.greater(sc.sum(y), 0), () => sc.sum(x.mul(y)), () => sc.sum(x.sub(y).square())), () => sc.sum(y.cos().mul(x))),
    inputs: (r) => [r.tensor([2], a! - 0.1, a! + 0.1), r.tensor([2], b! - 0.1, b! + 0.1)],
    order: 2,
  })),
  { name: "cond on a variable's value", staged: (x) => condStaged(sc.greater(sc.sum(w2), 0), () => mlp(x), () => mlp(x).neg()), eager: (x) => condEager(sc.greater(sc.sum(w2), 0), () => mlp(x), () => mlp(x).neg()), inputs: (r) => [r.tensor([1, 2])], order: 2 },
  // loops
  {
    name: "fixed-count loop",
    staged: (x) => sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), body(v!)], [sc.scalar(0, "int32"), x])[1]!),
    eager: (x) => { let v = x; for (let i = 0; i < 3; i++) v = body(v); return sc.sum(v); },
    inputs: (r) => [r.tensor([2])],
    order: 3,
  },
  ...[0.9, 2.5].map((start): Program => ({
    name: `data-dependent trip count from ${start}`,
    staged: (x) => sc.whileLoop((v) => sc.less(v, 5), (v) => [grow(v)], [x])[0]!,
    eager: (x) => { let v = x; while (num(v) < 5) v = grow(v); return v; },
    inputs: () => [f64(start)],
    order: 3,
  })),
  {
    name: "loop with invariants and two carries",
    staged: (x, a) => { const [, u, v] = sc.whileLoop((i) => sc.less(i, 4), (i, u, v) => [i.add(1), u!.mul(a).add(v!.sin()), v!.add(u!.mul(0.1))], [sc.scalar(0, "int32"), x, x.mul(0.5)]); return sc.sum(u!.mul(v!)); },
    eager: (x, a) => { let u = x, v = x.mul(0.5); for (let i = 0; i < 4; i++) [u, v] = [u.mul(a).add(v.sin()), v.add(u.mul(0.1))]; return sc.sum(u.mul(v)); },
    inputs: (r) => [r.tensor([2]), r.tensor([], 0.5, 0.9)],
    order: 2,
  },
  {
    // native control flow converted by AutoGraph: the tensor test makes the loop a staged while
    // and `break` a flag in its condition
    name: "early exit with a native break (AutoGraph)",
    staged: sc.autograph(
      function breakEarly(x: sc.Tensor) {
        let v = x;
        for (let i = 0; i < 10; i++) {
          v = body(v);
          if ((sc.sum(v) as unknown as number) > 3) break;
        }
        return sc.sum(v);
      },
      { scope: { sc, body } },
    ) as F,
    eager: (x) => { let v = x; for (let i = 0; i < 10; i++) { v = body(v); if (num(sc.sum(v)) > 3) break; } return v.sum(); },
    inputs: () => [f64([0.5, 0.3])],
    order: 2,
  },
  {
    name: "early exit (break) via a flag in the loop condition",
    staged: (x) => sc.whileLoop((i, v, done) => sc.logicalAnd(sc.less(i, 10), sc.logicalNot(done!)), (i, v) => { const nv = body(v!); return [i.add(1), nv, sc.greater(sc.sum(nv), 3)]; }, [sc.scalar(0, "int32"), x, sc.tensor(false)])[1]!.sum(),
    eager: (x) => { let v = x; for (let i = 0; i < 10; i++) { v = body(v); if (num(sc.sum(v)) > 3) break; } return v.sum(); },
    inputs: () => [f64([0.5, 0.3])],
    order: 2,
  },
  {
    name: "nested loops",
    staged: (x) => sc.whileLoop((i) => sc.less(i, 2), (i, v) => [i.add(1), sc.whileLoop((j) => sc.less(j, 2), (j, u) => [j.add(1), body(u!)], [sc.scalar(0, "int32"), v!])[1]!], [sc.scalar(0, "int32"), x])[1]!.sum(),
    eager: (x) => { let v = x; for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) v = body(v); return v.sum(); },
    inputs: (r) => [r.tensor([2])],
    order: 2,
  },
  {
    name: "cond inside a loop",
    staged: (x) => sc.whileLoop((i) => sc.less(i, 4), (i, v) => [i.add(1), sc.cond(sc.greater(sc.sum(v!), 1), () => v!.mul(0.5), () => body(v!))], [sc.scalar(0, "int32"), x])[1]!.sum(),
    eager: (x) => { let v = x; for (let i = 0; i < 4; i++) v = num(sc.sum(v)) > 1 ? v.mul(0.5) : body(v); return v.sum(); },
    inputs: () => [f64([0.4, 0.5])],
    order: 2,
  },
  {
    name: "loop inside a cond",
    staged: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.whileLoop((v) => sc.less(sc.sum(v), 4), (v) => [grow(v)], [x])[0]!.sum(), () => x.sum()),
    eager: (x) => { if (num(sc.sum(x)) > 0) { let v = x; while (num(sc.sum(v)) < 4) v = grow(v); return v.sum(); } return x.sum(); },
    inputs: () => [f64([0.3, 0.2])],
    order: 2,
  },
  {
    name: "scan (an RNN over a sequence)",
    staged: (xs, h0) => sc.sum(sc.scan((c, x) => { const h = sc.tanh(c[0]!.mul(0.8).add(x)); return [[h], h]; }, [h0], xs)[1]),
    eager: (xs, h0) => { let h = h0; const ys: sc.Tensor[] = []; for (const x of sc.unstack(xs)) { h = sc.tanh(h.mul(0.8).add(x)); ys.push(h); } return sc.sum(sc.stack(ys)); },
    inputs: (r) => [r.tensor([4, 2]), r.tensor([2])],
    order: 2,
  },
  // calls and recursion
  { name: "call into the function library", staged: (x) => sc.sum(inner(x).add(inner(x.mul(2)))), eager: (x) => sc.sum(x.sin().mul(x).add(x.mul(2).sin().mul(x.mul(2)))), inputs: (r) => [r.tensor([3])], order: 3 },
  ...[3, 10, 50].map((depth): Program => ({ name: `linear recursion to depth ${depth}`, staged: (x) => sc.sum(recurse(f64(depth), x)), eager: (x) => sc.sum(recurseEager(depth, x)), inputs: (r) => [r.tensor([2])], order: depth === 50 ? 1 : 2 })),
  { name: "tree recursion (TreeLSTM-style) over variables", staged: (x) => sc.sum(tree(f64(0), x)), eager: (x) => sc.sum(treeEager(0, x)), inputs: (r) => [r.tensor([treeSize, 2])], order: 2 },
  // escapes
  { name: "customGradient inside staged code", staged: (x) => sc.sum(clip(x).mul(x)), eager: (x) => sc.sum(clip(x).mul(x)), inputs: (r) => [r.tensor([3])], noFiniteDifferences: true },
  { name: "stopGradient inside staged code", staged: (x) => sc.sum(sc.stopGradient(x.square()).mul(x)), eager: (x) => sc.sum(sc.stopGradient(x.square()).mul(x)), inputs: (r) => [r.tensor([3])], order: 2, noFiniteDifferences: true },
  // more straight-line and control-flow shapes
  { name: "matmul chain with broadcasting batch", staged: (a, b) => sc.sum(sc.matmul(a, b).tanh()), eager: (a, b) => sc.sum(sc.matmul(a, b).tanh()), inputs: (r) => [r.tensor([2, 3, 4]), r.tensor([4, 2])], order: 2 },
  { name: "gather, scatter and slicing", staged: (x) => sc.sum(sc.gather(x, sc.tensor([2, 0, 2], "int32"), 0).square().add(x.slice([1], [3]).exp().sum())), eager: (x) => sc.sum(sc.gather(x, sc.tensor([2, 0, 2], "int32"), 0).square().add(x.slice([1], [3]).exp().sum())), inputs: (r) => [r.tensor([4])], order: 2 },
  { name: "pooling", staged: (x) => sc.sum(sc.maxPool2d(x, { kernelSize: 2 }).add(sc.avgPool2d(x, { kernelSize: 2 }))), eager: (x) => sc.sum(sc.maxPool2d(x, { kernelSize: 2 }).add(sc.avgPool2d(x, { kernelSize: 2 }))), inputs: (r) => [r.tensor([1, 1, 4, 4])] },
  { name: "normalization", staged: (x) => sc.sum(x.sub(sc.mean(x, 1, true)).div(sc.sqrt(sc.variance(x, 1, true).add(1e-3))).mul(f64([1, 2, 3]))), eager: (x) => sc.sum(x.sub(sc.mean(x, 1, true)).div(sc.sqrt(sc.variance(x, 1, true).add(1e-3))).mul(f64([1, 2, 3]))), inputs: (r) => [r.tensor([2, 3])], order: 2 },
  { name: "cond selecting between loops", staged: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.whileLoop((i, v) => sc.less(i, 2), (i, v) => [i.add(1), body(v!)], [sc.scalar(0, "int32"), x])[1]!.sum(), () => sc.whileLoop((i, v) => sc.less(i, 3), (i, v) => [i.add(1), v!.mul(0.5)], [sc.scalar(0, "int32"), x])[1]!.sum()), eager: (x) => { let v = x; if (num(sc.sum(x)) > 0) { for (let i = 0; i < 2; i++) v = body(v); } else { for (let i = 0; i < 3; i++) v = v.mul(0.5); } return v.sum(); }, inputs: () => [f64([0.3, 0.1])], order: 2 },
  { name: "loop carrying a matrix (RNN cell)", staged: (h0, xw) => sc.whileLoop((i) => sc.less(i, 3), (i, h) => [i.add(1), sc.tanh(sc.matmul(h!, xw).add(0.1))], [sc.scalar(0, "int32"), h0])[1]!.sum(), eager: (h0, xw) => { let h = h0; for (let i = 0; i < 3; i++) h = sc.tanh(sc.matmul(h, xw).add(0.1)); return h.sum(); }, inputs: (r) => [r.tensor([2, 3]), r.tensor([3, 3])], order: 2 },
  { name: "loop whose trip count depends on the input", staged: (x) => sc.whileLoop((v, s) => sc.less(s, 6), (v, s) => [v.sin().add(v), s.add(v.abs().sum()).add(1)], [x, sc.scalar(0, "float64")])[0]!.sum(), eager: (x) => { let v = x; let s = 0; while (s < 6) { s += (num(v.abs().sum()) + 1); v = v.sin().add(v); } return v.sum(); }, inputs: () => [f64([0.4, -0.2])], order: 3 },
  { name: "staged call inside a loop", staged: (x) => sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), inner(v!)], [sc.scalar(0, "int32"), x])[1]!.sum(), eager: (x) => { let v = x; for (let i = 0; i < 3; i++) v = v.sin().mul(v); return v.sum(); }, inputs: (r) => [r.tensor([2], 0.5, 1)], order: 2 },
  { name: "recursion inside a cond", staged: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.sum(recurse(f64(4), x)), () => sc.sum(x)), eager: (x) => (num(sc.sum(x)) > 0 ? sc.sum(recurseEager(4, x)) : sc.sum(x)), inputs: (r) => [r.tensor([2], 0.2, 0.6)], order: 2 },
  { name: "third derivative of a cond of a loop", staged: (x) => sc.cond(sc.greater(x, 0), () => sc.whileLoop((v) => sc.less(v, 3), (v) => [grow(v)], [x])[0]!, () => x.exp()), eager: (x) => { if (num(x) > 0) { let v = x; while (num(v) < 3) v = grow(v); return v; } return x.exp(); }, inputs: () => [f64(0.7)], order: 3 },
  { name: "variables inside loop and cond", staged: (x) => sc.whileLoop((i) => sc.less(i, 2), (i, v) => [i.add(1), sc.cond(sc.greater(sc.sum(w2), 0), () => sc.matmul(v!, w1).tanh().matmul(sc.transpose(w1)), () => v!)], [sc.scalar(0, "int32"), x])[1]!.sum(), eager: (x) => { let v = x; for (let i = 0; i < 2; i++) v = num(sc.sum(w2)) > 0 ? sc.matmul(v, w1).tanh().matmul(sc.transpose(w1)) : v; return v.sum(); }, inputs: (r) => [r.tensor([1, 2])], order: 2 },
  { name: "hostCall body", staged: (x) => sc.sum(sc.hostCall((t: sc.Tensor) => t.sin().mul(t), sc.spec([3], "float64"), x) as sc.Tensor), eager: (x) => sc.sum(x.sin().mul(x)), inputs: (r) => [r.tensor([3])], order: 2 },
];

const clip = sc.customGradient((x: sc.Tensor) => ({ value: sc.identity(x), grad: (dy: sc.Tensor) => sc.minimum(sc.maximum(dy, -0.5), 0.5) }));

function nthGrad(f: F, order: number, n: number): F {
  let g: F = f;
  for (let k = 0; k < order; k++) {
    const prev = g;
    g = (...xs) => {
      const gs = sc.grad((...ys: sc.Tensor[]) => sc.sum(prev(...ys)), { argnums: "all" })(...xs) as sc.Tensor[];
      return gs.slice(0, n).reduce((acc, t) => acc.add(sc.sum(t)), sc.scalar(0, "float64"));
    };
  }
  return g;
}

for (const p of programs) {
  test(`graph AD: ${p.name}`, () => {
    const rng = new Rng(7);
    const xs = p.inputs(rng);
    const staged = sc.stage(p.staged);
    const gStaged = sc.grad((...ys: sc.Tensor[]) => sc.sum(staged(...ys)), { argnums: "all" })(...xs) as sc.Tensor[];
    const gEager = sc.grad((...ys: sc.Tensor[]) => sc.sum(p.eager(...ys)), { argnums: "all" })(...xs) as sc.Tensor[];
    const fd = numericGrad((...ys) => sc.sum(p.eager(...ys)), xs);
    gStaged.forEach((g, i) => {
      assertClose(g.dataSync(), gEager[i]!.dataSync(), 1e-9, `${p.name}: staged vs eager tape, input ${i}`);
      if (!p.noFiniteDifferences) assertClose(g.dataSync(), fd[i]!, 1e-5, `${p.name}: staged vs finite differences, input ${i}`);
    });
    for (let order = 2; order <= (p.order ?? 1); order++) {
      const hs = nthGrad(staged, order - 1, xs.length);
      const he = nthGrad(p.eager, order - 1, xs.length);
      const a = sc.grad(hs, { argnums: "all" })(...xs) as sc.Tensor[];
      const b = sc.grad(he, { argnums: "all" })(...xs) as sc.Tensor[];
      a.forEach((g, i) => assertClose(g.dataSync(), b[i]!.dataSync(), 1e-8, `${p.name}: order ${order}, input ${i}`));
      if (!p.noFiniteDifferences) {
        const fdh = numericGrad(he, xs, 1e-5);
        a.forEach((g, i) => assertClose(g.dataSync(), fdh[i]!, 1e-4, `${p.name}: order ${order} vs finite differences, input ${i}`));
      }
    }
  });
}

test("the suite covers at least 40 programs", () => {
  assert.ok(programs.length >= 40, `only ${programs.length} programs`);
});

test("gradients reach variables read inside staged loops and recursive calls", () => {
  const x = f64([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]]).transpose();
  const tape2 = new sc.GradientTape();
  const loss2 = tape2.record(() => sc.sum(treeEager(0, x)));
  const want = tape2.gradient(loss2, [treeW, treeB]);
  // interpreted on the first call, compiled afterwards
  for (let k = 0; k < 3; k++) {
    const tape = new sc.GradientTape();
    const loss = tape.record(() => sc.sum(tree(f64(0), x)));
    const [gw, gb] = tape.gradient(loss, [treeW, treeB]);
    assertClose(gw!.dataSync(), want[0]!.dataSync(), 1e-12, `d/dW, call ${k}`);
    assertClose(gb!.dataSync(), want[1]!.dataSync(), 1e-12, `d/db, call ${k}`);
    assert.equal(num(loss), num(loss2));
  }
});

test("a recursion's gradient runs each call's forward once and sums weight gradients once", () => {
  const x = f64([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]]).transpose();
  const step = sc.stage((x: sc.Tensor) => {
    const tape = new sc.GradientTape();
    const loss = tape.record(() => sc.sum(tree(f64(0), x)));
    return tape.gradient(loss, [treeW, treeB]);
  });
  const tanh = sc.getOp("tanh").kernels as { cpu: (...a: unknown[]) => unknown };
  const original = tanh.cpu;
  let calls = 0;
  tanh.cpu = (...a: unknown[]) => (calls++, original(...a));
  try {
    step(x);
  } finally {
    tanh.cpu = original;
  }
  assert.equal(calls, treeSize, "one tanh per tree node: no subtree is recomputed in the backward");
  // The backward of the recursive function returns the weight's gradient as stacks of rows,
  // summed by one product after the outermost call: no weight-sized addition per call.
  const cf = step.concrete(x);
  const backward = [...cf.library.functions.values()].find((g) => g.name.endsWith("_backward"))!;
  // (three stacks: W's A and D rows, b's D rows)
  assert.equal(backward.outputNames.filter((n) => n.startsWith("stack_out")).length, 3, backward.outputNames.join(", "));
  assert.ok(!backward.outputNames.some((n) => n.startsWith("grad_variable")), backward.outputNames.join(", "));
  const tape2 = new sc.GradientTape();
  const loss2 = tape2.record(() => sc.sum(treeEager(0, x)));
  const want = tape2.gradient(loss2, [treeW, treeB]);
  const [gw, gb] = step(x);
  assertClose(gw!.dataSync(), want[0]!.dataSync(), 1e-12, "d/dW");
  assertClose(gb!.dataSync(), want[1]!.dataSync(), 1e-12, "d/db");
});

test("mutual recursion: gradients through two staged functions calling each other, with variables", () => {
  const w = sc.variable(sc.tensor([[0.3, -0.2], [0.1, 0.4]], "float64"));
  const b = sc.variable(sc.tensor([0.05, -0.1], "float64"));
  const spec2 = { outputSignature: sc.spec([1, 2], "float64") };
  // even(n) = n <= 0 ? x : tanh(odd(n - 1) W + b);  odd(n) = tanh(even(n - 1) W) * 0.9
  const even: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
    (n: sc.Tensor, x: sc.Tensor) => sc.cond(sc.lessEqual(n, 0), () => x, () => sc.tanh(sc.matmul(odd(n.sub(1), x), w).add(b))),
    spec2,
  );
  const odd: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
    (n: sc.Tensor, x: sc.Tensor) => sc.cond(sc.lessEqual(n, 0), () => x, () => sc.tanh(sc.matmul(even(n.sub(1), x), w)).mul(0.9)),
    spec2,
  );
  const evenEager = (n: number, x: sc.Tensor): sc.Tensor => (n <= 0 ? x : sc.tanh(sc.matmul(oddEager(n - 1, x), w).add(b)));
  const oddEager = (n: number, x: sc.Tensor): sc.Tensor => (n <= 0 ? x : sc.tanh(sc.matmul(evenEager(n - 1, x), w)).mul(0.9));
  const x = f64([[0.7, -0.5]]);
  const t2 = new sc.GradientTape();
  const l2 = t2.record(() => sc.sum(evenEager(5, x)));
  const want = t2.gradient(l2, [w, b]);
  for (let k = 0; k < 3; k++) {
    const t = new sc.GradientTape();
    const l = t.record(() => sc.sum(even(f64(5), x)));
    const got = t.gradient(l, [w, b]);
    assertClose(got[0]!.dataSync(), want[0]!.dataSync(), 1e-12, `d/dW, call ${k}`);
    assertClose(got[1]!.dataSync(), want[1]!.dataSync(), 1e-12, `d/db, call ${k}`);
  }
});

test("variables read by staged functions called in loops and branches get their gradients", () => {
  const w = sc.variable(sc.tensor([[0.3, -0.2], [0.1, 0.4]], "float64"));
  const cell = sc.stage((h: sc.Tensor) => sc.tanh(sc.matmul(h, w)));
  const cellEager = (h: sc.Tensor) => sc.tanh(sc.matmul(h, w));
  const inLoop = (x: sc.Tensor) => sc.whileLoop((i) => sc.less(i, 3), (i, h) => [i.add(1), cell(h!)], [sc.scalar(0, "int32"), x])[1]!;
  const inBranch = (x: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => cell(x).mul(2), () => x);
  const cases: [string, (x: sc.Tensor) => sc.Tensor, (x: sc.Tensor) => sc.Tensor][] = [
    ["loop", inLoop, (x) => cellEager(cellEager(cellEager(x)))],
    ["branch", inBranch, (x) => cellEager(x).mul(2)],
  ];
  const x = f64([[0.7, 0.5]]);
  for (const [name, staged, eager] of cases) {
    const t2 = new sc.GradientTape();
    const l2 = t2.record(() => sc.sum(eager(x)));
    const want = t2.gradient(l2, w).dataSync();
    const f = sc.stage((x: sc.Tensor) => {
      const t = new sc.GradientTape();
      const l = t.record(() => sc.sum(staged(x)));
      return t.gradient(l, w);
    });
    for (let k = 0; k < 2; k++) assertClose(f(x).dataSync(), want, 1e-12, `${name}: d/dW inside a staged step, call ${k}`);
    const t = new sc.GradientTape();
    const l = t.record(() => sc.sum(sc.stage(staged)(x)));
    assertClose(t.gradient(l, w).dataSync(), want, 1e-12, `${name}: d/dW of a staged function under an eager tape`);
  }
});
