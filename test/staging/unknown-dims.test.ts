/**
 * Unknown dimensions. `stage(fn, { inputSignature: [spec([null, 3])] })` traces once with
 * symbolic tensors whose null dims are -1; every op's infer must accept them (and propagate -1),
 * and every op function must build attributes that still mean the right thing at run time.
 *
 * The sweep: every registry op that takes tensor inputs has a case here (the first test fails
 * otherwise); each case is staged with a null dim (the batch dim, or another where meaningful),
 * run at two sizes, and must equal eager exactly, with one trace. Then the symbolic forms
 * (reshape's -1, concat and split along the unknown axis, slices of it), the clear errors for
 * what needs a known size, and gradients taken inside and outside a staged function.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { TensorList } from "../../src/autograph/operators/index.js";
import { Rng } from "../util/rng.js";
import { interpret } from "../../src/exec/interpreter.js";

type Out = sc.Tensor | sc.Tensor[];

interface Case {
  /** Registry op this case covers (it must appear in the traced graph). */
  op: string;
  label?: string;
  /** Inputs for the size `n` of the unknown dim(s). */
  inputs: (r: Rng, n: number) => sc.Tensor[];
  /** Per input, the axes that are null in the inputSignature (default: axis 0 of each input of rank >= 1). */
  unknown?: number[][];
  fn: (...xs: sc.Tensor[]) => Out;
  /** The two run sizes (default [2, 5]). */
  sizes?: [number, number];
}

// ---- input builders ---------------------------------------------------------------------------

const f64 = (r: Rng, shape: number[], lo = -1, hi = 1): sc.Tensor => r.tensor(shape, lo, hi);
const ints = (r: Rng, shape: number[], lo: number, hi: number, dtype: sc.DType = "int32"): sc.Tensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  return sc.tensor(Array.from({ length: n }, () => r.int(lo, hi)), dtype, shape);
};
const bools = (r: Rng, shape: number[]): sc.Tensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  return sc.tensor(Array.from({ length: n }, () => r.next() < 0.5), "bool", shape);
};
/** Values on a coarse grid, so comparisons see equal elements too. */
const grid = (r: Rng, shape: number[]): sc.Tensor => sc.floor(f64(r, shape, -2, 2));
const idx = (v: sc.NestedArray): sc.Tensor => sc.tensor(v, "int32");
const op1 = (name: string, inputs: sc.Tensor[], attrs: unknown): sc.Tensor => sc.applyOp(sc.getOp(name), inputs, attrs)[0]!;
const fns = sc as unknown as Record<string, (...a: unknown[]) => sc.Tensor>;

// ---- cases ----------------------------------------------------------------------------------

const customSquare = sc.customGradient((x: sc.Tensor) => ({ value: x.square(), grad: (dy: sc.Tensor) => dy.mul(x).mul(2) }));

const UNARY = [
  "neg", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos", "tan", "asin",
  "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu", "softplus", "erf", "gelu", "floor", "ceil", "round", "isNaN",
  "isFinite", "leakyRelu", "elu",
];
const BINARY = ["add", "sub", "mul", "div", "mod", "floorDiv", "pow", "maximum", "minimum", "atan2", "squaredDifference"];
const COMPARE = ["equal", "notEqual", "less", "lessEqual", "greater", "greaterEqual"];
const LOGICAL = ["logicalAnd", "logicalOr", "logicalXor"];
const REDUCE = ["sum", "mean", "prod", "max", "min", "logSumExp", "variance", "any", "all"];

const convAttrs = { strides: [2, 1], pads: [1, 0, 1, 1], dilations: [1, 2], groups: 2 };
const poolAttrs = { kernelSize: [3, 2], strides: [2, 1], pads: [1, 0, 1, 1] };

