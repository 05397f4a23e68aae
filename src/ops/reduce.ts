/**
 * Reductions over axes with keepDims: sum, mean, prod, max, min, argMax, argMin, logSumExp,
 * any, all, variance; and the scan cumsum.
 *
 * Every reduction takes `axis` (a number, a list of numbers, or null/undefined for all axes;
 * negative axes count from the end) and `keepDims`. Empty reductions give the identity
 * (sum 0, prod 1, any false, all true, logSumExp -Infinity) or NaN (mean, variance); max, min,
 * argMax and argMin of an empty group raise ValueError, as in NumPy.
 *
 * Dtypes: sum/prod/cumsum promote bool and uint8 to int32; mean, logSumExp and variance of
 * integers give float32; max/min keep the dtype; argMax/argMin give int32; any/all give bool.
 */
import { allocStorage, DEFAULT_FLOAT, isFloat, type DType, type TypedArray } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { broadcastReductionAxes, fmtShape, hasUnknownDims, normalizeAxes, normalizeAxis, shapesEqual, sizeOf, type Shape } from "../core/shape.js";
import { Tensor, type TensorLike } from "../core/tensor.js";
import { argReduce, cumsum3, logSumExpAxes, reduceAxes, varianceAxes, type Combine } from "../backends/cpu/reduce.js";
import { applyOp1, defineOp, type OpDef, type ReductionForm, type TensorType } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { broadcastLike, broadcastTo, expandDims, reshape, squeeze } from "./shape.js";
import { fullLike } from "./creation.js";
import { div, mul, sub } from "./binary.js";
import { exp, isNaN } from "./unary.js";
import { equal, logicalAnd, logicalOr } from "./compare.js";
import { where } from "./where.js";
import { cast } from "./cast.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { mathGpu } from "../backends/webgpu/op-kernels/math.js";
import { axesBatch, axisBatch, batchWhen, perExample } from "./batching.js";

export interface ReduceAttrs {
  /** Sorted, normalized axes. */
  axes: number[];
  keepDims: boolean;
}

export type AxisArg = number | number[] | null | undefined;

export function reducedShape(shape: Shape, axes: readonly number[], keepDims: boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (axes.includes(i)) {
      if (keepDims) out.push(1);
    } else out.push(shape[i]!);
  }
  return out;
}

/** Shape of a reduction's output with the reduced axes kept as 1 (to broadcast gradients back). */
export function keptShape(shape: Shape, axes: readonly number[]): number[] {
  return reducedShape(shape, axes, true);
}

/** Number of elements each output of a reduction over `axes` combines. */
export function reductionCount(shape: Shape, axes: readonly number[]): number {
  let n = 1;
  for (const a of axes) n *= shape[a]!;
  return n;
}

/** A CPU kernel for a reduction: fills `out` (the kept dims, row-major) from `x`. */
export type ReduceKernel = (x: TypedArray, shape: Shape, axes: readonly number[], out: TypedArray) => void;

export interface ReductionOptions {
  /** Raise ValueError when a non-empty output would reduce an empty group (max, min). */
  requireNonEmpty?: boolean;
  /** The reduction combines elements one at a time (executors may inline it): reduction.mean for mean. */
  form?: ReductionForm;
}

function checkNonEmpty(op: string, shape: Shape, axes: readonly number[]): void {
  // With unknown dims (staging) this is decided with the concrete shape when the graph runs.
  if (hasUnknownDims(shape)) return;
  if (reductionCount(shape, axes) === 0 && sizeOf(reducedShape(shape, axes, false)) > 0) {
    throw new ValueError(`cannot reduce an empty group: the input of shape ${fmtShape(shape)} has size 0 along axes ${JSON.stringify(axes)} and ${op} has no identity`, op);
  }
}

export function defineReduction(
  name: string,
  combine: Combine | ReduceKernel,
  outDtype: (d: DType, op: string) => DType,
  vjp?: OpDef<ReduceAttrs>["vjp"],
  options: ReductionOptions = {},
): OpDef<ReduceAttrs> {
  return defineOp<ReduceAttrs>({
    name,
    batch: axesBatch,
    family: "reduce",
    inputs: ["x"],
    infer(inputs, attrs): TensorType[] {
      const x = inputs[0]!;
      if (options.requireNonEmpty) checkNonEmpty(name, x.shape, attrs.axes);
      return [{ shape: reducedShape(x.shape, attrs.axes, attrs.keepDims), dtype: outDtype(x.dtype, name) }];
    },
    kernels: {
      webgpu: mathGpu[name as keyof typeof mathGpu],
      cpu(inputs, attrs, outs) {
        const x = inputs[0]!;
        const o = outs[0]!;
        const out = allocStorage(o.dtype, sizeOf(o.shape));
        if (typeof combine === "string") reduceAxes(combine, x.concrete(), x.shape, attrs.axes, out);
        else combine(x.concrete(), x.shape, attrs.axes, out);
        return [out];
      },
    },
    ...(vjp ? { vjp } : {}),
    ...(typeof combine === "string" ? { reduction: { combine } } : options.form ? { reduction: options.form } : {}),
  });
}

