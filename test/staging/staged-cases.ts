/**
 * Eager-vs-staged cases for registry ops that the gradient cases (test/util/grad-cases) do not
 * cover: ops without a gradient (comparisons, logical ops, argMax/argMin, argsort, oneHot,
 * creation ops, keyed random draws, any/all, print), integer and bool dtypes of the others
 * (casts to int dtypes, integer arithmetic), and the optimizer's own ops (`constant`,
 * `fusedElementwise`). test/staging/sweep.test.ts runs every case eagerly and staged.
 */
import * as sc from "../../src/api/index.js";
import type { Rng } from "../util/rng.js";

export interface StagedCase {
  /** Registry op this case covers. */
  op: string;
  label?: string;
  inputs: (rng: Rng) => sc.Tensor[];
  fn: (...xs: sc.Tensor[]) => sc.Tensor | sc.Tensor[];
  /** stage() options (e.g. an inputSignature with unknown dims). */
  options?: sc.StageOptions;
}

const ints = (rng: Rng, shape: number[], lo: number, hi: number, dtype: sc.DType = "int32") =>
  sc.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.int(lo, hi)), dtype, shape);
const bools = (rng: Rng, shape: number[]) => sc.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.next() < 0.5), "bool", shape);
/** float32 values with the awkward ones mixed in: NaN, +-0, +-Infinity, ties, a denormal. */
const special = () => sc.tensor([NaN, -0, 0, Infinity, -Infinity, 1.5, 1.5, -2.25, 1e-40, 3], "float32", [2, 5]);
const f32 = (rng: Rng, shape: number[], lo = -2, hi = 2) => rng.tensor(shape, lo, hi, "float32");

const COMPARISONS = ["equal", "notEqual", "less", "lessEqual", "greater", "greaterEqual"] as const;
const LOGICAL = ["logicalAnd", "logicalOr", "logicalXor"] as const;
const fns = sc as unknown as Record<string, (...a: unknown[]) => sc.Tensor>;
/** A generator whose stream the randomNextKey case restarts on every call (eager and staged alike). */
const caseGenerator = sc.random.Generator.fromSeed(0);