const CASES: Case[] = [
  ...(["allReduce", "broadcast", "allGather"] as const).map((op) => ({
    op,
    label: "in a job of one process",
    inputs: (r: Rng, n: number) => (sc.distributed.init({ provider: "single" }), [f64(r, [n, 3], -1, 1)]),
    unknown: [[0]],
    fn: (x: sc.Tensor) => (op === "allReduce" ? sc.distributed.allReduce(x, "sum") : op === "broadcast" ? sc.distributed.broadcast(x) : sc.distributed.allGather(x)),
  })),
  {
    op: "dimSize",
    label: "the size of an unknown dim, read at run time",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.cast(new TensorList(x).length as sc.Tensor, "float64"),
  },
  {
    op: "assert",
    label: "a staged assertion that holds",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => {
      sc.assert(sc.less(sc.max(x), 100), "bounded");
      return x.add(1);
    },
  },
  {
    op: "stackPush",
    label: "rows of unknown shape",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.stackPush(sc.stackPush(sc.emptyStack(x), x), x.exp()),
  },
  {
    op: "stackPop",
    label: "rows of unknown shape",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.stackPop(sc.stackPush(sc.stackPush(sc.emptyStack(x), x), x.exp())),
  },
  {
    op: "stackRead",
    label: "rows of unknown shape",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.stackRead(sc.stackPush(sc.stackPush(sc.emptyStack(x), x), x.exp()), sc.scalar(1, "int32")),
  },
  {
    op: "packResiduals",
    label: "records of unknown shapes",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => {
      const h = op1("packResiduals", [x, x.exp()], {});
      return sc.applyOp(sc.getOp("unpackResiduals"), [h], { types: [x, x].map((t) => ({ dtype: t.dtype, shape: t.shape })) });
    },
  },
  {
    op: "unpackResiduals",
    label: "a zero record unpacks to zeros like its inputs",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.applyOp(sc.getOp("unpackResiduals"), [sc.zerosLike(sc.sum(x)), x], { types: [{ dtype: x.dtype, shape: x.shape }] })[0]!,
  },
  {
    op: "emptyStack",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => sc.emptyStack(x),
  },
  {
    op: "customGradient",
    label: "a custom gradient of a batch",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1)],
    unknown: [[0]],
    fn: (x) => customSquare(x) as sc.Tensor,
  },
  {
    op: "sumToLike",
    label: "reduce to a shape decided at run time",
    inputs: (r, n) => [f64(r, [n, 3], -1, 1), f64(r, [1, 3], -1, 1)],
    unknown: [[0], []],
    fn: (g, like) => op1("sumToLike", [g, like], {}),
  },
  // elementwise
  ...UNARY.map((op): Case => ({ op, inputs: (r, n) => [f64(r, [n, 3], 0.05, 0.95)], fn: (x) => fns[op]!(x) })),
  { op: "leakyRelu", label: "negative inputs", inputs: (r, n) => [f64(r, [n, 3], -1, 1)], fn: (x) => sc.leakyRelu(x, 0.1) },
  { op: "isNaN", label: "with NaN", inputs: (r, n) => [sc.div(grid(r, [n, 3]), 0)], fn: (x) => sc.isNaN(x) },
  ...BINARY.map((op): Case => ({
    op,
    label: "broadcast against a known shape",
    inputs: (r, n) => [f64(r, [n, 3], 0.5, 2), f64(r, [1, 3], 0.5, 2)],
    unknown: [[0], []],
    fn: (a, b) => fns[op]!(a, b),
  })),
  { op: "add", label: "both unknown", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [n, 3])], fn: sc.add },
  { op: "mul", label: "[n, 1] x [1, 3] and a JS number", inputs: (r, n) => [f64(r, [n, 1]), f64(r, [1, 3])], unknown: [[0], []], fn: (a, b) => sc.mul(sc.mul(a, b), 3) },
  { op: "sub", label: "unknown inner dim", inputs: (r, n) => [f64(r, [2, n]), f64(r, [2, 1])], unknown: [[1], []], fn: sc.sub },
  ...COMPARE.map((op): Case => ({ op, inputs: (r, n) => [grid(r, [n, 3]), grid(r, [3])], unknown: [[0], []], fn: (a, b) => fns[op]!(a, b) })),
  ...LOGICAL.map((op): Case => ({ op, inputs: (r, n) => [bools(r, [n, 3]), bools(r, [n, 3])], fn: (a, b) => fns[op]!(a, b) })),
  { op: "logicalNot", inputs: (r, n) => [bools(r, [n, 3])], fn: (a) => sc.logicalNot(a) },
  { op: "where", inputs: (r, n) => [bools(r, [n, 3]), f64(r, [n, 3]), f64(r, [3])], unknown: [[0], [0], []], fn: (c, a, b) => sc.where(c, a, b) },
  { op: "where", label: "scalar branch", inputs: (r, n) => [bools(r, [n, 1]), f64(r, [1, 4])], unknown: [[0], []], fn: (c, a) => sc.where(c, a, 0) },
  { op: "cast", inputs: (r, n) => [f64(r, [n, 3], -3, 3)], fn: (x) => [sc.cast(x, "int32"), sc.cast(x, "bool"), sc.cast(x, "float32")] },
  { op: "identity", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.identity(x) },
  { op: "stopGradient", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.stopGradient(x) },
  { op: "clip", inputs: (r, n) => [f64(r, [n, 3], -2, 2), f64(r, [3], -1, 0), f64(r, [3], 0, 1)], unknown: [[0], [], []], fn: (x, lo, hi) => sc.clip(x, lo, hi) },
  { op: "clip", label: "JS bounds", inputs: (r, n) => [f64(r, [n, 3], -2, 2)], fn: (x) => sc.clip(x, -0.5, null) },

  // creation
  { op: "fillLike", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => [sc.zerosLike(x), sc.onesLike(x, "int32"), sc.fullLike(x, 7, "float32"), sc.fullLike(x, true, "bool")] },
  { op: "oneHot", inputs: (r, n) => [ints(r, [n, 2], 0, 4)], fn: (i) => sc.oneHot(i, 4) },

  // reductions
  ...REDUCE.flatMap((op): Case[] => [
    { op, label: "known axis", inputs: (r, n) => [f64(r, [n, 3, 2], 0.2, 1.2)], fn: (x) => fns[op]!(x, 1) },
    { op, label: "unknown axis, keepDims", inputs: (r, n) => [f64(r, [n, 3], 0.2, 1.2)], fn: (x) => fns[op]!(x, 0, true) },
    { op, label: "all axes", inputs: (r, n) => [f64(r, [n, 3], 0.2, 1.2)], fn: (x) => fns[op]!(x) },
  ]),
  { op: "sum", label: "int32", inputs: (r, n) => [ints(r, [n, 3], -5, 5)], fn: (x) => sc.sum(x, [0, 1]) },
  ...["argMax", "argMin"].flatMap((op): Case[] => [
    { op, label: "axis 0 (unknown)", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => fns[op]!(x, 0) },
    { op, label: "axis 1, keepDims", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => fns[op]!(x, 1, true) },
    { op, label: "flattened", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => fns[op]!(x) },
  ]),
  { op: "cumsum", label: "unknown axis, exclusive", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.cumsum(x, 0, { exclusive: true }) },
  { op: "cumsum", label: "flattened, reverse", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.cumsum(x, null, { reverse: true }) },

  // linalg
  { op: "matmul", label: "[n, 3] @ [3, 4]", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3, 4])], unknown: [[0], []], fn: (a, w) => sc.matmul(a, w) },
  { op: "matmul", label: "batched, broadcast, transposeB", inputs: (r, n) => [f64(r, [n, 2, 3]), f64(r, [4, 3])], unknown: [[0], []], fn: (a, b) => sc.matmul(a, b, { transposeB: true }) },
  { op: "matmul", label: "matrix @ vector", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3])], unknown: [[0], []], fn: (a, v) => sc.matmul(a, v) },
  { op: "matmul", label: "unknown contraction, vector @ matrix", inputs: (r, n) => [f64(r, [n]), f64(r, [n, 2])], fn: (v, b) => sc.matmul(v, b) },
  { op: "matmul", label: "unknown m and n", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3, n])], unknown: [[0], [1]], fn: (a, b) => sc.matmul(a, b) },
  { op: "matmul", label: "dot and outer", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3])], unknown: [[0], []], fn: (a, v) => [sc.dot(a, v), sc.outer(a, v), sc.dot(sc.reshape(a, [-1]), sc.reshape(a, [-1]))] },
  {
    op: "matmul",
    label: "einsum",
    inputs: (r, n) => [f64(r, [n, 2, 3]), f64(r, [n, 3, 4]), f64(r, [3, 3])],
    unknown: [[0], [0], []],
    fn: (a, b, m) => [sc.einsum("bij,bjk->bik", a, b), sc.einsum("bij,jj->bi", a, m), sc.einsum("bij->j", a), sc.einsum("...ij,...jk", a, b), sc.einsum("bij,bij->b", a, a)],
  },

  // shape
  { op: "reshape", inputs: (r, n) => [f64(r, [n, 2, 2])], fn: (x) => [sc.reshape(x, [-1, 4]), sc.reshape(x, [2, -1]), sc.reshape(x, [x.shape[0]!, 4])] },
  { op: "broadcastTo", label: "unknown dim of size 1 or 5", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.broadcastTo(x, [2, 5, 3]), sizes: [1, 5] },
  { op: "transpose", inputs: (r, n) => [f64(r, [n, 3, 2])], fn: (x) => [sc.transpose(x, [2, 0, 1]), sc.transpose(x)] },
  { op: "expandDims", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.expandDims(x, [0, -1]) },
  { op: "squeeze", inputs: (r, n) => [f64(r, [n, 1, 3])], fn: (x) => sc.squeeze(x, 1) },
  { op: "squeeze", label: "the unknown axis (size 1 at run time)", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.squeeze(x, 0), sizes: [1, 1] },
  { op: "concat", label: "along the unknown axis", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [2, 3]), f64(r, [n, 3])], unknown: [[0], [], [0]], fn: (a, b, c) => sc.concat([a, b, c], 0) },
  { op: "concat", label: "along a known axis", inputs: (r, n) => [f64(r, [n, 2]), f64(r, [n, 3])], fn: (a, b) => sc.concat([a, b], -1) },
  { op: "stack", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [n, 3])], fn: (a, b) => sc.stack([a, b], 1) },
  { op: "unstack", label: "a known axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.unstack(x, 1) },
  { op: "split", label: "equal pieces of a known axis", inputs: (r, n) => [f64(r, [n, 6])], fn: (x) => sc.split(x, 3, 1) },
  { op: "split", label: "sizes with -1 along the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.split(x, [2, -1], 0), sizes: [2, 5] },
  { op: "split", label: "fixed sizes along the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.split(x, [1, 4], 0), sizes: [5, 5] },
  { op: "slice", label: "string spec", inputs: (r, n) => [f64(r, [n, 4, 3])], fn: (x) => [x.slice("1:, ::-1, 0"), x.slice("..., 1:3"), x.slice("-1"), x.slice("0, 1:"), x.slice("::-2")] },
  { op: "slice", label: "arrays, clamped bounds", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => [sc.slice(x, [-3, 1], [100, null], [1, 2]), sc.slice(x, [null, -1], [-4, 0], [-1, -1])] },
  {
    op: "sliceGrad",
    label: "unknown whole axis (-1 in the shape attribute)",
    inputs: (r, n) => [f64(r, [n, 3])],
    fn: (dy) => op1("sliceGrad", [dy], { shape: [dy.shape[0]!, 5], begin: [null, 1], end: [null, 4], strides: [1, 1] }),
  },
  { op: "gather", label: "known axis", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => sc.gather(x, idx([2, 0, 3]), 1) },
  { op: "gather", label: "unknown axis", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => sc.gather(x, idx([[1, 0], [1, 1]]), 0) },
  { op: "gather", label: "unknown indices", inputs: (r, n) => [f64(r, [5, 3]), ints(r, [n], 0, 5)], unknown: [[], [0]], fn: (x, i) => sc.gather(x, i) },
  { op: "gatherND", inputs: (r, n) => [f64(r, [n, 3, 2])], fn: (x) => sc.gatherND(x, idx([[0, 2], [1, 1], [0, 0]])) },
  { op: "gatherND", label: "unknown indices", inputs: (r, n) => [f64(r, [3, 2]), ints(r, [n, 2], 0, 2)], unknown: [[], [0]], fn: (x, i) => sc.gatherND(x, i) },
  // ops added for ONNX import
  { op: "truncDiv", inputs: (r, n) => [ints(r, [n, 3], -20, 20), sc.tensor([3, -3, 7], "int32")], unknown: [[0], []], fn: (a, b) => sc.truncDiv(a, b) },
  { op: "fmod", inputs: (r, n) => [f64(r, [n, 3], -5, 5), f64(r, [3], 1, 2)], unknown: [[0], []], fn: (a, b) => sc.fmod(a, b) },
  { op: "asinh", inputs: (r, n) => [f64(r, [n, 3], -3, 3)], fn: (x) => sc.asinh(x) },
  { op: "acosh", inputs: (r, n) => [f64(r, [n, 3], 1.1, 3)], fn: (x) => sc.acosh(x) },
  { op: "atanh", inputs: (r, n) => [f64(r, [n, 3], -0.9, 0.9)], fn: (x) => sc.atanh(x) },
  { op: "gatherElements", inputs: (r, n) => [f64(r, [n, 4]), ints(r, [n, 2], 0, 4)], fn: (x, i) => sc.gatherElements(x, i, 1) },
  { op: "scatterElements", inputs: (r, n) => [f64(r, [n, 4]), ints(r, [n, 2], 0, 4), f64(r, [n, 2])], fn: (x, i, u) => sc.scatterElements(x, i, u, 1, "add") },
  { op: "scatterND", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [2])], unknown: [[0], []], fn: (x, u) => sc.scatterND(x, idx([[0, 2], [1, 1]]), u) },
  ...(["bitwiseAnd", "bitwiseOr", "bitwiseXor", "bitShiftLeft", "bitShiftRight"] as const).map(
    (op): Case => ({ op, inputs: (r, n) => [ints(r, [n, 3], 0, 200), ints(r, [3], 0, 6)], unknown: [[0], []], fn: (a, b) => fns[op]!(a, b) }),
  ),
  { op: "bitwiseNot", inputs: (r, n) => [ints(r, [n, 3], -100, 100, "int64")], fn: (a) => sc.bitwiseNot(a) },
  { op: "bitcast", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.bitcast(x, "int64") },
  { op: "scatterAdd", label: "known axis", inputs: (r, n) => [f64(r, [n, 4]), f64(r, [n, 3])], fn: (x, u) => sc.scatterAdd(x, idx([1, 3, 1]), u, 1) },
  { op: "scatterAdd", label: "broadcast updates", inputs: (r, n) => [f64(r, [n, 4]), f64(r, [3])], unknown: [[0], []], fn: (x, u) => sc.scatterAdd(x, idx([1, 3, 1]), u, 1) },
  { op: "scatterAdd", label: "into the unknown axis", inputs: (r, n) => [f64(r, [n, 2]), f64(r, [2, 2])], unknown: [[0], []], fn: (x, u) => sc.scatterAdd(x, idx([1, 1]), u, 0) },
  { op: "pad", label: "constant", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.pad(x, [[1, 2], [0, 1]], 0.5) },
  { op: "pad", label: "reflect", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.pad(x, [[1, 1], [2, 0]], 0, "reflect") },
  { op: "tile", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => [sc.tile(x, [2, 1]), sc.tile(x, [3, 1, 2])] },
  { op: "flip", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => [sc.flip(x, 0), sc.flip(x)] },

  // nn
  { op: "softmax", inputs: (r, n) => [f64(r, [n, 4], -2, 2)], fn: (x) => [sc.softmax(x), sc.softmax(x, 0)] },
  { op: "logSoftmax", inputs: (r, n) => [f64(r, [n, 4], -2, 2)], fn: (x) => [sc.logSoftmax(x), sc.logSoftmax(x, 0)] },
  {
    op: "conv2d",
    label: "unknown batch, stride 2, same",
    inputs: (r, n) => [f64(r, [n, 3, 5, 6]), f64(r, [4, 3, 3, 2])],
    unknown: [[0], []],
    fn: (x, w) => sc.conv2d(x, w, { strides: 2, padding: "same" }),
  },
  {
    op: "conv2d",
    label: "unknown height, explicit padding, groups 2",
    inputs: (r, n) => [f64(r, [1, 4, n, 5]), f64(r, [6, 2, 3, 3])],
    unknown: [[2], []],
    fn: (x, w) => sc.conv2d(x, w, { groups: 2, strides: [2, 1], padding: 1 }),
    sizes: [3, 6],
  },
  {
    op: "conv2dTranspose",
    label: "unknown batch and width",
    inputs: (r, n) => [f64(r, [n, 4, 3, n]), f64(r, [4, 1, 2, 3])],
    unknown: [[0, 3], []],
    fn: (x, w) => sc.conv2dTranspose(x, w, { strides: 2, outputPadding: [1, 0], groups: 2, dilations: [1, 2], padding: [[0, 1], [1, 1]] }),
  },
  {
    op: "conv2dBackpropFilter",
    inputs: (r, n) => [f64(r, [n, 4, 5, 6]), f64(r, [n, 4, 3, 5])],
    fn: (x, dy) => op1("conv2dBackpropFilter", [x, dy], { ...convAttrs, filterSize: [2, 2] }),
  },
  { op: "maxPool2d", inputs: (r, n) => [f64(r, [n, 2, 5, 6])], fn: (x) => sc.maxPool2d(x, { kernelSize: 3, strides: 2, padding: 1 }) },
  { op: "maxPool2d", label: "unknown height", inputs: (r, n) => [f64(r, [1, 2, n, 4])], unknown: [[2]], fn: (x) => sc.maxPool2d(x, { kernelSize: 2, strides: 1 }), sizes: [2, 5] },
  { op: "avgPool2d", inputs: (r, n) => [f64(r, [n, 2, 5, 6])], fn: (x) => sc.avgPool2d(x, { kernelSize: [3, 2], strides: [2, 1], padding: [[1, 1], [0, 1]] }) },
  { op: "maxPool2dGrad", inputs: (r, n) => [f64(r, [n, 2, 5, 6]), f64(r, [n, 2, 3, 6])], fn: (x, dy) => op1("maxPool2dGrad", [x, dy], poolAttrs) },
  { op: "maxPool2dGradGrad", inputs: (r, n) => [f64(r, [n, 2, 5, 6]), f64(r, [n, 2, 5, 6])], fn: (x, g) => op1("maxPool2dGradGrad", [x, g], poolAttrs) },
  { op: "avgPool2dGrad", inputs: (r, n) => [f64(r, [n, 2, 3, 6])], fn: (dy) => op1("avgPool2dGrad", [dy], { ...poolAttrs, inputSize: [5, 6] }) },
  { op: "topK", inputs: (r, n) => [f64(r, [n, 5])], fn: (x) => [...sc.topK(x, 2), ...sc.topK(x, 3, { sorted: false })] },
  { op: "topK", label: "unknown last axis", inputs: (r, n) => [f64(r, [2, n])], unknown: [[1]], fn: (x) => sc.topK(x, 2), sizes: [2, 5] },
  { op: "sort", inputs: (r, n) => [grid(r, [n, 4])], fn: (x) => [sc.sort(x), sc.sort(x, { axis: 0, descending: true })] },
  { op: "argsort", inputs: (r, n) => [grid(r, [n, 4])], fn: (x) => [sc.argsort(x), sc.argsort(x, { axis: 0, descending: true })] },

  // random (an explicit key makes the draw a pure function of key and element index)
  { op: "randomBernoulli", inputs: (r, n) => [f64(r, [n, 3], 0, 1)], fn: (p) => sc.random.bernoulli(p, undefined, { key: sc.random.key(7) }) },
  { op: "randomCategorical", inputs: (r, n) => [f64(r, [n, 4], -2, 2)], fn: (l) => sc.random.categorical(l, 3, { key: sc.random.key(8) }) },

  // host escapes (staging/host.ts)
  { op: "hostCall", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.hostCall((v: sc.Tensor) => sc.sum(sc.square(v), 0), sc.spec([3], "float64"), x) as sc.Tensor },
  {
    op: "print",
    inputs: (r, n) => [f64(r, [n, 2])],
    fn: (x) => {
      sc.print("x is", x);
      return sc.identity(x);
    },
  },
];

