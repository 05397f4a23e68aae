/** Views and permutations: reshape, broadcastTo (and broadcastLike), transpose, expandDims, squeeze. */
import { ShapeError } from "../../core/errors.js";
import { checkShape, dimsCompatible, fmtShape, hasUnknownDims, shapesEqual, sizeOf, broadcastShapes, type Shape } from "../../core/shape.js";
import { isTracing } from "../../core/context.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { allocStorage } from "../../core/dtype.js";
import { applyOp1, defineOp, type OpDef } from "../registry.js";
import { toTensor } from "../convert.js";
import { installMethods } from "../methods.js";
import { sumTo } from "../reduce.js";
import { fullLike } from "../creation.js";
import { where } from "../where.js";
import { elementwiseLoop } from "../../backends/cpu/elementwise.js";
import { transposeInto } from "../../backends/cpu/transpose.js";
import { fmt, axesOf, alloc, unknownShapeArg, checkSortedAxes, type AxesAttrs } from "./common.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { axesBatch, broadcastBatch, reshapeBatch, transposeBatch } from "../batching.js";

export interface ReshapeAttrs {
  /**
   * Target shape. One entry may be -1 (inferred from the input's size): op functions resolve
   * it when the input's size is known, and keep it when the input has unknown dims (staging
   * with null inputSignature dims), so that infer resolves it against the concrete shape.
   */
  shape: number[];
}

/** Output shape of reshaping `inShape` to `target` (one -1 allowed); validates sizes when they are known. */
function reshapeShape(inShape: Shape, target: unknown): number[] {
  const s = checkShape("reshape", target, true).slice();
  const inferAt = s.indexOf(-1);
  if (hasUnknownDims(inShape)) return s; // re-checked (and the -1 resolved) with the concrete shape at run time
  const size = sizeOf(inShape);
  if (inferAt >= 0) {
    const known = s.reduce((p, d, i) => (i === inferAt ? p : p * d), 1);
    if (known === 0 || size % known !== 0) {
      throw new ShapeError(`cannot reshape a tensor of shape ${fmtShape(inShape)} (size ${size}) to ${fmtShape(s)}`, "reshape");
    }
    s[inferAt] = size / known;
  }
  if (sizeOf(s) !== size) {
    throw new ShapeError(`cannot reshape a tensor of shape ${fmtShape(inShape)} (size ${size}) to ${fmtShape(s)} (size ${sizeOf(s)})`, "reshape");
  }
  return s;
}

export const reshapeOp = defineOp<ReshapeAttrs>({
  name: "reshape",
  batch: reshapeBatch,
  family: "shape",
  view: "reshape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    return [{ shape: reshapeShape(x.shape, attrs.shape), dtype: x.dtype }];
  },
  // Storage is immutable once created, so a reshape shares it.
  kernels: {
    webgpu: shapeGpu.reshape,
    cpu(inputs) {
      return [inputs[0]!.concrete()];
    },
  },
  vjp(ctx, cts) {
    return [reshape(cts[0]!, ctx.inputs[0]!.shape)];
  },
});


/**
 * Reshape; one dimension may be -1 (inferred). While staging with unknown dims, the -1 is
 * inferred when the graph runs, so `reshape(x, [-1, 4])` of an input [?, 2, 2] gives [?, 4].
 */
export function reshape(x: TensorLike, shape: readonly number[]): Tensor {
  const t = toTensor(x, "reshape");
  if (Array.isArray(shape) && isTracing()) {
    // Sizes read from staged tensors may be -1 (unknown): explain the errors they cause.
    const neg = shape.filter((d) => typeof d === "number" && d < 0);
    if (neg.some((d) => d !== -1)) throw unknownShapeArg("reshape", "shape", shape, `has a negative dimension ${neg.find((d) => d !== -1)}`, t.shape);
    if (neg.length > 1) throw unknownShapeArg("reshape", "shape", shape, `has more than one -1`, t.shape);
  }
  if (hasUnknownDims(t.shape)) {
    const s = checkShape("reshape", shape as number[], true).slice();
    if (shapesEqual(s, t.shape)) return t; // at most one -1, in the same place: the same shape
    return applyOp1(reshapeOp, [t], { shape: s });
  }
  const s = reshapeShape(t.shape, shape as number[]);
  if (shapesEqual(s, t.shape)) return t;
  return applyOp1(reshapeOp, [t], { shape: s });
}

export interface BroadcastToAttrs {
  shape: number[];
}