export function reduceAttrs(op: string, x: Tensor, axis: AxisArg, keepDims: boolean): ReduceAttrs {
  if (keepDims !== undefined && typeof keepDims !== "boolean") {
    throw new ValueError(`keepDims must be a boolean, got ${String(keepDims)}`, op);
  }
  return { axes: normalizeAxes(op, axis, x.rank), keepDims: !!keepDims };
}

/** Sums of bool and of integers narrower than 32 bits accumulate in int32 (as matmul's products do). */
const sumDtype = (d: DType): DType => (d === "bool" || d === "uint8" || d === "int8" || d === "int16" || d === "uint16" ? "int32" : d);
const floatDtype = (d: DType): DType => (isFloat(d) ? d : DEFAULT_FLOAT);
const sameDtype = (d: DType): DType => d;

/**
 * The cotangent (or value) of a reduction's output with the reduced axes kept as size 1, so it
 * broadcasts against the input. expandDims needs no static sizes, so this works with unknown dims.
 */
function keptCotangent(ct: Tensor, attrs: ReduceAttrs): Tensor {
  return attrs.keepDims ? ct : expandDims(ct, attrs.axes);
}

/** `t` (kept dims) broadcast to x's shape; with unknown dims (staging) against x itself. */
function broadcastBack(t: Tensor, x: Tensor): Tensor {
  return hasUnknownDims(x.shape) ? broadcastLike(t, x) : broadcastTo(t, x.shape);
}

/**
 * The number of elements each output of a reduction of x over `axes` combines, as a JS number,
 * or, when a reduced axis has an unknown size (staging), as a scalar-per-group tensor of dtype
 * `dtype` computed when the graph runs.
 */
function countOf(x: Tensor, axes: readonly number[], dtype: DType): number | Tensor {
  if (axes.every((a) => x.shape[a]! >= 0)) return reductionCount(x.shape, axes);
  return sum(fullLike(x, 1, dtype), axes.slice(), true);
}

// ---------------------------------------------------------------------------------------
// sum, mean, prod

export const sumOp = defineReduction("sum", "sum", sumDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  return [broadcastBack(keptCotangent(cts[0]!, ctx.attrs), x)];
});

export function sum(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "sum");
  return applyOp1(sumOp, [t], reduceAttrs("sum", t, axis, keepDims));
}

const meanKernel: ReduceKernel = (x, shape, axes, out) => {
  reduceAxes("sum", x, shape, axes, out);
  const n = reductionCount(shape, axes);
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / n;
};

export const meanOp = defineReduction("mean", meanKernel, floatDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  const ct = cts[0]!;
  const n = countOf(x, ctx.attrs.axes, ct.dtype);
  return [broadcastBack(div(keptCotangent(ct, ctx.attrs), n), x)];
}, { form: { combine: "sum", mean: true } });

/** Arithmetic mean; integers give float32; an empty reduction gives NaN. */
export function mean(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "mean");
  return applyOp1(meanOp, [t], reduceAttrs("mean", t, axis, keepDims));
}

/**
 * d prod / d x_i = product of the other elements of x_i's group, computed without dividing by
 * zero: with no zero in the group it is prod / x_i; with exactly one zero it is the product of
 * the non-zero elements at the zero and 0 elsewhere; with two or more zeros it is 0.
 * First derivatives are exact everywhere. Second derivatives are exact away from zeros; at an
 * exact zero the mixed partials d^2 prod / (d x_zero d x_j) are returned as 0.
 */
export const prodOp = defineReduction("prod", "prod", sumDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  const axes = ctx.attrs.axes;
  const isZero = equal(x, 0);
  const safe = where(isZero, 1, x);
  const prodNonZero = prod(safe, axes, true);
  const zeros = sum(isZero, axes, true);
  const noZero = equal(zeros, 0);
  const oneZero = logicalAnd(equal(zeros, 1), isZero);
  const local = where(noZero, div(prodNonZero, safe), where(oneZero, prodNonZero, 0));
  return [mul(local, keptCotangent(cts[0]!, ctx.attrs))];
});