/**
 * Ops that take tensor inputs but have no case here, with the reason. (No user-facing op is
 * exempt: every op's output shape follows from its input shapes and attributes, never from
 * input values.) An entry may name an op registered only when an optional module is loaded.
 */
const KEY_ONLY = "its only tensor input is a key (int32[2]), a seed scalar or a generator state (int32[4]): fixed shapes, no dim to leave unknown (its output shape is an attribute)";
const EXEMPT: Record<string, string> = {
  randomUniform: KEY_ONLY,
  randomNormal: KEY_ONLY,
  randomKey: KEY_ONLY,
  randomSplit: KEY_ONLY,
  randomFoldIn: KEY_ONLY,
  randomNextKey: KEY_ONLY,
  fusedElementwise:
    "made only by the fusion pass (graph/passes/fusion.ts) of the compiled executor, from elementwise chains of fully known shape, never by tracing; " +
    "the elementwise cases above run through it when that executor is installed",
};

// ---- harness --------------------------------------------------------------------------------

function flat(o: unknown): sc.Tensor[] {
  if (o instanceof sc.Tensor) return [o];
  if (Array.isArray(o)) return o.flatMap(flat);
  throw new Error(`expected tensors, got ${String(o)}`);
}

function assertSameTensors(got: unknown, want: unknown, what: string): void {
  const g = flat(got);
  const w = flat(want);
  assert.equal(g.length, w.length, `${what}: number of outputs`);
  g.forEach((t, i) => {
    assert.equal(t.dtype, w[i]!.dtype, `${what}: output ${i} dtype`);
    assert.deepEqual(t.shape, w[i]!.shape, `${what}: output ${i} shape`);
    assert.deepStrictEqual(Array.from(t.dataSync()), Array.from(w[i]!.dataSync()), `${what}: output ${i} values`);
  });
}

