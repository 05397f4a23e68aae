/** ONNX lowerings of reductions, matrix products and the neural-network ops. */
import type { DType } from "../../../core/dtype.js";
import { broadcastReductionAxes } from "../../../core/shape.js";
import { getOp } from "../../../ops/registry.js";
import type { OnnxBuilder } from "../builder.js";
import { lowerElementwise } from "../elementwise.js";
import type { LowerNode } from "../lowering.js";
import type { LowerFn } from "../lowering.js";
import { axisOf, castTo, filled, staticShape, storeFloat, type Table } from "./common.js";
import { argReduceNaN, hasNaNs, maxPoolNaN, maxPoolNaNIndices, propagateNaN, sortNaNLargest } from "./nan.js";

/** A Reduce* node over attrs.axes (an empty list reduces nothing). */
function reduce(b: OnnxBuilder, opType: string, x: string, n: LowerNode): string {
  const axes = n.attrs.axes as number[];
  if (axes.length === 0) return b.op1("Identity", [x]);
  return b.op1(opType, [x, b.i64(axes)], { keepdims: n.attrs.keepDims ? 1 : 0 });
}

/** The input as the output's dtype (sum of bools gives int32, mean of ints float32, ...). */
const asOut = (b: OnnxBuilder, x: string, n: LowerNode): string => castTo(b, x, n.inputTypes[0]!.dtype, n.outputTypes[0]!.dtype);

const ARITH_DTYPES: readonly DType[] = ["float32", "float64", "int32", "int64"];

/**
 * A sum-like op (Reduce*, CumSum) on the input as the output's dtype; dtypes onnxruntime's kernels
 * lack (float16, the narrow and unsigned integers) accumulate in float64, as the CPU kernels do,
 * and are stored back.
 */
function accumulate(b: OnnxBuilder, x: string, n: LowerNode, f: (v: string) => string): string {
  const out = n.outputTypes[0]!.dtype;
  if (ARITH_DTYPES.includes(out)) return f(asOut(b, x, n));
  return storeFloat(b, f(castTo(b, x, n.inputTypes[0]!.dtype, "float64")), "float64", out);
}

/**
 * ReduceMean over attrs.axes; a group known to be empty (every reduced dim static, one of them 0)
 * is 0 / 0 = NaN, as ours (onnxruntime's ReduceMean gives 0 there). With a symbolic reduced dim
 * that is 0 when the model runs, onnxruntime's 0 stays (docs/onnx.md, "Special values").
 */
function reduceMean(b: OnnxBuilder, x: string, n: LowerNode): string {
  const shape = n.inputTypes[0]!.shape;
  const axes = n.attrs.axes as number[];
  const empty = axes.length > 0 && axes.every((a) => shape[a]! >= 0) && axes.some((a) => shape[a] === 0);
  if (!empty) return reduce(b, "ReduceMean", x, n);
  return b.op1("Div", [reduce(b, "ReduceSum", x, n), b.scalar(0, n.outputTypes[0]!.dtype)]);
}

/** The lowerings float32Only made (the partition keeps their float64 nodes on our executor: onnx/partition/cut.ts). */
export const float32OnlyLowerings = new WeakSet<LowerFn>();

/** Ops onnxruntime's CPU provider runs in float32 only (Conv, pooling): float64 goes through float32. */
function float32Only(lower: LowerFn): LowerFn {
  const through: LowerFn = (b, ins, n) => {
    if (!n.inputTypes.some((t) => t.dtype === "float64")) return lower(b, ins, n);
    const down = ins.map((x, i) => (n.inputTypes[i]!.dtype === "float64" ? b.cast(x, "float32") : x));
    const types = (ts: readonly { dtype: DType; shape: readonly number[] }[]) => ts.map((t) => (t.dtype === "float64" ? { ...t, dtype: "float32" as DType } : t));
    const outs = lower(b, down, { ...n, inputTypes: types(n.inputTypes), outputTypes: types(n.outputTypes) });
    return outs.map((o, i) => (n.outputTypes[i]!.dtype === "float64" ? b.cast(o, "float64") : o));
  };
  float32OnlyLowerings.add(through);
  return through;
}

