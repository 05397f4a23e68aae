/**
 * Structural programs whose output is the structural node's result itself (no reduction after
 * it): a cond, a data-dependent while, a scan, a converted for...of, calls to staged helpers
 * (with loops inside), a loop calling a helper, linear and tree recursion (one with a loop in
 * its body), and a layer reading captured variables. Each comes with the same math written
 * with JS control flow, run eagerly. test/grad/seams.test.ts differentiates them with
 * every transform, in a shuffled order and in a fresh process in the reverse order.
 */
import * as sc from "../../src/api/index.js";
import type { Rng } from "./rng.js";

export type F = (...xs: sc.Tensor[]) => sc.Tensor;

export interface StructuralProgram {
  name: string;
  /** Written with staged control flow; the test stages it. Its output is that control flow's result. */
  fn: F;
  /** The same math with JS control flow, run eagerly. */
  eager: F;
  inputs: (r: Rng) => sc.Tensor[];
  /** Variables the program reads (their gradients are checked with tape.gradient). */
  variables?: sc.Variable[];
}

const f64 = (v: sc.NestedArray) => sc.tensor(v, "float64");
const num = (t: sc.Tensor) => t.item() as number;
/** Strictly increasing for v > 0, so loops on `v < bound` terminate. */
const grow = (v: sc.Tensor) => v.mul(1.3).add(v.sin().mul(0.2));

const w = sc.variable(f64([[0.4, -0.3, 0.2], [0.1, 0.5, -0.4]]), { name: "seam_w" });
const b = sc.variable(f64([0.05, -0.1, 0.2]), { name: "seam_b" });
const layer = (x: sc.Tensor) => sc.tanh(sc.matmul(x, w).add(b));

// Helpers ending in an op whose VJP reads its own output (exp, tanh): the doubled-gradient class.
const expHelper = sc.stage((x: sc.Tensor) => x.sin().mul(x).exp(), { autograph: false });
const expHelperEager = (x: sc.Tensor) => x.sin().mul(x).exp();
const loopHelper = sc.stage((x: sc.Tensor) => sc.whileLoop((v) => sc.less(sc.sum(v), 4), (v) => [grow(v)], [x])[0]!, { autograph: false });
const loopHelperEager = (x: sc.Tensor) => {
  let v = x;
  while (num(sc.sum(v)) < 4) v = grow(v);
  return v;
};
const scanHelper = sc.stage((xs: sc.Tensor, h0: sc.Tensor) => sc.scan((c, x) => { const h = sc.tanh(c[0]!.mul(0.8).add(x)); return [[h], h]; }, [h0], xs)[1], { autograph: false });
const scanEager = (xs: sc.Tensor, h0: sc.Tensor) => {
  let h = h0;
  const ys: sc.Tensor[] = [];
  for (const x of sc.unstack(xs)) ys.push((h = sc.tanh(h.mul(0.8).add(x))));
  return sc.stack(ys);
};

/** for...of over a tensor's rows, converted by AutoGraph into a staged loop. */
const forOfRnn = sc.autograph(
  function forOfRnn(xs: sc.Tensor, h0: sc.Tensor) {
    let h = h0;
    for (const x of xs as unknown as sc.Tensor[]) h = sc.tanh(h.mul(0.7).add(x).mul(x));
    return h;
  },
  { scope: { sc } },
) as F;
const forOfEager = (xs: sc.Tensor, h0: sc.Tensor) => {
  let h = h0;
  for (const x of sc.unstack(xs)) h = sc.tanh(h.mul(0.7).add(x).mul(x));
  return h;
};
const forOfHelper = sc.stage(forOfRnn);

const recurse: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (n: sc.Tensor, x: sc.Tensor): sc.Tensor => sc.cond(sc.lessEqual(n, 0), () => x.exp(), () => recurse(n.sub(1), x.mul(0.9).add(x.sin().mul(0.2)))),
  { autograph: false },
);
const recurseEager = (n: number, x: sc.Tensor): sc.Tensor => (n <= 0 ? x.exp() : recurseEager(n - 1, x.mul(0.9).add(x.sin().mul(0.2))));

/** Linear recursion whose body runs a data-dependent loop. */
const recurseLoop: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (n: sc.Tensor, x: sc.Tensor): sc.Tensor =>
    sc.cond(sc.lessEqual(n, 0), () => x, () => recurseLoop(n.sub(1), sc.whileLoop((v) => sc.less(sc.sum(v), 2), (v) => [grow(v)], [x.mul(0.6)])[0]!)),
  { autograph: false },
);
const recurseLoopEager = (n: number, x: sc.Tensor): sc.Tensor => {
  if (n <= 0) return x;
  let v = x.mul(0.6);
  while (num(sc.sum(v)) < 2) v = grow(v);
  return recurseLoopEager(n - 1, v);
};

/** Tree recursion (TreeLSTM-style) over variables: node i has children 2i+1, 2i+2 when < size. */
const treeSize = 7;
const tw = sc.variable(f64([[0.5, -0.3], [0.2, 0.4]]), { name: "seam_tree_w" });
const tb = sc.variable(f64([0.1, -0.2]), { name: "seam_tree_b" });
const treeNode = (l: sc.Tensor, r: sc.Tensor, xi: sc.Tensor) => sc.tanh(sc.matmul(l.add(r).reshape([1, 2]), tw).add(tb).reshape([2]).add(xi));
const tree: (i: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (i: sc.Tensor, x: sc.Tensor): sc.Tensor =>
    sc.cond(
      sc.greaterEqual(i.mul(2).add(1), treeSize),
      () => sc.tanh(sc.gather(x, sc.cast(i, "int32"), 0)),
      () => treeNode(tree(i.mul(2).add(1), x), tree(i.mul(2).add(2), x), sc.gather(x, sc.cast(i, "int32"), 0)),
    ),
  { outputSignature: sc.spec([2], "float64"), autograph: false },
);
const treeEager = (i: number, x: sc.Tensor): sc.Tensor => {
  const xi = sc.gather(x, sc.scalar(i, "int32"), 0);
  if (2 * i + 1 >= treeSize) return sc.tanh(xi);
  return treeNode(treeEager(2 * i + 1, x), treeEager(2 * i + 2, x), xi);
};