/** Product; bool/uint8 give int32; an empty reduction gives 1. */
export function prod(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "prod");
  return applyOp1(prodOp, [t], reduceAttrs("prod", t, axis, keepDims));
}

// ---------------------------------------------------------------------------------------
// max, min

/**
 * Gradient of max/min: the cotangent split evenly between the elements equal to the result; a NaN
 * result came from the group's NaNs, which share it (as in PyTorch).
 */
function extremumVjp(ctx: { inputs: Tensor[]; outputs: Tensor[]; attrs: ReduceAttrs }, cts: (Tensor | null)[]): (Tensor | null)[] {
  const x = ctx.inputs[0]!;
  const axes = ctx.attrs.axes;
  const y = keptCotangent(ctx.outputs[0]!, ctx.attrs);
  const hit = isFloat(x.dtype) ? logicalOr(equal(x, y), logicalAnd(isNaN(x), isNaN(y))) : equal(x, y);
  const mask = cast(hit, x.dtype);
  const count = sum(mask, axes, true);
  return [mul(mask, div(keptCotangent(cts[0]!, ctx.attrs), count))];
}

export const maxOp = defineReduction("max", "max", sameDtype, extremumVjp, { requireNonEmpty: true });
export const minOp = defineReduction("min", "min", sameDtype, extremumVjp, { requireNonEmpty: true });

/** Maximum; NaN propagates; the gradient is shared evenly between tied maxima. */
export function max(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "max");
  return applyOp1(maxOp, [t], reduceAttrs("max", t, axis, keepDims));
}

/** Minimum; NaN propagates; the gradient is shared evenly between tied minima. */
export function min(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "min");
  return applyOp1(minOp, [t], reduceAttrs("min", t, axis, keepDims));
}

// ---------------------------------------------------------------------------------------
// argMax, argMin

export interface ArgReduceAttrs {
  /** Normalized axis, or null for the index into the flattened tensor. */
  axis: number | null;
  keepDims: boolean;
}

function argShape(shape: Shape, attrs: ArgReduceAttrs): number[] {
  if (attrs.axis === null) return attrs.keepDims ? shape.map(() => 1) : [];
  return reducedShape(shape, [attrs.axis], attrs.keepDims);
}

function defineArgReduction(name: string, kind: "max" | "min"): OpDef<ArgReduceAttrs> {
  return defineOp<ArgReduceAttrs>({
    name,
    batch: batchWhen<ArgReduceAttrs>("axis", (c) => c.attrs.axis !== null, axisBatch as never),
    family: "reduce",
    inputs: ["x"],
    infer(inputs, attrs) {
      const x = inputs[0]!;
      checkNonEmpty(name, x.shape, attrs.axis === null ? x.shape.map((_, i) => i) : [attrs.axis]);
      return [{ shape: argShape(x.shape, attrs), dtype: "int32" }];
    },
    kernels: {
      webgpu: mathGpu[name as keyof typeof mathGpu],
      cpu(inputs, attrs, outs) {
        const x = inputs[0]!;
        const out = new Int32Array(sizeOf(outs[0]!.shape));
        let outer = 1,
          red = x.size,
          inner = 1;
        if (attrs.axis !== null) {
          red = x.shape[attrs.axis]!;
          for (let i = 0; i < attrs.axis; i++) outer *= x.shape[i]!;
          for (let i = attrs.axis + 1; i < x.rank; i++) inner *= x.shape[i]!;
        }
        if (out.length > 0) argReduce(kind, x.concrete(), outer, red, inner, out);
        return [out];
      },
    },
  });
}

export const argMaxOp = defineArgReduction("argMax", "max");
export const argMinOp = defineArgReduction("argMin", "min");

function argAttrs(op: string, x: Tensor, axis: number | null | undefined, keepDims: boolean): ArgReduceAttrs {
  if (Array.isArray(axis)) throw new ValueError(`takes a single axis (or null for the flattened tensor), got ${JSON.stringify(axis)}`, op);
  if (keepDims !== undefined && typeof keepDims !== "boolean") throw new ValueError(`keepDims must be a boolean, got ${String(keepDims)}`, op);
  return { axis: axis === null || axis === undefined ? null : normalizeAxis(op, axis, x.rank), keepDims: !!keepDims };
}

/**
 * Index (int32) of the maximum along `axis` (null/undefined: into the flattened tensor).
 * Ties give the first occurrence; NaN counts as the maximum. Not differentiable.
 */
export function argMax(x: TensorLike, axis: number | null = null, keepDims = false): Tensor {
  const t = toTensor(x, "argMax");
  return applyOp1(argMaxOp, [t], argAttrs("argMax", t, axis, keepDims));
}