/**
 * A reduction that propagates NaN (max, min, logSumExp of a group with a NaN are NaN; onnxruntime's
 * Reduce* drop it): float inputs go through propagateNaN.
 */
function reduceNaN(b: OnnxBuilder, opType: string, x: string, n: LowerNode): string {
  const r = reduce(b, opType, x, n);
  const d = n.outputTypes[0]!.dtype;
  if (!hasNaNs(d) || (n.attrs.axes as number[]).length === 0) return r;
  return propagateNaN(b, x, r, d, (v, op) => reduce(b, op, v, n));
}

/** ONNX Reduce* does not take bool or every integer width: those reduce as int32 (exact) and are cast back. */
function reduceKeepingDtype(b: OnnxBuilder, opType: string, x: string, n: LowerNode): string {
  const d = n.inputTypes[0]!.dtype;
  const ok: DType[] = ["float32", "float64", "float16", "int32", "int64"];
  if (ok.includes(d)) return reduceNaN(b, opType, x, n);
  const wide: DType = d === "uint32" ? "int64" : "int32";
  return castTo(b, reduce(b, opType, b.cast(x, wide), n), wide, n.outputTypes[0]!.dtype);
}

/** Truthiness (non-zero) of a numeric or bool value. */
function nonZero(b: OnnxBuilder, x: string, d: DType): string {
  return d === "bool" ? x : b.op1("Not", [b.op1("Equal", [x, b.scalar(0, d)])]);
}

function argReduce(opType: string) {
  return (b: OnnxBuilder, [x]: string[], n: LowerNode): string[] => {
    let v = x!;
    let axis = n.attrs.axis as number | null;
    if (axis === null) {
      v = b.op1("Reshape", [v, b.i64([-1])]);
      axis = 0;
    }
    const d = n.inputTypes[0]!.dtype;
    if (!["float32", "float64", "int32", "int64", "uint8", "int8"].includes(d)) v = b.cast(v, d === "bool" ? "int32" : "float64");
    const keepdims = n.attrs.keepDims && n.attrs.axis !== null ? 1 : 0;
    // (float16 went to float64 above: NaN stays NaN)
    const r = hasNaNs(d) ? argReduceNaN(b, opType, v, axis, keepdims) : b.op1(opType, [v], { axis, keepdims });
    const out = n.attrs.keepDims && n.attrs.axis === null ? b.op1("Reshape", [r, b.i64(n.outputTypes[0]!.shape.map(() => 1))]) : r;
    return [castTo(b, out, "int64", n.outputTypes[0]!.dtype)];
  };
}

function swapLast(b: OnnxBuilder, x: string, rank: number): string {
  const perm = Array.from({ length: rank }, (_, i) => i);
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1]!, perm[rank - 2]!];
  return b.op1("Transpose", [x], { perm: { ints: perm } });
}

const convAttrs = (a: { strides: number[]; pads: number[]; dilations: number[]; groups: number }) => ({
  strides: { ints: a.strides },
  pads: { ints: a.pads },
  dilations: { ints: a.dilations },
  group: a.groups,
});

/** Sizes of one spatial axis's pooling windows inside the input (padding excluded). */
function windowCounts(size: number, out: number, k: number, s: number, padBefore: number): number[] {
  return Array.from({ length: out }, (_, o) => {
    const lo = o * s - padBefore;
    return Math.min(size, lo + k) - Math.max(0, lo);
  });
}