export const cases: StagedCase[] = [
  // creation
  { op: "fill", inputs: () => [], fn: () => [sc.full([2, 3], 2.5), sc.zeros([4], "int32"), sc.full([2], true), sc.ones([1, 2], "float64")] },
  {
    op: "fillLike",
    label: "unknown dims",
    inputs: (r) => [f32(r, [3, 2])],
    fn: (x) => [sc.zerosLike(x), sc.onesLike(x, "int32"), sc.fullLike(x, 7, "uint8")],
    options: { inputSignature: [sc.spec([null, 2])] },
  },
  {
    op: "packResiduals",
    label: "values of several dtypes, unpacked",
    inputs: (r) => [f32(r, [2, 3]), ints(r, [4], -5, 5), bools(r, [2])],
    fn: (a, b, c) => {
      const h = sc.applyOp(sc.getOp("packResiduals"), [a, b, c], {})[0]!;
      const types = [a, b, c].map((t) => ({ dtype: t.dtype, shape: t.shape }));
      return [...sc.applyOp(sc.getOp("unpackResiduals"), [h], { types }), a.add(1)];
    },
  },
  {
    op: "stackRead",
    label: "rows of a pushed stack",
    inputs: (r) => [f32(r, [3, 2])],
    fn: (x) => {
      const s = sc.stackPush(sc.stackPush(sc.emptyStack(x), x), x.mul(2));
      return [sc.stackRead(s, sc.scalar(1, "int32")), sc.stackRead(s, sc.scalar(0, "int32")), ...sc.stackPop(s)];
    },
  },
  {
    op: "emptyStack",
    label: "rows like a tensor of unknown shape",
    inputs: (r) => [f32(r, [3, 2])],
    fn: (x) => {
      const s = sc.stackPush(sc.stackPush(sc.emptyStack(x), x), x.mul(2));
      return [s, sc.sum(s, 0)];
    },
    options: { inputSignature: [sc.spec([null, 2])] },
  },
  { op: "range", inputs: () => [], fn: () => [sc.arange(0, 10, 3), sc.arange(0, 5, 1, "int32"), sc.arange(1, 2, 0.25, "float64"), sc.linspace(-1, 1, 5)] },
  { op: "eye", inputs: () => [], fn: () => [sc.eye(3), sc.eye(2, 4, "int32"), sc.eye(3, 2, "bool")] },
  { op: "oneHot", inputs: (r) => [ints(r, [2, 3], 0, 4)], fn: (i) => [sc.oneHot(i, 4), sc.oneHot(i, 5, "int32")] },
  { op: "oneHot", label: "out of range raises", inputs: () => [sc.tensor([0, 7], "int32")], fn: (i) => sc.oneHot(i, 3) },

  // comparisons and logical ops: floats with NaN/-0/ties, ints, broadcasting, weak scalars
  ...COMPARISONS.map(
    (op): StagedCase => ({
      op,
      inputs: (r) => [special(), sc.tensor([0, 1.5, NaN, -Infinity, -0], "float32"), ints(r, [3, 1], -2, 3), ints(r, [4], -2, 3)],
      fn: (a, b, i, j) => [fns[op]!(a, b), fns[op]!(i, j), fns[op]!(a, 1.5), fns[op]!(i, sc.tensor(1, "int32"))],
    }),
  ),
  ...LOGICAL.map((op): StagedCase => ({ op, inputs: (r) => [bools(r, [3, 4]), bools(r, [4])], fn: (a, b) => [fns[op]!(a, b), fns[op]!(b, true)] })),
  { op: "logicalNot", inputs: (r) => [bools(r, [2, 3])], fn: (a) => sc.logicalNot(a) },
  { op: "isNaN", inputs: () => [special()], fn: (a) => [sc.isNaN(a), sc.isNaN(sc.cast(a, "float64"))] },
  { op: "isFinite", inputs: () => [special()], fn: (a) => [sc.isFinite(a), sc.logicalNot(sc.isFinite(a.mul(2)))] },

  // reductions without gradients
  {
    op: "argMax",
    inputs: (r) => [special(), f32(r, [3, 4, 2]), ints(r, [5], 0, 3)],
    fn: (s, x, i) => [sc.argMax(s, 1), sc.argMax(x, 0), sc.argMax(x, -1, true), sc.argMax(i), sc.argMax(x)],
  },
  {
    op: "argMin",
    inputs: (r) => [special(), f32(r, [3, 4, 2]), ints(r, [5], 0, 3)],
    fn: (s, x, i) => [sc.argMin(s, 1), sc.argMin(x, 1), sc.argMin(x, 2, true), sc.argMin(i), sc.argMin(x)],
  },
  { op: "any", inputs: (r) => [bools(r, [3, 4]), special()], fn: (b, s) => [sc.any(b, 1), sc.any(b), sc.any(s, 0, true)] },
  { op: "all", inputs: (r) => [bools(r, [3, 4]), special()], fn: (b, s) => [sc.all(b, 0), sc.all(b), sc.all(s, 1)] },
  { op: "argsort", inputs: (r) => [f32(r, [3, 5]), ints(r, [6], 0, 3)], fn: (x, i) => [sc.argsort(x), sc.argsort(x, { axis: 0, descending: true }), sc.argsort(i)] },

  // keyed random draws give the same numbers staged as eager
  {
    op: "randomUniform",
    inputs: () => [],
    fn: () => [sc.random.uniform([3, 4], { key: sc.random.key(1) }), sc.random.uniform([5], { seed: 9, minval: -2, maxval: 3, dtype: "float64" })],
  },
  { op: "randomNormal", inputs: () => [], fn: () => [sc.random.normal([3, 4], { key: sc.random.key(2) }), sc.random.normal([2], { seed: 3, mean: 1, stddev: 2, dtype: "float64" })] },
  { op: "randomBernoulli", inputs: (r) => [f32(r, [2, 5], 0, 1)], fn: (p) => [sc.random.bernoulli(p, undefined, { key: sc.random.key(4) }), sc.random.bernoulli(0.3, [6], { seed: 5 })] },
  { op: "randomCategorical", inputs: (r) => [f32(r, [3, 4])], fn: (l) => [sc.random.categorical(l, 5, { key: sc.random.key(6) }), sc.random.categorical(sc.tensor([0, 1, 2]), 4, { seed: 7 })] },

  // keys as tensors (a key argument, split and foldIn of it, seeds held in tensors) and a generator
  {
    op: "randomUniform",
    label: "key argument",
    inputs: () => [sc.random.key(11)],
    fn: (k) => [sc.random.uniform([3, 2], { key: k }), sc.random.normal([4], { key: k, dtype: "float64" })],
  },
  { op: "randomSplit", inputs: () => [sc.random.key(12)], fn: (k) => [...sc.random.split(k, 3), sc.random.uniform([2], { key: sc.random.split(k)[1]! })] },
  {
    op: "randomFoldIn",
    inputs: () => [sc.random.key(13), sc.scalar(5, "int32")],
    fn: (k, d) => [sc.random.foldIn(k, d), sc.random.foldIn(k, 7), sc.random.normal([3], { key: sc.random.foldIn(k, d) })],
  },
  { op: "randomKey", inputs: () => [sc.scalar(-3, "int32"), sc.scalar(2 ** 40, "int64")], fn: (s, l) => [sc.random.key(s), sc.random.key(l)] },
  {
    op: "randomNextKey",
    inputs: () => [],
    fn: () => {
      caseGenerator.reset(21);
      return [caseGenerator.normal([3]), caseGenerator.uniform([2], { dtype: "float64" }), caseGenerator.nextKey(), caseGenerator.state.peek()];
    },
  },

  // integer and bool dtypes of differentiable ops
  {
    op: "cast",
    label: "to int and bool dtypes",
    inputs: () => [sc.tensor([-2.7, -0.5, 0, 0.5, 2.7, 300.9, -129.2, NaN, Infinity, -0], "float32")],
    fn: (x) => [sc.cast(x, "int32"), sc.cast(x, "int64"), sc.cast(x, "uint8"), sc.cast(x, "bool"), sc.cast(sc.cast(x, "int32"), "float64")],
  },
  {
    op: "add",
    label: "int32, uint8, bool",
    inputs: (r) => [ints(r, [2, 3], -100, 100), ints(r, [3], 0, 256, "uint8"), bools(r, [2, 3])],
    fn: (i, u, b) => [sc.add(i, u), sc.add(u, u), sc.add(b, b), sc.mul(i, 3), sc.sub(u, sc.tensor(1, "uint8")), sc.neg(i), sc.abs(i)],
  },
  {
    op: "mul",
    label: "int64 chains",
    inputs: (r) => [ints(r, [6], -1000, 1000, "int64"), sc.tensor([3, -7, 2, 5, -1, 9], "int64")],
    fn: (a, b) => [sc.mul(a, b).add(a).sub(b), sc.floorDiv(a.mul(a), b), sc.mod(a.mul(12345), b), sc.maximum(a, b).mul(sc.tensor(2 ** 20, "int64"))],
  },
  {
    op: "floorDiv",
    label: "int32 (integer template)",
    inputs: (r) => [ints(r, [8], -20, 20), sc.tensor([3, -3, 7, -7, 2, -2, 5, -5], "int32")],
    fn: (a, b) => [sc.floorDiv(a, b), sc.mod(a, b), sc.div(a, b), sc.pow(sc.abs(b), sc.tensor(2, "int32"))],
  },
  {
    op: "matmul",
    label: "int32",
    inputs: (r) => [ints(r, [3, 4], -5, 5), ints(r, [4, 2], -5, 5)],
    fn: (a, b) => [sc.matmul(a, b), sc.matmul(a, b, { transposeA: false }).add(1)],
  },
  {
    op: "sum",
    label: "int and bool",
    inputs: (r) => [ints(r, [3, 4], -9, 9), bools(r, [3, 4])],
    fn: (i, b) => [sc.sum(i, 1), sc.sum(b), sc.prod(i, 0), sc.max(i, 1), sc.mean(i, 0), sc.min(b, 1)],
  },
  {
    op: "where",
    label: "int and bool branches",
    inputs: (r) => [bools(r, [2, 3]), ints(r, [2, 3], -5, 5), bools(r, [3])],
    fn: (c, i, b) => [sc.where(c, i, sc.tensor(0, "int32")), sc.where(c, b, sc.logicalNot(b))],
  },
  {
    op: "concat",
    label: "int and bool",
    inputs: (r) => [ints(r, [2, 2], 0, 9), bools(r, [1, 2])],
    fn: (i, b) => [sc.concat([i, i], 1), sc.concat([b, b, b], 0), sc.transpose(sc.stack([i, i])), sc.reshape(i, [4]), sc.gather(i, sc.tensor([1, 0, 1], "int32"))],
  },
  {
    op: "clip",
    label: "int32",
    inputs: (r) => [ints(r, [6], -10, 10)],
    fn: (i) => [sc.clip(i, -3, 4), sc.clip(i, sc.tensor(0, "int32"), null)],
  },

  // host: print runs at graph run time (the sweep compares what it logs)
  { op: "print", inputs: (r) => [f32(r, [2])], fn: (x) => { sc.print("x is", x, 3); return x.add(1); } },

  // AutoGraph's ops: a dimension known only at run time, and staged assertions
  {
    op: "dimSize",
    label: "unknown dims",
    inputs: (r) => [f32(r, [3, 2])],
    fn: (x) => {
      const dim = sc.getOp("dimSize");
      const rows = sc.applyOp(dim, [x], { axis: 0 })[0]!;
      return [rows, sc.applyOp(dim, [x], { axis: 1 })[0]!, sc.cast(rows, "float32").mul(x)];
    },
    options: { inputSignature: [sc.spec([null, 2])] },
  },
  {
    op: "assert",
    label: "holds",
    inputs: (r) => [f32(r, [3])],
    fn: (x) => {
      sc.applyOp(sc.getOp("assert"), [sc.greater(sc.sum(sc.abs(x)), -1)], { fnId: 0, message: "never raised" });
      return x.add(1);
    },
  },
  {
    op: "assert",
    label: "fails when the graph runs",
    inputs: (r) => [f32(r, [3])],
    fn: (x) => {
      sc.assert(sc.less(sc.sum(sc.abs(x)), -1), "a norm is never negative");
      return x.add(1);
    },
  },

  // the optimizer's ops, applied directly
  {
    op: "constant",
    inputs: () => [],
    fn: () => {
      const c = sc.getOp("constant");
      return [
        sc.applyOp(c, [], { dtype: "float32", shape: [2, 2], values: [1.5, NaN, -0, 1e-40] })[0]!,
        sc.applyOp(c, [], { dtype: "bool", shape: [3], values: [1, 0, 1] })[0]!,
        sc.applyOp(c, [], { dtype: "int64", shape: [], values: [2 ** 40] })[0]!,
      ];
    },
  },
  {
    op: "fusedElementwise",
    inputs: (r) => [f32(r, [2, 3]), f32(r, [3]), ints(r, [2, 3], -4, 4)],
    fn: (a, b, i) => {
      const fused = sc.getOp("fusedElementwise");
      // steps: s0 = a * b; s1 = tanh(s0); s2 = s1 + i (int promotes to float32); s3 = s2 > b
      const attrs = {
        numInputs: 3,
        steps: [
          { op: "mul", args: [0, 1], attrs: {} },
          { op: "tanh", args: [3], attrs: {} },
          { op: "add", args: [4, 2], attrs: {} },
          { op: "greater", args: [5, 1], attrs: {} },
          { op: "leakyRelu", args: [3], attrs: { alpha: 0.2 } },
        ],
        outputs: [2, 3, 4],
      };
      return sc.applyOp(fused, [a, b, i], attrs);
    },
  },
];