/** Checks that `x` broadcasts to `target` (an unknown dim of x may be 1 or the target's size). */
function checkBroadcastTo(x: Shape, target: Shape): void {
  const off = target.length - x.length;
  const ok = off >= 0 && x.every((d, i) => d === 1 || dimsCompatible(d, target[i + off]!));
  if (!ok) throw new ShapeError(`cannot broadcast shape ${fmtShape(x)} to ${fmtShape(target)}`, "broadcastTo");
}

export const broadcastToOp = defineOp<BroadcastToAttrs>({
  name: "broadcastTo",
  batch: broadcastBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const s = checkShape("broadcastTo", attrs.shape);
    checkBroadcastTo(x.shape, s);
    return [{ shape: s, dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.broadcastTo,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const out = allocStorage(outs[0]!.dtype, sizeOf(attrs.shape));
      elementwiseLoop("a", 1)([x.concrete()], [x.shape], out, attrs.shape);
      return [out];
    },
  },
  vjp(ctx, cts) {
    return [sumTo(cts[0]!, ctx.inputs[0]!)];
  },
});

/**
 * Broadcasts to `shape` (NumPy rules). The target must be known: while staging, a shape read
 * from a tensor with unknown dims is refused with a clear error (use broadcastLike, or a
 * broadcasting op, to broadcast against another tensor).
 */
export function broadcastTo(x: TensorLike, shape: readonly number[]): Tensor {
  const t = toTensor(x, "broadcastTo");
  if (Array.isArray(shape) && isTracing() && shape.some((d) => typeof d === "number" && d < 0)) {
    throw unknownShapeArg("broadcastTo", "target shape", shape, "has an unknown (negative) dimension", t.shape);
  }
  const s = checkShape("broadcastTo", shape as number[]).slice();
  if (shapesEqual(s, t.shape)) return t;
  return applyOp1(broadcastToOp, [t], { shape: s });
}

/**
 * `x` broadcast against the shape of `like` (NumPy rules; the result has the broadcast shape
 * of both). Unlike broadcastTo it needs no static target shape, so it works while staging with
 * unknown dims (gradients use it to broadcast a reduced cotangent back to the input's shape).
 */
export function broadcastLike(x: TensorLike, like: TensorLike): Tensor {
  const t = toTensor(x, "broadcastLike");
  const l = toTensor(like, "broadcastLike");
  if (!hasUnknownDims(l.shape) && !hasUnknownDims(t.shape)) return broadcastTo(t, broadcastShapes("broadcastLike", t.shape, l.shape));
  // where() broadcasts its three operands; selecting t either way leaves its values exact.
  return where(fullLike(l, true, "bool"), t, t);
}

// ---------------------------------------------------------------------------------------------
// transpose

export interface TransposeAttrs {
  /** A permutation of 0..rank-1: output axis i is input axis perm[i]. */
  perm: number[];
}

/** Validates a permutation (negative axes allowed) against `shape`; returns it normalized. */
function normalizePerm(op: string, perm: unknown, shape: Shape): number[] {
  const r = shape.length;
  if (!Array.isArray(perm) || perm.length !== r) {
    const got = Array.isArray(perm) ? `${fmt(perm)} has ${perm.length} entries` : `${String(perm)} is not an array`;
    throw new ShapeError(`perm ${got}, but it must list each of the ${r} axes of the input (shape ${fmtShape(shape)}) exactly once`, op);
  }
  const out = perm.map((a: unknown) => {
    if (typeof a !== "number" || !Number.isInteger(a) || a < -r || a >= r) {
      throw new ShapeError(`perm ${fmt(perm)} has an invalid axis ${String(a)} for an input of shape ${fmtShape(shape)} (valid: ${-r}..${r - 1})`, op);
    }
    return a < 0 ? a + r : a;
  });
  const seen = new Array<boolean>(r).fill(false);
  for (const a of out) {
    if (seen[a]) throw new ShapeError(`perm ${fmt(perm)} repeats axis ${a}; it must be a permutation of the ${r} axes of shape ${fmtShape(shape)}`, op);
    seen[a] = true;
  }
  return out;
}

function inversePerm(perm: readonly number[]): number[] {
  const inv = new Array<number>(perm.length);
  for (let i = 0; i < perm.length; i++) inv[perm[i]!] = i;
  return inv;
}

export const transposeOp = defineOp<TransposeAttrs>({
  name: "transpose",
  batch: transposeBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const perm = normalizePerm("transpose", attrs.perm, x.shape);
    return [{ shape: perm.map((p) => x.shape[p]!), dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.transpose,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const out = alloc(outs[0]!);
      transposeInto(x.concrete(), x.shape, attrs.perm, out);
      return [out];
    },
  },
  vjp(ctx, cts) {
    return [transpose(cts[0]!, inversePerm(ctx.attrs.perm))];
  },
});