export const mathLowerings: Table = {
  sum: (b, [x], n) => [accumulate(b, x!, n, (v) => reduce(b, "ReduceSum", v, n))],
  mean: (b, [x], n) => [accumulate(b, x!, n, (v) => reduceMean(b, v, n))],
  prod: (b, [x], n) => [accumulate(b, x!, n, (v) => reduce(b, "ReduceProd", v, n))],
  max: (b, [x], n) => [reduceKeepingDtype(b, "ReduceMax", x!, n)],
  min: (b, [x], n) => [reduceKeepingDtype(b, "ReduceMin", x!, n)],
  logSumExp: (b, [x], n) => [reduceNaN(b, "ReduceLogSumExp", asOut(b, x!, n), n)],
  variance: (b, [x], n) => {
    const v = asOut(b, x!, n);
    const axes = n.attrs.axes as number[];
    const m = b.op1("ReduceMean", [v, b.i64(axes)], { keepdims: 1 });
    const c = b.op1("Sub", [v, m]);
    return [reduceMean(b, b.op1("Mul", [c, c]), n)];
  },
  any: (b, [x], n) => [b.cast(reduce(b, "ReduceMax", b.cast(nonZero(b, x!, n.inputTypes[0]!.dtype), "int32"), n), "bool")],
  all: (b, [x], n) => [b.cast(reduce(b, "ReduceMin", b.cast(nonZero(b, x!, n.inputTypes[0]!.dtype), "int32"), n), "bool")],
  argMax: argReduce("ArgMax"),
  argMin: argReduce("ArgMin"),
  cumsum: (b, [x], n) => {
    const rank = n.inputTypes[0]!.shape.length;
    const attrs = { exclusive: n.attrs.exclusive ? 1 : 0, reverse: n.attrs.reverse ? 1 : 0 };
    return [accumulate(b, x!, n, (v) => b.op1("CumSum", [v, b.scalar(axisOf(n.attrs.axis, rank), "int64")], attrs))];
  },
  sumToLike: (b, [x], n) => {
    const xs = n.inputTypes[0]!.shape;
    const like = n.outputTypes[0]!.shape;
    const off = xs.length - like.length;
    // (a like dim that is unknown may or may not have been broadcast: decided only at run time)
    if (like.some((d, i) => d < 0 && xs[off + i] !== d)) return b.unsupported(`summing to a shape with unknown dims ([${like.join(", ")}]) is decided at run time`);
    const axes = broadcastReductionAxes(like, xs);
    let s = axes.length > 0 ? b.op1("ReduceSum", [x!, b.i64(axes)], { keepdims: 1 }) : x!;
    if (off > 0) s = b.op1("Squeeze", [s, b.i64(Array.from({ length: off }, (_, i) => i))]);
    return [s];
  },
  matmul: (b, [x, y], n) => {
    const [ta, tb] = [n.attrs.transposeA, n.attrs.transposeB];
    const ra = n.inputTypes[0]!.shape.length;
    const rb = n.inputTypes[1]!.shape.length;
    const a = ta && ra >= 2 ? swapLast(b, x!, ra) : x!;
    const c = tb && rb >= 2 ? swapLast(b, y!, rb) : y!;
    return [b.op1("MatMul", [a, c])];
  },
  // ONNX Relu (max(x, 0), NaN and -0 passed through: relu's declared semantics), which
  // onnxruntime fuses into a preceding MatMul/Gemm/Conv; dtypes its CPU Relu lacks are lowered
  // from relu's expression.
  relu: (b, [x], n) => {
    const d = n.outputTypes[0]!.dtype;
    if (d === "float32" || d === "float64") return [b.op1("Relu", [x!])];
    return [lowerElementwise(b, getOp("relu").elementwise!, n.attrs, [{ name: x!, dtype: n.inputTypes[0]!.dtype }], d)];
  },
  softmax: (b, [x], n) => [b.op1("Softmax", [x!], { axis: n.attrs.axis })],
  // (+ the group's sum of relu(x) * 0: NaN for a group holding NaN or +Inf, where ours is NaN
  // throughout (x - max is NaN there); onnxruntime's float64 LogSoftmax gives -Inf, or finite
  // values, for the other entries. Finite and -Inf entries add zeros.)
  logSoftmax: (b, [x], n) => {
    const zero = b.scalar(0, n.outputTypes[0]!.dtype);
    const nanIfNaNOrInf = b.op1("ReduceSum", [b.op1("Mul", [b.op1("Relu", [x!]), zero]), b.i64([n.attrs.axis])], { keepdims: 1 });
    return [b.op1("Add", [b.op1("LogSoftmax", [x!], { axis: n.attrs.axis }), nanIfNaNOrInf])];
  },
  conv2d: float32Only((b, [x, w], n) => [b.op1("Conv", [x!, w!], convAttrs(n.attrs))]),
  conv2dTranspose: float32Only((b, [x, w], n) => [b.op1("ConvTranspose", [x!, w!], { ...convAttrs(n.attrs), output_padding: { ints: n.attrs.outputPadding } })]),
  conv2dBackpropFilter: float32Only((b, [x, dy], n) => {
    // dw[o, c] = conv over the batch of x[:, c] with dy[:, o] as the filter, strides and dilations
    // swapped; a grouped convolution does so per group (its channels split evenly)
    const g = n.attrs.groups as number;
    const [kH, kW] = n.attrs.filterSize as [number, number];
    const filterGrad = (xs: string, dys: string): string => {
      const xt = b.op1("Transpose", [xs], { perm: { ints: [1, 0, 2, 3] } });
      const dyt = b.op1("Transpose", [dys], { perm: { ints: [1, 0, 2, 3] } });
      const c = b.op1("Conv", [xt, dyt], { strides: { ints: n.attrs.dilations }, dilations: { ints: n.attrs.strides }, pads: { ints: n.attrs.pads } });
      const cropped = b.op1("Slice", [c, b.i64([0, 0]), b.i64([kH, kW]), b.i64([2, 3])]);
      return b.op1("Transpose", [cropped], { perm: { ints: [1, 0, 2, 3] } });
    };
    if (g === 1) return [filterGrad(x!, dy!)];
    const C = n.inputTypes[0]!.shape[1]!;
    const O = n.inputTypes[1]!.shape[1]!;
    if (C < 0 || O < 0) return b.unsupported(`the filter gradient of a grouped convolution with unknown channel counts`);
    const xs = b.op("Split", [x!, b.i64(new Array(g).fill(C / g))], { axis: 1 }, g);
    const dys = b.op("Split", [dy!, b.i64(new Array(g).fill(O / g))], { axis: 1 }, g);
    return [b.op1("Concat", xs.map((xi, j) => filterGrad(xi, dys[j]!)), { axis: 0 })];
  }),
  // MaxPool with NaN windows restored (nan.ts); the gradients' argmax is the first NaN there
  maxPool2d: float32Only((b, [x], n) => {
    const attrs = poolAttrs(n);
    const d = n.inputTypes[0]!.dtype;
    const pooled = b.op1("MaxPool", [x!], attrs);
    return [hasNaNs(d) ? maxPoolNaN(b, x!, pooled, d, attrs) : pooled];
  }),
  maxPool2dGrad: float32Only((b, [x, dy], n) => {
    // dy added at each window's argmax (MaxPool's flat indices) in zeros of x's size
    const idx = maxPoolIndices(b, x!, n);
    const shape = b.op1("Shape", [x!]);
    const flat = b.op1("Reshape", [filled(b, shape, 0, n.outputTypes[0]!.dtype), b.i64([-1])]);
    const sc = b.op1("ScatterElements", [flat, b.op1("Reshape", [idx, b.i64([-1])]), b.op1("Reshape", [dy!, b.i64([-1])])], { axis: 0, reduction: "add" });
    return [b.op1("Reshape", [sc, shape])];
  }),
  maxPool2dGradGrad: float32Only((b, [x, g], n) => [b.op1("Gather", [b.op1("Reshape", [g!, b.i64([-1])]), maxPoolIndices(b, x!, n)], { axis: 0 })]),
  avgPool2d: float32Only((b, [x], n) => [
    b.op1("AveragePool", [x!], { kernel_shape: { ints: n.attrs.kernelSize }, strides: { ints: n.attrs.strides }, pads: { ints: n.attrs.pads }, count_include_pad: 0 }),
  ]),
  avgPool2dGrad: float32Only((b, [dy], n) => {
    // each window's dy / (its count of unpadded elements), spread over the window: a grouped ConvTranspose with a ones filter
    const dyShape = staticShape(n.inputTypes[0]!.shape);
    if (dyShape === null) return b.unsupported(`dy has unknown dims [${n.inputTypes[0]!.shape.join(", ")}]`);
    const [, C, oH, oW] = dyShape as [number, number, number, number];
    const [H, W] = n.attrs.inputSize as [number, number];
    const [kH, kW] = n.attrs.kernelSize as [number, number];
    const [sH, sW] = n.attrs.strides as [number, number];
    const [pt, pl, pb, pr] = n.attrs.pads as [number, number, number, number];
    const ch = windowCounts(H, oH, kH, sH, pt);
    const cw = windowCounts(W, oW, kW, sW, pl);
    const dtype = n.outputTypes[0]!.dtype;
    const counts = b.constant(ch.flatMap((a) => cw.map((c) => a * c)), dtype, [oH, oW]);
    const ones = b.constant(new Array(C * kH * kW).fill(1), dtype, [C, 1, kH, kW]);
    const opH = H - ((oH - 1) * sH - pt - pb + kH);
    const opW = W - ((oW - 1) * sW - pl - pr + kW);
    if (opH < 0 || opW < 0) return b.unsupported(`pooling windows that overhang the input by more than the padding`);
    return [
      b.op1("ConvTranspose", [b.op1("Div", [dy!, counts]), ones], {
        strides: { ints: [sH, sW] },
        pads: { ints: [pt, pl, pb, pr] },
        group: C,
        output_padding: { ints: [opH, opW] },
      }),
    ];
  }),
  topK: (b, [x], n) => {
    const d = n.inputTypes[0]!.dtype;
    const rank = n.inputTypes[0]!.shape.length;
    let [v, i] = hasNaNs(d) ? sortNaNLargest(b, x!, rank - 1, true, b.i64([n.attrs.k]), d) : (b.op("TopK", [x!, b.i64([n.attrs.k])], { axis: -1, largest: 1, sorted: 1 }, 2) as [string, string]);
    if (!n.attrs.sorted) {
      // the k largest in index order: their indices sorted ascending, the values gathered again
      i = b.op("TopK", [i, b.i64([n.attrs.k])], { axis: -1, largest: 0, sorted: 1 }, 2)[0]!;
      v = b.op1("GatherElements", [x!, i], { axis: -1 });
    }
    return [v, castTo(b, i, "int64", n.outputTypes[1]!.dtype)];
  },
  sort: (b, [x], n) => [sortAlong(b, x!, n)[0]],
  argsort: (b, [x], n) => [castTo(b, sortAlong(b, x!, n)[1], "int64", n.outputTypes[0]!.dtype)],
};