/** Runs fn with console.log captured; returns [result, logged lines]. */
function withLogs<T>(fn: () => T): [T, string[]] {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (...a: unknown[]) => void lines.push(a.map(String).join(" "));
  try {
    return [fn(), lines];
  } finally {
    console.log = orig;
  }
}

function specsOf(c: Case, xs: sc.Tensor[]): sc.TensorSpec[] {
  return xs.map((x, i) => {
    const axes = c.unknown?.[i] ?? (x.rank > 0 ? [0] : []);
    return sc.spec(x.shape.map((d, k) => (axes.includes(k) ? null : d)), x.dtype);
  });
}

const caseName = (c: Case): string => (c.label ? `${c.op} (${c.label})` : c.op);

// ---- the sweep ----------------------------------------------------------------------------------

test("every registry op that takes tensor inputs has an unknown-dims case", () => {
  const covered = new Set(CASES.map((c) => c.op));
  const withInputs = sc.listOps().filter((d) => d.inputs.length > 0);
  const missing = withInputs.filter((d) => !covered.has(d.name) && !(d.name in EXEMPT)).map((d) => d.name);
  assert.deepEqual(missing, [], `ops with tensor inputs but no unknown-dims case (add one to CASES, or to EXEMPT with a reason): ${missing.join(", ")}`);
  const names = new Set(withInputs.map((d) => d.name));
  const registered = new Set(sc.listOps().map((d) => d.name));
  for (const [name, why] of Object.entries(EXEMPT)) {
    if (registered.has(name)) assert.ok(names.has(name), `EXEMPT lists ${name}, which takes no tensor inputs`);
    assert.ok(!covered.has(name), `EXEMPT lists ${name}, which has a case`);
    assert.ok(why.length > 0, `EXEMPT ${name} needs a reason`);
  }
});