/** Permutes axes (default: reversed). Negative axes in `perm` count from the end. */
export function transpose(x: TensorLike, perm?: readonly number[]): Tensor {
  const t = toTensor(x, "transpose");
  const p = perm === undefined ? Array.from({ length: t.rank }, (_, i) => t.rank - 1 - i) : normalizePerm("transpose", perm, t.shape);
  if (p.every((a, i) => a === i)) return t;
  return applyOp1(transposeOp, [t], { perm: p });
}

// ---------------------------------------------------------------------------------------------
// expandDims, squeeze


export const expandDimsOp: OpDef<AxesAttrs> = defineOp<AxesAttrs>({
  name: "expandDims",
  batch: axesBatch,
  family: "shape",
  view: "reshape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const outRank = x.shape.length + attrs.axes.length;
    const axes = checkSortedAxes("expandDims", attrs.axes, x.shape, attrs.axes.length);
    const shape: number[] = [];
    for (let i = 0, k = 0; i < outRank; i++) shape.push(axes.includes(i) ? 1 : x.shape[k++]!);
    return [{ shape, dtype: x.dtype }];
  },
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()], webgpu: shapeGpu.expandDims },
  vjp(ctx, cts) {
    return [applyOp1(squeezeOp, [cts[0]!], { axes: ctx.attrs.axes })];
  },
});

/** Inserts size-1 axes; each axis is a position in the output (-1 = new last axis). */
export function expandDims(x: TensorLike, axis: number | readonly number[]): Tensor {
  const t = toTensor(x, "expandDims");
  if (axis === undefined || axis === null) throw new ShapeError(`an axis is required (got ${String(axis)}) for input shape ${fmtShape(t.shape)}`, "expandDims");
  const list = typeof axis === "number" ? [axis] : axis;
  if (list.length === 0) return t;
  const axes = axesOf("expandDims", list, t.shape, list.length);
  return applyOp1(expandDimsOp, [t], { axes });
}

export const squeezeOp: OpDef<AxesAttrs> = defineOp<AxesAttrs>({
  name: "squeeze",
  batch: axesBatch,
  family: "shape",
  view: "reshape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const axes = checkSortedAxes("squeeze", attrs.axes, x.shape);
    for (const a of axes) {
      // An unknown dim may be 1: it is checked with the concrete shape when the graph runs.
      if (!dimsCompatible(x.shape[a]!, 1)) throw new ShapeError(`cannot squeeze axis ${a} of shape ${fmtShape(x.shape)}: its size is ${x.shape[a]}, not 1`, "squeeze");
    }
    return [{ shape: x.shape.filter((_, i) => !axes.includes(i)), dtype: x.dtype }];
  },
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()], webgpu: shapeGpu.squeeze },
  vjp(ctx, cts) {
    return [applyOp1(expandDimsOp, [cts[0]!], { axes: ctx.attrs.axes })];
  },
});

/** Removes size-1 axes: the given ones (each must have size 1) or, by default, all of them. */
export function squeeze(x: TensorLike, axis?: number | readonly number[] | null): Tensor {
  const t = toTensor(x, "squeeze");
  let axes: number[];
  if (axis === undefined || axis === null) {
    const unknown = t.shape.findIndex((d) => d < 0);
    if (unknown >= 0) {
      throw new ShapeError(
        `squeeze() without axes cannot tell whether axis ${unknown} of shape ${fmtShape(t.shape)} has size 1: while a function is staged with ` +
          `null inputSignature dimensions that size is unknown (-1). Name the axes to squeeze (squeeze(x, axes)), or give the inputSignature a concrete size`,
        "squeeze",
      );
    }
    axes = [];
    t.shape.forEach((d, i) => d === 1 && axes.push(i));
  } else {
    axes = axesOf("squeeze", axis, t.shape);
    for (const a of axes) {
      if (!dimsCompatible(t.shape[a]!, 1)) throw new ShapeError(`cannot squeeze axis ${a} of shape ${fmtShape(t.shape)}: its size is ${t.shape[a]}, not 1`, "squeeze");
    }
  }
  if (axes.length === 0) return t;
  return applyOp1(squeezeOp, [t], { axes });
}

declare module "../../core/tensor.js" {
  interface Tensor {
    reshape(shape: readonly number[]): Tensor;
    broadcastTo(shape: readonly number[]): Tensor;
    transpose(perm?: readonly number[]): Tensor;
    expandDims(axis: number | readonly number[]): Tensor;
    squeeze(axis?: number | readonly number[] | null): Tensor;
  }
}
installMethods({ reshape, broadcastTo, transpose, expandDims, squeeze });