/** Index (int32) of the minimum along `axis`; ties give the first occurrence; NaN counts as the minimum. */
export function argMin(x: TensorLike, axis: number | null = null, keepDims = false): Tensor {
  const t = toTensor(x, "argMin");
  return applyOp1(argMinOp, [t], argAttrs("argMin", t, axis, keepDims));
}

// ---------------------------------------------------------------------------------------
// logSumExp, variance

export const logSumExpOp = defineReduction("logSumExp", logSumExpAxes, floatDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  const y = keptCotangent(ctx.outputs[0]!, ctx.attrs);
  return [mul(keptCotangent(cts[0]!, ctx.attrs), exp(sub(x, y)))];
});

/** log(sum(exp(x))), computed stably (shifted by the max); its gradient is softmax(x) * dy. */
export function logSumExp(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "logSumExp");
  checkNotBool("logSumExp", t.dtype);
  return applyOp1(logSumExpOp, [t], reduceAttrs("logSumExp", t, axis, keepDims));
}

export const varianceOp = defineReduction("variance", varianceAxes, floatDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  const axes = ctx.attrs.axes;
  const ct = cts[0]!;
  const n = countOf(x, axes, ct.dtype);
  const centered = sub(x, mean(x, axes, true));
  // 2 / n as one factor, as a JS number or (unknown n) a tensor: the same rounding either way.
  return [mul(keptCotangent(ct, ctx.attrs), mul(centered, typeof n === "number" ? 2 / n : div(2, n)))];
});

/** Population variance (mean of squared deviations from the mean); integers give float32. */
export function variance(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "variance");
  checkNotBool("variance", t.dtype);
  return applyOp1(varianceOp, [t], reduceAttrs("variance", t, axis, keepDims));
}

// ---------------------------------------------------------------------------------------
// any, all

export const anyOp = defineReduction("any", "any", () => "bool");
export const allOp = defineReduction("all", "all", () => "bool");

/** True where any element of the group is non-zero (NaN counts as true). */
export function any(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "any");
  return applyOp1(anyOp, [t], reduceAttrs("any", t, axis, keepDims));
}

/** True where every element of the group is non-zero (NaN counts as true). */
export function all(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "all");
  return applyOp1(allOp, [t], reduceAttrs("all", t, axis, keepDims));
}

// ---------------------------------------------------------------------------------------
// cumsum

export interface CumsumAttrs {
  /** Normalized axis. */
  axis: number;
  exclusive: boolean;
  reverse: boolean;
}

export interface CumsumOptions {
  /** Each output excludes its own element (starts from 0). */
  exclusive?: boolean;
  /** Accumulate from the end of the axis. */
  reverse?: boolean;
}

export const cumsumOp = defineOp<CumsumAttrs>({
  name: "cumsum",
  batch: axisBatch,
  family: "reduce",
  inputs: ["x"],
  infer(inputs) {
    const x = inputs[0]!;
    return [{ shape: x.shape, dtype: sumDtype(x.dtype) }];
  },
  kernels: {
    webgpu: mathGpu.cumsum,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const out = allocStorage(outs[0]!.dtype, x.size);
      let outer = 1,
        inner = 1;
      for (let i = 0; i < attrs.axis; i++) outer *= x.shape[i]!;
      for (let i = attrs.axis + 1; i < x.rank; i++) inner *= x.shape[i]!;
      if (out.length > 0) cumsum3(x.concrete(), out, outer, x.shape[attrs.axis]!, inner, attrs.exclusive, attrs.reverse);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const { axis, exclusive, reverse } = ctx.attrs;
    return [cumsum(cts[0]!, axis, { exclusive, reverse: !reverse })];
  },
});

/**
 * Cumulative sum along `axis` (null/undefined: over the flattened tensor, giving 1-D, as in
 * NumPy). `exclusive`: each output leaves out its own element; `reverse`: from the end.
 */
export function cumsum(x: TensorLike, axis: number | null = null, options: CumsumOptions = {}): Tensor {
  checkOptions("cumsum", options, optionKeys<CumsumOptions>()("exclusive", "reverse"));
  let t = toTensor(x, "cumsum");
  if (Array.isArray(axis)) throw new ValueError(`takes a single axis, got ${JSON.stringify(axis)}`, "cumsum");
  if (axis === null || axis === undefined) {
    if (t.rank !== 1) t = reshape(t, [-1]);
    axis = 0;
  }
  const a = normalizeAxis("cumsum", axis, t.rank);
  return applyOp1(cumsumOp, [t], { axis: a, exclusive: !!options.exclusive, reverse: !!options.reverse });
}