/** Runs a concrete function on the reference interpreter (whatever the default executor is). */
function interpretCall(cf: sc.ConcreteFunction, xs: sc.Tensor[]): unknown {
  return cf.structureOutputs(cf.callFlat(xs, (g, inputs, library) => interpret(g, inputs, { library })));
}

test(`staged with null dims equals eager at two sizes, one trace (${CASES.length} cases)`, () => {
  const failures: string[] = [];
  CASES.forEach((c, k) => {
    const name = caseName(c);
    try {
      const sizes = c.sizes ?? [2, 5];
      const specs = specsOf(c, c.inputs(new Rng(100 + k), sizes[0]));
      assert.ok(specs.some((s) => s.shape.includes(-1)), `${name}: the case has no unknown dim`);
      const staged = sc.stage(c.fn, { inputSignature: specs, name: `case_${k}` });
      sizes.forEach((n, j) => {
        const xs = c.inputs(new Rng(1000 * (k + 1) + j), n);
        const [want, eagerLogs] = withLogs(() => c.fn(...xs));
        const [got, stagedLogs] = withLogs(() => staged(...xs));
        assertSameTensors(got, want, `${name} at size ${n}`);
        assert.deepEqual(stagedLogs, eagerLogs, `${name} at size ${n}: printed output`);
        const [ref] = withLogs(() => interpretCall(staged.concrete(...xs), xs));
        assertSameTensors(ref, want, `${name} at size ${n} (reference interpreter)`);
      });
      assert.equal(staged.traceCount, 1, `${name}: traced ${staged.traceCount} times`);
      const graph = staged.concrete(...c.inputs(new Rng(1), sizes[1])).graph;
      assert.ok(graph.inputs.some((v) => v.type.shape.includes(-1)), `${name}: the graph's inputs have no unknown dim`);
      assert.ok(graph.nodes.some((node) => node.op === c.op), `${name}: the traced graph has no ${c.op} node (ops: ${graph.nodes.map((nd) => nd.op).join(", ")})`);
    } catch (e) {
      failures.push(`${name}: ${(e as Error).message.split("\n")[0]}`);
    }
  });
  if (failures.length > 0) assert.fail(`${failures.length} of ${CASES.length} cases failed:\n${failures.join("\n")}`);
});

// ---- symbolic attributes ----------------------------------------------------------------------

const nodeOf = (cf: sc.ConcreteFunction, op: string) => cf.graph.nodes.find((n) => n.op === op)!;
const rows = (n: number, width: number): number[][] => Array.from({ length: n }, (_, i) => Array.from({ length: width }, (_, j) => i * width + j));

test("reshape([-1, 4]) of an unknown batch keeps the -1 and infers it at run time", () => {
  const f = sc.stage((x: sc.Tensor) => sc.reshape(x, [-1, 4]), { inputSignature: [sc.spec([null, 2, 2], "float64")] });
  const cf = f.concrete(sc.zeros([1, 2, 2], "float64"));
  assert.deepEqual(nodeOf(cf, "reshape").attrs.shape, [-1, 4]);
  assert.deepEqual(cf.graph.outputs[0]!.type.shape, [-1, 4]);
  for (const n of [1, 3]) {
    const x = sc.tensor(rows(n, 4), "float64").reshape([n, 2, 2]);
    const y = f(x);
    assert.deepEqual(y.shape, [n, 4]);
    assert.deepEqual(y.arraySync(), rows(n, 4));
  }
  assert.equal(f.traceCount, 1);
  // The size read from the symbolic shape is -1 too: [x.shape[0], 4] is the same reshape.
  const g = sc.stage((x: sc.Tensor) => sc.reshape(x, [x.shape[0]!, 4]), { inputSignature: [sc.spec([null, 2, 2], "float64")] });
  assert.deepEqual(g(sc.tensor(rows(3, 4), "float64").reshape([3, 2, 2])).arraySync(), rows(3, 4));
  // A known target from an unknown input is checked when the graph runs.
  const h = sc.stage((x: sc.Tensor) => sc.reshape(x, [6]), { inputSignature: [sc.spec([null, 3])] });
  assert.deepEqual(h(sc.ones([2, 3])).shape, [6]);
  assert.throws(() => h(sc.ones([3, 3])), (e: Error) => e instanceof sc.ShapeError && /^reshape: cannot reshape a tensor of shape \[3, 3\]/.test(e.message));
});