/** Tree recursion whose internal nodes refine their state with a data-dependent loop. */
const refine = (h: sc.Tensor) => sc.whileLoop((k, v) => sc.logicalAnd(sc.less(k, 3), sc.less(sc.sum(v!.square()), 1.2)), (k, v) => [k.add(1), v!.mul(1.2).add(0.1)], [sc.scalar(0, "int32"), h])[1]!;
const refineEager = (h: sc.Tensor) => {
  let v = h;
  for (let k = 0; k < 3 && num(sc.sum(v.square())) < 1.2; k++) v = v.mul(1.2).add(0.1);
  return v;
};
const loopTree: (i: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (i: sc.Tensor, x: sc.Tensor): sc.Tensor =>
    sc.cond(
      sc.greaterEqual(i.mul(2).add(1), treeSize),
      () => sc.tanh(sc.gather(x, sc.cast(i, "int32"), 0)),
      () => refine(treeNode(loopTree(i.mul(2).add(1), x), loopTree(i.mul(2).add(2), x), sc.gather(x, sc.cast(i, "int32"), 0))),
    ),
  { outputSignature: sc.spec([2], "float64"), autograph: false },
);
const loopTreeEager = (i: number, x: sc.Tensor): sc.Tensor => {
  const xi = sc.gather(x, sc.scalar(i, "int32"), 0);
  if (2 * i + 1 >= treeSize) return sc.tanh(xi);
  return refineEager(treeNode(loopTreeEager(2 * i + 1, x), loopTreeEager(2 * i + 2, x), xi));
};

export const structuralPrograms: StructuralProgram[] = [
  {
    name: "cond whose branches end in exp and sin*x",
    fn: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => x.exp(), () => x.sin().mul(x)),
    eager: (x) => (num(sc.sum(x)) > 0 ? x.exp() : x.sin().mul(x)),
    inputs: (r) => [r.tensor([3], 0.1, 0.5)],
  },
  {
    name: "data-dependent while",
    fn: (x) => sc.whileLoop((v) => sc.less(sc.sum(v), 5), (v) => [grow(v)], [x])[0]!,
    eager: (x) => { let v = x; while (num(sc.sum(v)) < 5) v = grow(v); return v; },
    inputs: (r) => [r.tensor([2], 0.3, 0.8)],
  },
  {
    name: "scan (stacked outputs)",
    fn: (xs, h0) => sc.scan((c, x) => { const h = sc.tanh(c[0]!.mul(0.8).add(x)); return [[h], h]; }, [h0], xs)[1],
    eager: scanEager,
    inputs: (r) => [r.tensor([4, 2]), r.tensor([2])],
  },
  { name: "converted for...of", fn: forOfRnn, eager: forOfEager, inputs: (r) => [r.tensor([3, 2]), r.tensor([2])] },
  { name: "call to a staged helper ending in exp", fn: (x) => expHelper(x), eager: expHelperEager, inputs: (r) => [r.tensor([3])] },
  { name: "call to a staged helper with a while", fn: (x) => loopHelper(x), eager: loopHelperEager, inputs: (r) => [r.tensor([2], 0.3, 0.8)] },
  { name: "call to a staged helper with a scan", fn: (xs, h0) => scanHelper(xs, h0), eager: scanEager, inputs: (r) => [r.tensor([3, 2]), r.tensor([2])] },
  { name: "call to a staged helper with a converted for...of", fn: (xs, h0) => forOfHelper(xs, h0), eager: forOfEager, inputs: (r) => [r.tensor([3, 2]), r.tensor([2])] },
  {
    name: "loop calling a staged helper",
    fn: (x) => sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), expHelper(v!).mul(0.5)], [sc.scalar(0, "int32"), x])[1]!,
    eager: (x) => { let v = x; for (let i = 0; i < 3; i++) v = expHelperEager(v).mul(0.5); return v; },
    inputs: (r) => [r.tensor([2], -0.5, 0.5)],
  },
  { name: "linear recursion ending in exp", fn: (x) => recurse(f64(3), x), eager: (x) => recurseEager(3, x), inputs: (r) => [r.tensor([2])] },
  { name: "linear recursion with a loop in its body", fn: (x) => recurseLoop(f64(2), x), eager: (x) => recurseLoopEager(2, x), inputs: (r) => [r.tensor([2], 0.4, 0.8)] },
  { name: "tree recursion over variables", fn: (x) => tree(f64(0), x), eager: (x) => treeEager(0, x), inputs: (r) => [r.tensor([treeSize, 2])], variables: [tw, tb] },
  { name: "tree recursion with a loop in its body", fn: (x) => loopTree(f64(0), x), eager: (x) => loopTreeEager(0, x), inputs: (r) => [r.tensor([treeSize, 2])], variables: [tw, tb] },
  { name: "tanh(x W + b) layer over captured variables", fn: layer, eager: layer, inputs: (r) => [r.tensor([2, 2])], variables: [w, b] },
];