const poolAttrs = (n: LowerNode) => ({ kernel_shape: { ints: n.attrs.kernelSize as number[] }, strides: { ints: n.attrs.strides as number[] }, pads: { ints: n.attrs.pads as number[] } });

/** MaxPool's flat argmax indices of every window: the first NaN of a window holding one. */
function maxPoolIndices(b: OnnxBuilder, x: string, n: LowerNode): string {
  const attrs = poolAttrs(n);
  const [, idx] = b.op("MaxPool", [x], attrs, 2);
  const d = n.inputTypes[0]!.dtype;
  return hasNaNs(d) ? maxPoolNaNIndices(b, x, idx!, d, attrs) : idx!;
}

function sortAlong(b: OnnxBuilder, x: string, n: LowerNode): [string, string] {
  const rank = n.inputTypes[0]!.shape.length;
  const axis = axisOf(n.attrs.axis, rank);
  const k = b.op1("Shape", [x], { start: axis, end: axis + 1 });
  const d = n.inputTypes[0]!.dtype;
  if (hasNaNs(d)) return sortNaNLargest(b, x, axis, !!n.attrs.descending, k, d);
  const [v, i] = b.op("TopK", [x, k], { axis, largest: n.attrs.descending ? 1 : 0, sorted: 1 }, 2);
  return [v!, i!];
}