test("concat along the unknown axis gives an unknown size; its gradient splits with -1", () => {
  const f = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.concat([a, b, a], 0), { inputSignature: [sc.spec([null, 2], "float64"), sc.spec([1, 2], "float64")] });
  const b = sc.tensor([[-1, -2]], "float64");
  const cf = f.concrete(sc.zeros([1, 2], "float64"), b);
  assert.deepEqual(cf.graph.outputs[0]!.type.shape, [-1, 2]);
  for (const n of [1, 3]) {
    const a = sc.tensor(rows(n, 2), "float64");
    assert.deepEqual(f(a, b).arraySync(), [...rows(n, 2), [-1, -2], ...rows(n, 2)]);
  }
  // d/da sum(w * concat([a, b, a])) = w[:n] + w[n+1:]; the unknown piece takes the rest.
  const grads = sc.stage(
    (a: sc.Tensor, b: sc.Tensor) => {
      const tape = new sc.GradientTape();
      const y = tape.record(() => {
        tape.watch([a, b]);
        const c = sc.concat([a, b], 0);
        return sc.sum(sc.mul(c, c));
      });
      return tape.gradient(y, [a, b]) as sc.Tensor[];
    },
    { inputSignature: [sc.spec([null, 2], "float64"), sc.spec([1, 2], "float64")] },
  );
  const a = sc.tensor(rows(3, 2), "float64");
  const [da, db] = grads(a, b);
  assert.deepEqual(da!.arraySync(), rows(3, 2).map((r) => r.map((v) => 2 * v)));
  assert.deepEqual(db!.arraySync(), [[-2, -4]]);
  const split = nodeOf(grads.concrete(a, b), "split");
  assert.deepEqual(split.attrs.sizes, [-1, 1]);
  // Two inputs of unknown size along the axis: the concat works, its gradient needs the sizes.
  const two = sc.stage(
    (a: sc.Tensor, c: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(sc.concat([u, c], 0)))(a),
    { inputSignature: [sc.spec([null, 2], "float64"), sc.spec([null, 2], "float64")] },
  );
  assert.throws(() => two(a, a), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith("concat: ") && e.message.includes("inputSignature"));
});

test("split and slice keep their attributes as given along an unknown axis", () => {
  const f = sc.stage((x: sc.Tensor) => [...sc.split(x, [1, -1], 0), x.slice("1:-1"), x.slice("-1")], { inputSignature: [sc.spec([null, 2])] });
  const cf = f.concrete(sc.zeros([3, 2]));
  assert.deepEqual(nodeOf(cf, "split").attrs.sizes, [1, -1]);
  assert.deepEqual(cf.graph.outputs.map((v) => v.type.shape), [[1, 2], [-1, 2], [-1, 2], [2]]);
  const slices = cf.graph.nodes.filter((n) => n.op === "slice").map((n) => [n.attrs.begin, n.attrs.end]);
  assert.deepEqual(slices, [[[1, null], [-1, null]], [[-1, null], [null, null]]]);
  const x = sc.tensor(rows(4, 2));
  const [a, b, c, d] = f(x);
  assert.deepEqual(a!.arraySync(), [[0, 1]]);
  assert.deepEqual(b!.arraySync(), [[2, 3], [4, 5], [6, 7]]);
  assert.deepEqual(c!.arraySync(), [[2, 3], [4, 5]]);
  assert.deepEqual(d!.arraySync(), [6, 7]);
  // Clamped like Python at run time: a slice past the end of a size-1 axis is empty.
  const [, , c1, d1] = f(sc.tensor([[9, 8]]));
  assert.deepEqual(c1!.shape, [0, 2]);
  assert.deepEqual(d1!.arraySync(), [9, 8]);
});

test("size checks involving an unknown dim are made when the graph runs", () => {
  const mm = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.matmul(a, b), { inputSignature: [sc.spec([2, null]), sc.spec([null, 4])] });
  assert.deepEqual(mm(sc.ones([2, 3]), sc.ones([3, 4])).shape, [2, 4]);
  assert.throws(() => mm(sc.ones([2, 3]), sc.ones([5, 4])), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith("matmul: inner dimensions do not match"));
  const sq = sc.stage((x: sc.Tensor) => sc.squeeze(x, 0), { inputSignature: [sc.spec([null, 3])] });
  assert.deepEqual(sq(sc.ones([1, 3])).shape, [3]);
  assert.throws(() => sq(sc.ones([2, 3])), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith("squeeze: cannot squeeze axis 0 of shape [2, 3]"));
  const sp = sc.stage((x: sc.Tensor) => sc.split(x, [1, 2], 0), { inputSignature: [sc.spec([null])] });
  assert.deepEqual(sp(sc.ones([3])).map((t) => t.shape), [[1], [2]]);
  assert.throws(() => sp(sc.ones([4])), (e: Error) => e instanceof sc.ShapeError && e.message.includes("sum to 3"));
  // Incompatible known dims are still found while tracing.
  const bad = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.concat([a, b], 0), { inputSignature: [sc.spec([null, 3]), sc.spec([null, 4])] });
  assert.throws(() => bad(sc.ones([1, 3]), sc.ones([1, 4])), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith("concat: input 1 has shape [-1, 4]"));
});

// ---- what needs a known size: clear errors ------------------------------------------------------