// ---------------------------------------------------------------------------------------

/**
 * Sums `x` down to `shape` (the inverse of broadcasting; used by gradients). While staging
 * with unknown dims, an unknown dim of `shape` against an unknown dim of x is taken to be the
 * same size (not broadcast); against a known size other than 1 it is ambiguous (it may have been
 * 1 and broadcast), which is a ShapeError rather than a gradient of the wrong shape.
 */
/**
 * Sums `x` down to `target`'s shape (the inverse of broadcasting; used by gradients).
 * `target` is a shape, or the tensor whose shape it is: with a tensor, a dimension that is
 * unknown while staging is resolved when the graph runs (sumToLike).
 */
export function sumTo(x: Tensor, target: Shape | Tensor): Tensor {
  const like = target instanceof Tensor ? target : null;
  const shape = like ? like.shape : (target as Shape);
  if (shapesEqual(x.shape, shape)) return x;
  const off = x.rank - shape.length;
  let ambiguous = false;
  shape.forEach((n, d) => {
    const m = x.shape[d + off]!;
    if (n < 0 && m >= 0 && m !== 1) {
      ambiguous = true;
      if (!like) {
        throw new ShapeError(
          `cannot tell whether a gradient of shape ${fmtShape(x.shape)} must be summed down to ${fmtShape(shape)}: dimension ${d} is unknown (-1, a null ` +
            `inputSignature dimension) and was broadcast against size ${m}, so it may have been 1. Give the inputSignature a concrete size for it`,
          "sumTo",
        );
      }
    }
  });
  if (ambiguous) return applyOp1(sumToLikeOp, [x, like!], {});
  const axes = broadcastReductionAxes(shape, x.shape);
  let s = axes.length > 0 ? sum(x, axes, true) : x;
  if (shapesEqual(s.shape, shape)) return s;
  // The leading (broadcast) axes now have size 1: squeeze them (no static sizes needed).
  if (off > 0) s = squeeze(s, Array.from({ length: off }, (_, i) => i));
  return shapesEqual(s.shape, shape) ? s : reshape(s, shape);
}

/**
 * sumToLike(g, like): sums `g` over the axes along which `like` was broadcast to g's shape,
 * decided when the graph runs (for dims unknown while staging).
 */
export const sumToLikeOp = defineOp({
  name: "sumToLike",
  batch: perExample,
  family: "reduce",
  inputs: ["x", "like"],
  infer: (inputs) => [{ shape: inputs[1]!.shape, dtype: inputs[0]!.dtype }],
  kernels: {
    webgpu: shapeGpu.sumToLike,
    cpu(inputs, _attrs, outs) {
      const [x, like] = inputs as [Tensor, Tensor];
      const axes = broadcastReductionAxes(like.shape, x.shape);
      const out = allocStorage(outs[0]!.dtype, sizeOf(like.shape));
      reduceAxes("sum", x.concrete(), x.shape, axes, out, (n) => allocStorage("float64", n));
      return [out];
    },
  },
  vjp: (ctx, cts) => [broadcastLike(cts[0]!, ctx.inputs[0]!), null],
});

export function checkNumericDtype(op: string, d: DType): void {
  if (d === "bool") throw new DtypeError(`does not accept bool inputs`, op);
}

function checkNotBool(op: string, d: DType): void {
  if (d === "bool") throw new DtypeError(`does not accept bool inputs (cast to a number type first)`, op);
}

declare module "../core/tensor.js" {
  interface Tensor {
    sum(axis?: AxisArg, keepDims?: boolean): Tensor;
    mean(axis?: AxisArg, keepDims?: boolean): Tensor;
    prod(axis?: AxisArg, keepDims?: boolean): Tensor;
    max(axis?: AxisArg, keepDims?: boolean): Tensor;
    min(axis?: AxisArg, keepDims?: boolean): Tensor;
    argMax(axis?: number | null, keepDims?: boolean): Tensor;
    argMin(axis?: number | null, keepDims?: boolean): Tensor;
    logSumExp(axis?: AxisArg, keepDims?: boolean): Tensor;
    variance(axis?: AxisArg, keepDims?: boolean): Tensor;
    any(axis?: AxisArg, keepDims?: boolean): Tensor;
    all(axis?: AxisArg, keepDims?: boolean): Tensor;
    cumsum(axis?: number | null, options?: CumsumOptions): Tensor;
  }
}
installMethods({ sum, mean, prod, max, min, argMax, argMin, logSumExp, variance, any, all, cumsum });