test("ops that need a size an unknown dim hides say so, and how to avoid it", () => {
  const x3 = sc.spec([null, 2, 2], "float64");
  const img = sc.spec([1, 2, null, 4], "float64");
  const cases: [string, (x: sc.Tensor) => unknown, sc.TensorSpec, number[], string, string[]][] = [
    ["arithmetic on an unknown size", (x) => sc.reshape(x, [x.shape[0]! * 2, -1]), x3, [2, 2, 2], "reshape", ["negative dimension -2", "[-1, 2, 2]"]],
    ["two -1 from the shape", (x) => sc.reshape(x, [x.shape[0]!, -1]), x3, [2, 2, 2], "reshape", ["more than one -1"]],
    ["squeeze() with no axes", (x) => sc.squeeze(x), x3, [1, 2, 2], "squeeze", ["squeeze() without axes", "axis 0"]],
    ["equal pieces of the unknown axis", (x) => sc.split(x, 2, 0), x3, [2, 2, 2], "split", ["2 equal pieces", "axis 0"]],
    ["unstack the unknown axis", (x) => sc.unstack(x, 0), x3, [2, 2, 2], "unstack", ["number of outputs", "axis 0"]],
    ["broadcast to another tensor's shape", (x) => sc.broadcastTo(sc.zeros([2]), x.shape), x3, [2, 2, 2], "broadcastTo", ["broadcastLike"]],
    ["draw with an unknown shape", (x) => sc.random.uniform(x.shape as number[]), x3, [2, 2, 2], "random.uniform", ["[-1, 2, 2]"]],
    ["bernoulli of a shape", (x) => sc.random.bernoulli(0.5, x.shape as number[]), x3, [2, 2, 2], "random.bernoulli", ["fullLike"]],
    ['padding "same" of an unknown height', (x) => sc.conv2d(x, sc.ones([3, 2, 3, 3], "float64"), { padding: "same" }), img, [1, 2, 5, 4], "conv2d", ['"same"']],
    ['pooling "same" of an unknown height', (x) => sc.maxPool2d(x, { kernelSize: 2, padding: "same" }), img, [1, 2, 5, 4], "maxPool2d", ['"same"']],
    ["gatherND with unknown k", (x) => sc.gatherND(sc.ones([2, 2]), sc.cast(x, "int32")), sc.spec([2, null], "float64"), [2, 1], "gatherND", ["rank of the result"]],
  ];
  for (const [label, fn, spec, shape, op, parts] of cases) {
    const f = sc.stage(fn, { inputSignature: [spec] });
    assert.throws(
      () => f(sc.zeros(shape, "float64")),
      (e: Error) => {
        assert.ok(e instanceof sc.ShapeError, `${label}: ${e.constructor.name}: ${e.message}`);
        assert.ok(e.message.startsWith(`${op}: `), `${label}: the message should name ${op}: ${e.message}`);
        assert.ok(e.message.includes("inputSignature"), `${label}: the message should say how to avoid it: ${e.message}`);
        for (const p of parts) assert.ok(e.message.includes(p), `${label}: the message should mention ${p}: ${e.message}`);
        assert.ok(e.message.includes("unknown-dims.test.ts"), `${label}: the message should name the user's line: ${e.message}`);
        return true;
      },
    );
  }
});

// ---- gradients with unknown dims ------------------------------------------------------------

interface GradCase {
  label: string;
  inputs: (r: Rng, n: number) => sc.Tensor[];
  unknown?: number[][];
  fn: (...xs: sc.Tensor[]) => sc.Tensor;
}

const GRAD_CASES: GradCase[] = [
  { label: "sum over a known axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.sum(x, 1) },
  { label: "sum over the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.sum(x, 0) },
  { label: "mean over everything", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.mean(x) },
  { label: "mean over the unknown axis, keepDims", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.mean(x, 0, true) },
  { label: "variance over the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.variance(x, 0) },
  { label: "max and min", inputs: (r, n) => [f64(r, [n, 3, 2])], fn: (x) => sc.add(sc.max(x, 0), sc.min(x, [0, 2], true)) },
  { label: "logSumExp and prod", inputs: (r, n) => [f64(r, [n, 3], 0.5, 1.5)], fn: (x) => sc.add(sc.logSumExp(x, 0), sc.prod(x, 0)) },
  { label: "cumsum", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.cumsum(x, 0, { reverse: true }) },
  { label: "softmax and logSoftmax over the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.add(sc.softmax(x, 0), sc.logSoftmax(x)) },
  {
    label: "a dense layer: matmul, bias, relu",
    inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3, 4]), f64(r, [4])],
    unknown: [[0], [], []],
    fn: (x, w, b) => sc.relu(sc.add(sc.matmul(x, w), b)),
  },
  { label: "matmul with a vector, dot, outer", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [3])], unknown: [[0], []], fn: (a, v) => sc.add(sc.sum(sc.outer(a, v)), sc.sum(sc.dot(a, v))) },
  { label: "einsum", inputs: (r, n) => [f64(r, [n, 2, 3]), f64(r, [n, 3, 2])], fn: (a, b) => sc.einsum("bij,bjk->bik", a, b) },
  { label: "broadcasting against known shapes", inputs: (r, n) => [f64(r, [n, 3]), f64(r, [1, 3]), f64(r, [3])], unknown: [[0], [], []], fn: (a, b, c) => sc.mul(sc.sub(a, b), c) },
  { label: "where and clip", inputs: (r, n) => [f64(r, [n, 3], -2, 2), f64(r, [3])], unknown: [[0], []], fn: (x, y) => sc.where(sc.greater(x, 0), sc.clip(x, -1, 1), y) },
  { label: "reshape, transpose, expandDims, squeeze", inputs: (r, n) => [f64(r, [n, 2, 2])], fn: (x) => sc.squeeze(sc.expandDims(sc.transpose(sc.reshape(x, [-1, 4]), [1, 0]), 0), 0) },
  { label: "split with -1 along the unknown axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.mul(sc.split(x, [1, -1], 0)[1]!, 2) },
  { label: "stack and unstack along a known axis", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.stack(sc.unstack(x, 1).reverse(), 1) },
  { label: "slices that take the unknown axis whole", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => sc.add(x.slice("..., 1:3"), x.slice("::-1, ::2")) },
  { label: "gather along known and unknown axes", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => sc.add(sc.gather(x, idx([3, 0, 3]), 1), sc.sum(sc.gather(x, idx([0, 1, 1]), 0))) },
  { label: "gatherND", inputs: (r, n) => [f64(r, [n, 3, 2])], fn: (x) => sc.gatherND(x, idx([[1, 2], [0, 0], [1, 2]])) },
  { label: "scatterAdd", inputs: (r, n) => [f64(r, [n, 4]), f64(r, [n, 2])], fn: (x, u) => sc.scatterAdd(x, idx([3, 3]), u, 1) },
  { label: "pad: constant on the unknown axis, reflect on a known one", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.pad(sc.pad(x, [[1, 2], [0, 0]], 0.5), [[0, 0], [2, 1]], 0, "reflect") },
  { label: "tile and flip", inputs: (r, n) => [f64(r, [n, 3])], fn: (x) => sc.flip(sc.tile(x, [2, 3]), 0) },
  { label: "sort and topK along a known axis", inputs: (r, n) => [f64(r, [n, 4])], fn: (x) => sc.add(sc.sum(sc.sort(x)), sc.sum(sc.topK(x, 2)[0])) },
  {
    label: "conv2d and pooling",
    inputs: (r, n) => [f64(r, [n, 2, 6, 5]), f64(r, [3, 2, 3, 2])],
    unknown: [[0], []],
    fn: (x, w) => {
      const y = sc.conv2d(x, w, { strides: 2, padding: 1 });
      return sc.add(sc.sum(sc.maxPool2d(y, { kernelSize: 2, strides: 1 })), sc.sum(sc.avgPool2d(y, { kernelSize: 2 })));
    },
  },
  { label: "conv2dTranspose", inputs: (r, n) => [f64(r, [n, 2, 3, 3]), f64(r, [2, 3, 2, 2])], unknown: [[0], []], fn: (x, w) => sc.conv2dTranspose(x, w, { strides: 2 }) },
];

/** The gradient of sum(fn(...)^2) with respect to every input. */
const gradAll = (fn: GradCase["fn"]) => (...xs: sc.Tensor[]): sc.Tensor[] => {
  const tape = new sc.GradientTape();
  const y = tape.record(() => {
    tape.watch(xs);
    return sc.sum(sc.square(fn(...xs)));
  });
  return tape.gradient(y, xs) as sc.Tensor[];
};

test(`gradients inside a function staged with null dims equal eager ones (${GRAD_CASES.length} cases)`, () => {
  const failures: string[] = [];
  GRAD_CASES.forEach((c, k) => {
    try {
      const specs = specsOf({ op: "", ...c }, c.inputs(new Rng(k), 2));
      const staged = sc.stage(gradAll(c.fn), { inputSignature: specs, name: `grad_${k}` });
      for (const n of [2, 5]) {
        const xs = c.inputs(new Rng(500 + 10 * k + n), n);
        assertSameTensors(staged(...xs), gradAll(c.fn)(...xs), `${c.label} at size ${n}`);
      }
      assert.equal(staged.traceCount, 1);
    } catch (e) {
      failures.push(`${c.label}: ${(e as Error).message.split("\n")[0]}`);
    }
  });
  if (failures.length > 0) assert.fail(`${failures.length} of ${GRAD_CASES.length} cases failed:\n${failures.join("\n")}`);
});

test("a staged function with null dims called under an eager tape has eager gradients", () => {
  const mlp = (x: sc.Tensor, w: sc.Tensor, b: sc.Tensor) => sc.mean(sc.square(sc.tanh(sc.add(sc.matmul(x, w), b))), 0);
  const staged = sc.stage(mlp, { inputSignature: [sc.spec([null, 3], "float64"), sc.spec([3, 2], "float64"), sc.spec([2], "float64")] });
  const r = new Rng(9);
  const w = f64(r, [3, 2]);
  const b = f64(r, [2]);
  for (const n of [1, 4]) {
    const x = f64(r, [n, 3]);
    const loss = (f: typeof mlp) => (xx: sc.Tensor, ww: sc.Tensor, bb: sc.Tensor) => sc.sum(f(xx, ww, bb));
    const want = sc.grad(loss(mlp), { argnums: "all" })(x, w, b) as sc.Tensor[];
    const got = sc.grad(loss(staged), { argnums: "all" })(x, w, b) as sc.Tensor[];
    got.forEach((g, i) => {
      assert.deepEqual(g.shape, want[i]!.shape);
      const d = Array.from(g.dataSync()).map((v, j) => Math.abs(v - want[i]!.dataSync()[j]!));
      assert.ok(Math.max(0, ...d) < 1e-12, `gradient ${i} at batch ${n}: max difference ${Math.max(...d)}`);
    });
  }
  assert.equal(staged.traceCount, 1);
});

test("an unknown dim broadcast against a known size: the gradient is reduced when the graph runs", () => {
  const fn = (x: sc.Tensor) => sc.sum(sc.mul(x, sc.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]], "float64")));
  const f = sc.stage((x: sc.Tensor) => sc.grad(fn)(x), { inputSignature: [sc.spec([null, 3], "float64")] });
  assert.deepEqual(f(sc.ones([1, 3], "float64")).arraySync(), [[13, 16, 19]]);
  assert.deepEqual(f(sc.ones([4, 3], "float64")).arraySync(), [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]]);
});

test("gradients that need a size an unknown dim hides say so", () => {
  const cases: [string, (x: sc.Tensor) => sc.Tensor, sc.TensorSpec, string, string[]][] = [
    ["a partial slice of the unknown axis", (x) => x.slice("1:"), sc.spec([null, 3], "float64"), "slice", ["gradient of slicing part of an axis", "axis 0"]],
    ["sort along the unknown axis", (x) => sc.sort(x, { axis: 0 }), sc.spec([null, 3], "float64"), "sort", ["gradient along axis 0"]],
    ["avgPool2d of an unknown height", (x) => sc.avgPool2d(x, { kernelSize: 2 }), sc.spec([1, 1, null, 4], "float64"), "avgPool2d", ["height and width"]],
    ["a strided conv2d of an unknown width", (x) => sc.conv2d(x, sc.ones([1, 1, 2, 2], "float64"), { strides: 2 }), sc.spec([1, 1, 4, null], "float64"), "conv2d", ["strided conv2d"]],
  ];
  for (const [label, fn, spec, op, parts] of cases) {
    const f = sc.stage((x: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(fn(u)))(x), { inputSignature: [spec] });
    const shape = spec.shape.map((d) => (d < 0 ? 4 : d));
    assert.throws(
      () => f(sc.ones(shape, "float64")),
      (e: Error) => {
        assert.ok(e instanceof sc.ShapeError, `${label}: ${e.constructor.name}: ${e.message}`);
        assert.ok(e.message.startsWith(`${op}: `), `${label}: the message should name ${op}: ${e.message}`);
        assert.ok(e.message.includes("inputSignature"), `${label}: ${e.message}`);
        for (const p of parts) assert.ok(e.message.includes(p), `${label}: the message should mention ${p}: ${e.message}`);
        return true;
      },
    );
  }
});

test(
  "hostCall with null dims in its output spec gives outputs of the real shape",
  () => {
    const f = sc.stage((x: sc.Tensor) => sc.hostCall((v: sc.Tensor) => sc.square(v), sc.spec([null, 3], "float64"), x) as sc.Tensor, {
      inputSignature: [sc.spec([null, 3], "float64")],
    });
    const x = sc.tensor(rows(2, 3), "float64");
    assertSameTensors(f(x), sc.square(x), "hostCall");
  },
);
