/**
 * Shape ops: views and rearrangements of data. reshape, broadcastTo, transpose, expandDims,
 * squeeze, concat, stack, unstack, split, slice (NumPy-style strided), gather, gatherND,
 * scatterAdd, pad, tile, flip, clip.
 *
 * All of them work for every dtype (clip: every dtype, bool included). Attributes are plain
 * JSON-able values normalized by the op functions (axes non-negative, perms complete); each
 * op's `infer` re-validates them so that graphs built by other front ends get the same errors.
 * Index tensors (gather, gatherND, scatterAdd) are int32/int64/uint8; negative indices are
 * NOT wrapped: an index outside 0..n-1 is an IndexError naming the index, where it is in the
 * index tensor, and the valid range.
 *
 * Unknown dims (staging with null inputSignature dims, shape entries -1): shape rules accept
 * them, propagate -1 where an output size depends on one, and leave size checks to the run-time
 * re-check with concrete shapes. Attributes keep a symbolic form the rules resolve against the
 * concrete shape (reshape's and split's -1, slice bounds as given, sliceGrad's -1 on whole
 * axes); where that is impossible (squeeze() without axes, split into n pieces or unstack of an
 * unknown axis, broadcastTo an unknown shape) the op function throws a ShapeError saying so.
 */
import { DtypeError, IndexError, ShapeError, ValueError } from "../core/errors.js";
import {
  checkShape,
  dimsCompatible,
  fmtShape,
  hasUnknownDims,
  shapesEqual,
  sizeOf,
  broadcastShapes,
  broadcastShapesN,
  stridesOf,
  type Shape,
} from "../core/shape.js";
import { isTracing } from "../core/context.js";
import { Tensor, makeTensor, type TensorLike } from "../core/tensor.js";
import { allocStorage, isFloat, promoteTypes, type DType, type TypedArray } from "../core/dtype.js";
import { applyOp, applyOp1, defineOp, type OpDef, type TensorType } from "./registry.js";
import { scalarOf, toTensor, toTensorsWeak } from "./convert.js";
import { installMethods } from "./methods.js";
import { sum, sumTo } from "./reduce.js";
import { cast } from "./cast.js";
import { full } from "./fill.js";
import { fullLike } from "./creation.js";
import { where } from "./where.js";
import { mul } from "./binary.js";
import { greater, less, logicalOr } from "./compare.js";
import { elementwiseLoop } from "../backends/cpu/elementwise.js";
import { copyIndexMapped, copyStrided, transposeInto } from "../backends/cpu/transpose.js";
import { gatherAxis, gatherNDInto, scatterAddAxis } from "../backends/cpu/gather.js";

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
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    return [{ shape: reshapeShape(x.shape, attrs.shape), dtype: x.dtype }];
  },
  // Storage is immutable once created, so a reshape shares it.
  kernel(inputs) {
    return [inputs[0]!.concrete()];
  },
  vjp(ctx, cts) {
    return [reshape(cts[0]!, ctx.inputs[0]!.shape)];
  },
});

/** Explains, for a shape argument computed from a staged tensor's shape, why it is not a real size. */
function unknownShapeArg(op: string, what: string, shape: readonly number[], problem: string, inShape?: Shape): ShapeError {
  const input = inShape ? ` (the input has shape ${fmtShape(inShape)})` : "";
  return new ShapeError(
    `${what} ${fmtShape(shape)} ${problem}${input}: while a function is staged with null inputSignature dimensions, unknown sizes read ` +
      `as -1 (tensor.shape[i] is -1, and arithmetic on it is not a size), so ${op} cannot tell the real size. Give the inputSignature ` +
      `a concrete size for that dimension${op === "broadcastTo" ? ", or broadcast against the other tensor itself (broadcastLike(x, y), or an elementwise op)" : op === "reshape" ? ", or use a single -1 for the one dimension to infer" : ""}`,
    op,
  );
}

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
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const s = checkShape("broadcastTo", attrs.shape);
    checkBroadcastTo(x.shape, s);
    return [{ shape: s, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const out = allocStorage(outs[0]!.dtype, sizeOf(attrs.shape));
    elementwiseLoop("a", 1)([x.concrete()], [x.shape], out, attrs.shape);
    return [out];
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
// Helpers

const fmt = (v: unknown): string => JSON.stringify(v);

function prod(s: Shape, from = 0, to = s.length): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= s[i]!;
  return n;
}

/**
 * Normalizes a possibly negative axis of a tensor of `shape` (`extra` = 1 for a new axis, as in
 * stack/expandDims); ShapeError naming the op and the shape when out of range.
 */
function axisOf(op: string, axis: unknown, shape: Shape, extra = 0): number {
  const r = shape.length + extra;
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -r || axis >= r) {
    const what = extra ? `a new axis of an output of rank ${r} (input shape ${fmtShape(shape)})` : `a tensor of shape ${fmtShape(shape)}`;
    throw new ShapeError(`axis ${String(axis)} is out of range for ${what} (valid: ${-r}..${r - 1})`, op);
  }
  return axis < 0 ? axis + r : axis;
}

/** Normalizes an axis or axis list (null/undefined = all axes), sorted; duplicates are errors. */
function axesOf(op: string, axes: unknown, shape: Shape, extra = 0): number[] {
  const r = shape.length + extra;
  if (axes === undefined || axes === null) return Array.from({ length: r }, (_, i) => i);
  if (typeof axes !== "number" && !Array.isArray(axes)) throw new ShapeError(`axes must be an integer or an array of integers, got ${String(axes)}`, op);
  const list: unknown[] = typeof axes === "number" ? [axes] : axes;
  const out = list.map((a) => axisOf(op, a, shape, extra));
  const seen = new Set<number>();
  for (const a of out) {
    if (seen.has(a)) throw new ShapeError(`axis ${a} appears more than once in ${fmt(list)} (shape ${fmtShape(shape)})`, op);
    seen.add(a);
  }
  return out.sort((x, y) => x - y);
}

/**
 * The ShapeError of an op that needs the size of `axis`, unknown (-1) while a function is staged
 * with a null inputSignature dimension there.
 */
function unknownAxisError(op: string, axis: number, shape: Shape, what: string): ShapeError {
  return new ShapeError(
    `${what} depends on the size of axis ${axis} of shape ${fmtShape(shape)}, which is unknown (-1) while the function is staged ` +
      `with a null inputSignature dimension there; give the inputSignature a concrete size for that dimension`,
    op,
  );
}

function alloc(t: TensorType): TypedArray {
  return allocStorage(t.dtype, sizeOf(t.shape));
}

/** Multi-index of flat position `i` in `shape`, formatted "[i, j]". */
function positionOf(i: number, shape: Shape): string {
  const idx = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d]!;
    idx[d] = n > 0 ? i % n : 0;
    i = n > 0 ? Math.floor(i / n) : 0;
  }
  return `[${idx.join(", ")}]`;
}

function checkIndexDtype(op: string, t: TensorType, what = "indices"): void {
  if (t.dtype !== "int32" && t.dtype !== "int64" && t.dtype !== "uint8") {
    throw new DtypeError(`${what} must be an integer tensor (int32, int64 or uint8), got ${t.dtype} with shape ${fmtShape(t.shape)}`, op);
  }
}

/** Throws IndexError for the first index outside 0..n-1. */
function checkIndexRange(op: string, idx: TypedArray, idxShape: Shape, n: number, axis: number, xShape: Shape): void {
  for (let j = 0; j < idx.length; j++) {
    const k = idx[j]!;
    if (k < 0 || k >= n) {
      const valid = n > 0 ? `valid indices are 0..${n - 1}` : `the axis is empty`;
      const neg = k < 0 ? " (negative indices are not wrapped)" : "";
      throw new IndexError(
        `index ${k} at position ${positionOf(j, idxShape)} of indices (shape ${fmtShape(idxShape)}) is out of range for axis ${axis} of size ${n} of a tensor of shape ${fmtShape(xShape)}: ${valid}${neg}`,
        op,
      );
    }
  }
}

/** Converts an index argument: integer tensors as they are, JS integers/arrays to int32. */
export function toIndexTensor(op: string, indices: TensorLike): Tensor {
  if (indices instanceof Tensor) {
    const t = toTensor(indices, op);
    checkIndexDtype(op, t);
    return t;
  }
  if (typeof indices === "boolean") throw new DtypeError(`indices must be integers, got a boolean`, op);
  const f = makeTensor(op, indices, undefined, "float64");
  const data = f.dataSync();
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!Number.isInteger(v)) throw new IndexError(`index ${v} at position ${positionOf(i, f.shape)} is not an integer`, op);
    if (Math.abs(v) >= 2 ** 31) throw new IndexError(`index ${v} at position ${positionOf(i, f.shape)} is out of the int32 range`, op);
  }
  return makeTensor(op, data as Float64Array, f.shape, "int32");
}

/** A null cotangent (zero) for output `i` of a multi-output op, made concrete. */
function filledCts(cts: (Tensor | null)[], outputs: Tensor[]): Tensor[] {
  return cts.map((c, i) => c ?? fullLike(outputs[i]!, 0));
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
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const perm = normalizePerm("transpose", attrs.perm, x.shape);
    return [{ shape: perm.map((p) => x.shape[p]!), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const out = alloc(outs[0]!);
    transposeInto(x.concrete(), x.shape, attrs.perm, out);
    return [out];
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

export interface AxesAttrs {
  /** Sorted, normalized axes. */
  axes: number[];
}

/** Validates an attribute's axis list: normalized, sorted, unique. */
function checkSortedAxes(op: string, axes: unknown, shape: Shape, extra = 0): number[] {
  if (!Array.isArray(axes)) throw new ShapeError(`axes must be an array of integers, got ${String(axes)}`, op);
  const norm = axesOf(op, axes, shape, extra);
  if (!shapesEqual(norm, axes as number[])) throw new ShapeError(`axes attribute ${fmt(axes)} must be sorted and non-negative (shape ${fmtShape(shape)})`, op);
  return norm;
}

export const expandDimsOp: OpDef<AxesAttrs> = defineOp<AxesAttrs>({
  name: "expandDims",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const outRank = x.shape.length + attrs.axes.length;
    const axes = checkSortedAxes("expandDims", attrs.axes, x.shape, attrs.axes.length);
    const shape: number[] = [];
    for (let i = 0, k = 0; i < outRank; i++) shape.push(axes.includes(i) ? 1 : x.shape[k++]!);
    return [{ shape, dtype: x.dtype }];
  },
  kernel: (inputs) => [inputs[0]!.concrete()],
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
  family: "shape",
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
  kernel: (inputs) => [inputs[0]!.concrete()],
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

// ---------------------------------------------------------------------------------------------
// concat, stack, unstack, split

export interface AxisAttrs {
  /** Normalized (non-negative) axis. */
  axis: number;
}

function checkSameDtypes(op: string, inputs: readonly TensorType[]): void {
  for (let i = 1; i < inputs.length; i++) {
    if (inputs[i]!.dtype !== inputs[0]!.dtype) {
      throw new DtypeError(`input ${i} has dtype ${inputs[i]!.dtype} but input 0 has dtype ${inputs[0]!.dtype}; all inputs must have the same dtype`, op);
    }
  }
}

function checkAttrAxis(op: string, axis: unknown, shape: Shape, extra = 0): number {
  const a = axisOf(op, axis, shape, extra);
  if (a !== axis) throw new ShapeError(`axis attribute must be normalized (non-negative), got ${String(axis)}`, op);
  return a;
}

export const concatOp = defineOp<AxisAttrs>({
  name: "concat",
  family: "shape",
  inputs: ["values"],
  variadic: true,
  infer(inputs, attrs) {
    if (inputs.length === 0) throw new ValueError(`needs at least one tensor`, "concat");
    const ref = inputs[0]!.shape;
    if (ref.length === 0) throw new ShapeError(`cannot concatenate scalars (input 0 has shape [])`, "concat");
    const axis = checkAttrAxis("concat", attrs.axis, ref);
    let total = 0;
    const shape = ref.slice();
    for (let i = 0; i < inputs.length; i++) {
      const s = inputs[i]!.shape;
      const ok = s.length === ref.length && s.every((d, k) => k === axis || dimsCompatible(d, shape[k]!));
      if (!ok) {
        throw new ShapeError(
          `input ${i} has shape ${fmtShape(s)} but input 0 has shape ${fmtShape(ref)}: all dimensions except axis ${axis} must match (shapes: ${inputs.map((t) => fmtShape(t.shape)).join(", ")})`,
          "concat",
        );
      }
      // Unknown dims (staging): a known size elsewhere tells the size; an unknown piece makes the total unknown.
      s.forEach((d, k) => k !== axis && shape[k]! < 0 && (shape[k] = d));
      total = total < 0 || s[axis]! < 0 ? -1 : total + s[axis]!;
    }
    checkSameDtypes("concat", inputs);
    shape[axis] = total;
    return [{ shape, dtype: inputs[0]!.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const o = outs[0]!;
    const out = alloc(o);
    const axis = attrs.axis;
    const outer = prod(o.shape, 0, axis);
    const inner = prod(o.shape, axis + 1);
    const row = o.shape[axis]! * inner;
    let off = 0;
    for (const t of inputs) {
      const chunk = t.shape[axis]! * inner;
      copyStrided(t.concrete(), 0, [chunk, 1], out, off, [row, 1], [outer, chunk]);
      off += chunk;
    }
    return [out];
  },
  vjp(ctx, cts) {
    const axis = ctx.attrs.axis;
    const sizes = ctx.inputs.map((t) => t.shape[axis]!);
    if (sizes.filter((n) => n < 0).length > 1) {
      throw unknownAxisError("concat", axis, ctx.inputs.find((t) => t.shape[axis]! < 0)!.shape, "the gradient of concatenating two or more inputs of unknown size along it");
    }
    // An input of unknown size along the axis takes the rest of the cotangent (split's -1).
    return split(cts[0]!, sizes.map((n) => (n < 0 ? -1 : n)), axis);
  },
});

/** Converts a list of tensors for concat/stack: JS numbers weakly typed, dtypes promoted. */
function toTensorList(op: string, tensors: readonly TensorLike[]): Tensor[] {
  if (!Array.isArray(tensors)) throw new ValueError(`expects an array of tensors, got ${tensors === null ? "null" : typeof tensors}`, op);
  if (tensors.length === 0) throw new ValueError(`needs at least one tensor, got an empty list`, op);
  const ts = toTensorsWeak(tensors, op);
  let d = ts[0]!.dtype;
  for (const t of ts) d = promoteTypes(d, t.dtype);
  return ts.map((t) => (t.dtype === d ? t : cast(t, d)));
}

/** Joins tensors along an existing axis. Dtypes are promoted to a common one. */
export function concat(tensors: readonly TensorLike[], axis = 0): Tensor {
  const ts = toTensorList("concat", tensors);
  if (ts[0]!.rank === 0) throw new ShapeError(`cannot concatenate scalars (input 0 has shape [])`, "concat");
  const a = axisOf("concat", axis, ts[0]!.shape);
  if (ts.length === 1) return ts[0]!;
  return applyOp1(concatOp, ts, { axis: a });
}

export const stackOp = defineOp<AxisAttrs>({
  name: "stack",
  family: "shape",
  inputs: ["values"],
  variadic: true,
  infer(inputs, attrs) {
    if (inputs.length === 0) throw new ValueError(`needs at least one tensor`, "stack");
    const ref = inputs[0]!.shape;
    const axis = checkAttrAxis("stack", attrs.axis, ref, 1);
    const shape = ref.slice();
    for (let i = 1; i < inputs.length; i++) {
      const s = inputs[i]!.shape;
      if (s.length !== ref.length || !s.every((d, k) => dimsCompatible(d, shape[k]!))) {
        throw new ShapeError(
          `input ${i} has shape ${fmtShape(inputs[i]!.shape)} but input 0 has shape ${fmtShape(ref)}; stacked tensors must all have the same shape`,
          "stack",
        );
      }
      s.forEach((d, k) => shape[k]! < 0 && (shape[k] = d));
    }
    checkSameDtypes("stack", inputs);
    shape.splice(axis, 0, inputs.length);
    return [{ shape, dtype: inputs[0]!.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const out = alloc(outs[0]!);
    const s = inputs[0]!.shape;
    const outer = prod(s, 0, attrs.axis);
    const inner = prod(s, attrs.axis);
    const count = inputs.length;
    for (let i = 0; i < count; i++) copyStrided(inputs[i]!.concrete(), 0, [inner, 1], out, i * inner, [count * inner, 1], [outer, inner]);
    return [out];
  },
  vjp(ctx, cts) {
    return unstack(cts[0]!, ctx.attrs.axis);
  },
});

/** Joins same-shaped tensors along a new axis (in 0..rank). Dtypes are promoted. */
export function stack(tensors: readonly TensorLike[], axis = 0): Tensor {
  const ts = toTensorList("stack", tensors);
  const a = axisOf("stack", axis, ts[0]!.shape, 1);
  return applyOp1(stackOp, ts, { axis: a });
}

export const unstackOp = defineOp<AxisAttrs>({
  name: "unstack",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const axis = checkAttrAxis("unstack", attrs.axis, x.shape);
    if (x.shape[axis]! < 0) throw unknownAxisError("unstack", axis, x.shape, "the number of outputs");
    const shape = x.shape.filter((_, i) => i !== axis);
    return Array.from({ length: x.shape[axis]! }, () => ({ shape, dtype: x.dtype }));
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const src = x.concrete();
    const n = x.shape[attrs.axis]!;
    const outer = prod(x.shape, 0, attrs.axis);
    const inner = prod(x.shape, attrs.axis + 1);
    return outs.map((o, k) => {
      const out = alloc(o);
      copyStrided(src, k * inner, [n * inner, 1], out, 0, [inner, 1], [outer, inner]);
      return out;
    });
  },
  vjp(ctx, cts) {
    if (cts.every((c) => c === null)) return [null];
    return [stack(filledCts(cts, ctx.outputs), ctx.attrs.axis)];
  },
});

/** Splits along `axis` into shape[axis] tensors with that axis removed. */
export function unstack(x: TensorLike, axis = 0): Tensor[] {
  const t = toTensor(x, "unstack");
  if (t.rank === 0) throw new ShapeError(`cannot unstack a scalar (shape [])`, "unstack");
  const a = axisOf("unstack", axis, t.shape);
  if (t.shape[a]! < 0) throw unknownAxisError("unstack", a, t.shape, "the number of outputs");
  return applyOp(unstackOp, [t], { axis: a });
}

export interface SplitAttrs {
  /**
   * Sizes of the pieces along `axis` (non-negative, summing to shape[axis]). One size may be
   * -1 (the rest of the axis): op functions resolve it when the axis size is known and keep it
   * when it is unknown (staging), so that infer resolves it against the concrete shape.
   */
  sizes: number[];
  axis: number;
}

export const splitOp = defineOp<SplitAttrs>({
  name: "split",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const axis = checkAttrAxis("split", attrs.axis, x.shape);
    const sizes = splitSizes(attrs.sizes, attrs.sizes, x.shape, axis);
    return sizes.map((n) => {
      const shape = x.shape.slice();
      shape[axis] = n;
      return { shape, dtype: x.dtype };
    });
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const src = x.concrete();
    const outer = prod(x.shape, 0, attrs.axis);
    const inner = prod(x.shape, attrs.axis + 1);
    const row = x.shape[attrs.axis]! * inner;
    let off = 0;
    return outs.map((o) => {
      const chunk = o.shape[attrs.axis]! * inner;
      // Along the leading axes each piece is one contiguous run.
      const out = outer === 1 ? src.slice(off, off + chunk) : alloc(o);
      if (outer !== 1) copyStrided(src, off, [row, 1], out, 0, [chunk, 1], [outer, chunk]);
      off += chunk;
      return out;
    });
  },
  vjp(ctx, cts) {
    if (cts.every((c) => c === null)) return [null];
    return [concat(filledCts(cts, ctx.outputs), ctx.attrs.axis)];
  },
});

/**
 * Validates split sizes (non-negative integers, at most one -1 = the rest) against axis `axis`
 * of `shape` and returns them with the -1 resolved; an unknown axis size (staging) leaves the
 * -1 unknown and skips the sum check (done with the concrete shape when the graph runs).
 */
function splitSizes(sizes: unknown, shown: unknown, shape: Shape, axis: number): number[] {
  if (!Array.isArray(sizes)) throw new ShapeError(`expects a number of pieces or an array of sizes, got ${String(shown)}`, "split");
  let inferAt = -1;
  for (let i = 0; i < sizes.length; i++) {
    const n: unknown = sizes[i];
    if (typeof n !== "number" || !Number.isInteger(n) || n < -1) {
      throw new ShapeError(`sizes ${fmt(shown)} has an invalid size ${String(n)} (sizes are non-negative integers, or one -1)`, "split");
    }
    if (n === -1) {
      if (inferAt >= 0) throw new ShapeError(`sizes ${fmt(shown)} has more than one -1`, "split");
      inferAt = i;
    }
  }
  const out = (sizes as number[]).slice();
  const dim = shape[axis]!;
  if (dim < 0) return out;
  const known = out.reduce((p, n, i) => (i === inferAt ? p : p + n), 0);
  if (inferAt >= 0) {
    if (known > dim) {
      throw new ShapeError(`sizes ${fmt(shown)} already sum to ${known}, more than axis ${axis} of shape ${fmtShape(shape)} (size ${dim})`, "split");
    }
    out[inferAt] = dim - known;
  } else if (known !== dim) {
    throw new ShapeError(`sizes ${fmt(shown)} sum to ${known}, but axis ${axis} of shape ${fmtShape(shape)} has size ${dim}`, "split");
  }
  return out;
}

/**
 * Splits along `axis` into `n` equal pieces (n must divide the dimension) or into pieces of the
 * given sizes (one size may be -1: the rest of the dimension). While staging with an unknown
 * size along `axis`, split by sizes (with one -1) works; `n` equal pieces needs the size.
 */
export function split(x: TensorLike, numOrSizes: number | readonly number[], axis = 0): Tensor[] {
  const t = toTensor(x, "split");
  if (t.rank === 0) throw new ShapeError(`cannot split a scalar (shape [])`, "split");
  const a = axisOf("split", axis, t.shape);
  const dim = t.shape[a]!;
  let sizes: number[];
  if (typeof numOrSizes === "number") {
    const n = numOrSizes;
    if (!Number.isInteger(n) || n < 1) throw new ShapeError(`the number of pieces must be a positive integer, got ${n}`, "split");
    if (dim < 0 && n > 1) throw unknownAxisError("split", a, t.shape, `splitting into ${n} equal pieces`);
    if (dim % n !== 0) throw new ShapeError(`cannot split axis ${a} of shape ${fmtShape(t.shape)} (size ${dim}) into ${n} equal pieces`, "split");
    sizes = new Array<number>(n).fill(dim / n);
  } else {
    sizes = splitSizes(numOrSizes, numOrSizes, t.shape, a);
  }
  if (sizes.length === 1 && (dim >= 0 || sizes[0] === -1)) return [t];
  return applyOp(splitOp, [t], { sizes, axis: a });
}

// ---------------------------------------------------------------------------------------------
// slice (strided, NumPy/Python semantics) and its gradient

export interface SliceAttrs {
  /** Per axis (length = rank): Python-style start (negative counts from the end; null = default). */
  begin: (number | null)[];
  /** Per axis: Python-style stop (exclusive; null = to the end in the direction of the stride). */
  end: (number | null)[];
  /** Per axis: non-zero step. */
  strides: number[];
}

interface AxisRange {
  start: number;
  step: number;
  len: number;
}

/** Python's slice.indices(n): clamps start/stop like a[start:stop:step]. */
function sliceRange(b: number | null, e: number | null, step: number, n: number): AxisRange {
  // An unknown axis size (staging): the clamped length is unknown until the graph runs.
  if (n < 0) return { start: 0, step, len: -1 };
  let start: number;
  let stop: number;
  if (step > 0) {
    start = b === null ? 0 : b < 0 ? Math.max(0, b + n) : Math.min(b, n);
    stop = e === null ? n : e < 0 ? Math.max(0, e + n) : Math.min(e, n);
  } else {
    start = b === null ? n - 1 : b < 0 ? Math.max(-1, b + n) : Math.min(b, n - 1);
    stop = e === null ? -1 : e < 0 ? Math.max(-1, e + n) : Math.min(e, n - 1);
  }
  const len = Math.max(0, Math.ceil((stop - start) / step));
  return { start, step, len };
}

/** Whether begin:end:step takes every element of any axis (in order, or reversed). */
function isWholeAxis(b: number | null, e: number | null, step: number): boolean {
  return e === null && ((step === 1 && (b === null || b === 0)) || (step === -1 && (b === null || b === -1)));
}

function sliceRanges(op: string, shape: Shape, a: SliceAttrs): AxisRange[] {
  const r = shape.length;
  if (!Array.isArray(a.begin) || !Array.isArray(a.end) || !Array.isArray(a.strides) || a.begin.length !== r || a.end.length !== r || a.strides.length !== r) {
    throw new ShapeError(`begin ${fmt(a.begin)}, end ${fmt(a.end)} and strides ${fmt(a.strides)} must each have one entry per axis of shape ${fmtShape(shape)}`, op);
  }
  return shape.map((n, d) => {
    const b = a.begin[d]!;
    const e = a.end[d]!;
    const s = a.strides[d]!;
    if ((b !== null && !Number.isInteger(b)) || (e !== null && !Number.isInteger(e))) {
      throw new ShapeError(`begin/end for axis ${d} must be integers or null, got ${String(b)} and ${String(e)}`, op);
    }
    if (!Number.isInteger(s) || s === 0) throw new ValueError(`stride for axis ${d} must be a non-zero integer, got ${String(s)}`, op);
    return sliceRange(b, e, s, n);
  });
}

export const sliceOp: OpDef<SliceAttrs> = defineOp<SliceAttrs>({
  name: "slice",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    return [{ shape: sliceRanges("slice", x.shape, attrs).map((r) => r.len), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const o = outs[0]!;
    const out = alloc(o);
    const ranges = sliceRanges("slice", x.shape, attrs);
    const st = stridesOf(x.shape);
    let off = 0;
    const strides = ranges.map((r, d) => {
      off += r.start * st[d]!;
      return r.step * st[d]!;
    });
    copyStrided(x.concrete(), off, strides, out, 0, stridesOf(o.shape), o.shape);
    return [out];
  },
  vjp(ctx, cts) {
    const { begin, end, strides } = ctx.attrs;
    const shape = ctx.inputs[0]!.shape;
    // An unknown dim (staging) stays -1 in sliceGrad's shape, which it can resolve from dy only
    // where the slice takes the whole axis.
    shape.forEach((n, d) => {
      if (n < 0 && !isWholeAxis(begin[d]!, end[d]!, strides[d]!)) throw unknownAxisError("slice", d, shape, "the gradient of slicing part of an axis");
    });
    return [applyOp1(sliceGradOp, [cts[0]!], { shape: shape.slice(), begin, end, strides })];
  },
});

export interface SliceGradAttrs extends SliceAttrs {
  /**
   * Shape of the sliced tensor (the output's shape). An entry may be -1 (unknown while staging)
   * on an axis the slice takes whole, where the size is dy's.
   */
  shape: number[];
}

/** sliceGrad's output shape: attrs.shape with -1 entries (whole axes only) taken from dy. */
function sliceGradShape(attrs: SliceGradAttrs, dy: Shape): number[] {
  const a = attrs.shape;
  if (!Array.isArray(a) || !a.some((n) => n === -1)) return checkShape("sliceGrad", a);
  if (a.length !== dy.length) throw new ShapeError(`shape ${fmt(a)} must have one entry per axis of dy (shape ${fmtShape(dy)})`, "sliceGrad");
  return a.map((n, d) => {
    if (n !== -1) return checkShape("sliceGrad", [n])[0]!;
    if (!isWholeAxis(attrs.begin[d] ?? null, attrs.end[d] ?? null, attrs.strides[d]!)) {
      throw new ShapeError(`shape ${fmt(a)} has an unknown size (-1) for axis ${d}, which the slice does not take whole, so it cannot be told from dy (shape ${fmtShape(dy)})`, "sliceGrad");
    }
    return dy[d]!;
  });
}

/** The transpose of slice: zeros of `shape` with `dy` written at the sliced positions. */
export const sliceGradOp: OpDef<SliceGradAttrs> = defineOp<SliceGradAttrs>({
  name: "sliceGrad",
  family: "shape",
  inputs: ["dy"],
  infer(inputs, attrs) {
    const dy = inputs[0]!;
    const shape = sliceGradShape(attrs, dy.shape);
    const want = sliceRanges("sliceGrad", shape, attrs).map((r) => r.len);
    if (want.length !== dy.shape.length || !want.every((n, d) => dimsCompatible(n, dy.shape[d]!))) {
      throw new ShapeError(`dy has shape ${fmtShape(dy.shape)} but slicing ${fmtShape(shape)} gives ${fmtShape(want)}`, "sliceGrad");
    }
    return [{ shape: shape.slice(), dtype: dy.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const dy = inputs[0]!;
    const out = alloc(outs[0]!);
    const shape = outs[0]!.shape;
    const ranges = sliceRanges("sliceGrad", shape, attrs);
    const st = stridesOf(shape);
    let off = 0;
    const strides = ranges.map((r, d) => {
      off += r.start * st[d]!;
      return r.step * st[d]!;
    });
    copyStrided(dy.concrete(), 0, stridesOf(dy.shape), out, off, strides, dy.shape);
    return [out];
  },
  vjp(ctx, cts) {
    const { begin, end, strides } = ctx.attrs;
    return [applyOp1(sliceOp, [cts[0]!], { begin, end, strides })];
  },
});

type SliceBound = number | null | undefined;

function checkBoundList(what: string, v: unknown, rank: number, shape: Shape): SliceBound[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new ShapeError(`${what} must be an array, got ${String(v)}`, "slice");
  if (v.length > rank) throw new ShapeError(`${what} ${fmt(v)} has ${v.length} entries but the input has shape ${fmtShape(shape)} (rank ${rank})`, "slice");
  for (const b of v) {
    if (b !== null && b !== undefined && (typeof b !== "number" || !Number.isInteger(b))) {
      throw new ShapeError(`${what} ${fmt(v)} has a non-integer entry ${String(b)}`, "slice");
    }
  }
  return v as SliceBound[];
}

/** Parses one "start:stop:step" / "index" / "..." item of a slice string. */
function parseSliceString(spec: string, shape: Shape): { begin: SliceBound[]; end: SliceBound[]; strides: number[]; drop: number[] } {
  const parts = spec.trim() === "" ? [] : spec.split(",").map((p) => p.trim());
  const ell = parts.filter((p) => p === "...").length;
  if (ell > 1) throw new ShapeError(`slice string ${fmt(spec)} has more than one "..."`, "slice");
  const explicit = parts.length - ell;
  if (explicit > shape.length) throw new ShapeError(`slice string ${fmt(spec)} indexes ${explicit} axes but the input has shape ${fmtShape(shape)}`, "slice");
  const begin: SliceBound[] = [];
  const end: SliceBound[] = [];
  const strides: number[] = [];
  const drop: number[] = [];
  const num = (s: string, item: string): number | null => {
    const t = s.trim();
    if (t === "") return null;
    if (!/^[+-]?\d+$/.test(t)) throw new ShapeError(`slice string ${fmt(spec)}: ${fmt(item)} is not of the form start:stop:step, an integer, or ...`, "slice");
    return Number(t);
  };
  let axis = 0;
  for (const p of parts) {
    if (p === "...") {
      const skip = shape.length - explicit;
      for (let k = 0; k < skip; k++, axis++) {
        begin.push(null);
        end.push(null);
        strides.push(1);
      }
      continue;
    }
    const f = p.split(":");
    if (f.length === 1) {
      const i = num(f[0]!, p);
      if (i === null) throw new ShapeError(`slice string ${fmt(spec)} has an empty item`, "slice");
      const n = shape[axis]!;
      if (n < 0) {
        // Unknown size (staging): keep the index Python-style (i:i+1, or -1: to the end); an
        // index out of range leaves an empty axis, which the squeeze rejects when the graph runs.
        begin.push(i);
        end.push(i === -1 ? null : i + 1);
      } else {
        if (i < -n || i >= n) throw new IndexError(`index ${i} is out of range for axis ${axis} of shape ${fmtShape(shape)} (valid: ${-n}..${n - 1})`, "slice");
        const k = i < 0 ? i + n : i;
        begin.push(k);
        end.push(k + 1);
      }
      strides.push(1);
      drop.push(axis);
    } else if (f.length <= 3) {
      begin.push(num(f[0]!, p));
      end.push(num(f[1]!, p));
      const s = f.length === 3 ? num(f[2]!, p) : null;
      strides.push(s ?? 1);
    } else {
      throw new ShapeError(`slice string ${fmt(spec)}: ${fmt(p)} has too many colons`, "slice");
    }
    axis++;
  }
  return { begin, end, strides, drop };
}

/**
 * NumPy/Python strided slicing, per axis `x[begin:end:stride]`:
 * - `slice(x, begin, end?, strides?)`: arrays of at most rank entries (missing trailing axes and
 *   null/undefined entries take the defaults: whole axis, stride 1); negative begin/end count from
 *   the end, out-of-range bounds are clamped as Python does, negative strides walk backwards;
 * - `slice(x, "1:3, ::-1, ...")`: the same as a string, where a bare integer selects one index
 *   and removes that axis, and "..." stands for the axes not mentioned.
 */
export function slice(x: TensorLike, begin: string | readonly SliceBound[], end?: readonly SliceBound[] | null, strides?: readonly SliceBound[] | null): Tensor {
  const t = toTensor(x, "slice");
  const r = t.rank;
  let b: SliceBound[];
  let e: SliceBound[];
  let s: SliceBound[];
  let drop: number[] = [];
  if (typeof begin === "string") {
    if (end !== undefined && end !== null) throw new ValueError(`a slice string takes no end/strides arguments`, "slice");
    ({ begin: b, end: e, strides: s, drop } = parseSliceString(begin, t.shape));
  } else {
    b = checkBoundList("begin", begin, r, t.shape);
    e = checkBoundList("end", end, r, t.shape);
    s = checkBoundList("strides", strides, r, t.shape);
  }
  const attrs: SliceAttrs = { begin: [], end: [], strides: [] };
  for (let d = 0; d < r; d++) {
    attrs.begin.push(b[d] ?? null);
    attrs.end.push(e[d] ?? null);
    const st = s[d] ?? 1;
    if (st === 0) throw new ValueError(`stride for axis ${d} must be non-zero (strides ${fmt(s)})`, "slice");
    attrs.strides.push(st);
  }
  const ranges = sliceRanges("slice", t.shape, attrs);
  const whole = ranges.every((g, d) =>
    t.shape[d]! < 0 ? g.step === 1 && (attrs.begin[d] === null || attrs.begin[d] === 0) && attrs.end[d] === null : g.step === 1 && g.start === 0 && g.len === t.shape[d],
  );
  const y = whole ? t : applyOp1(sliceOp, [t], attrs);
  return drop.length > 0 ? applyOp1(squeezeOp, [y], { axes: drop }) : y;
}

// ---------------------------------------------------------------------------------------------
// gather, gatherND, scatterAdd

export const gatherOp = defineOp<AxisAttrs>({
  name: "gather",
  family: "shape",
  inputs: ["x", "indices"],
  infer(inputs, attrs) {
    const [x, idx] = inputs as [TensorType, TensorType];
    checkIndexDtype("gather", idx);
    if (x.shape.length === 0) throw new ShapeError(`cannot gather from a scalar (x has shape [])`, "gather");
    const axis = checkAttrAxis("gather", attrs.axis, x.shape);
    return [{ shape: [...x.shape.slice(0, axis), ...idx.shape, ...x.shape.slice(axis + 1)], dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, idx] = inputs as [Tensor, Tensor];
    const axis = attrs.axis;
    const n = x.shape[axis]!;
    const id = idx.concrete();
    checkIndexRange("gather", id, idx.shape, n, axis, x.shape);
    const out = alloc(outs[0]!);
    gatherAxis(x.concrete(), prod(x.shape, 0, axis), n, prod(x.shape, axis + 1), id, out);
    return [out];
  },
  vjp(ctx, cts) {
    const [x, idx] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    return [scatterAdd(fullLike(x, 0, dy.dtype), idx, dy, ctx.attrs.axis), null];
  },
});

/**
 * Takes entries of `x` along `axis` at integer `indices` (any shape): the result has shape
 * x.shape[:axis] + indices.shape + x.shape[axis+1:]. Indices must lie in 0..n-1 (not wrapped).
 */
export function gather(x: TensorLike, indices: TensorLike, axis = 0): Tensor {
  const t = toTensor(x, "gather");
  const idx = toIndexTensor("gather", indices);
  if (t.rank === 0) throw new ShapeError(`cannot gather from a scalar (x has shape [])`, "gather");
  return applyOp1(gatherOp, [t, idx], { axis: axisOf("gather", axis, t.shape) });
}

export const gatherNDOp = defineOp<Record<string, never>>({
  name: "gatherND",
  family: "shape",
  inputs: ["x", "indices"],
  infer(inputs) {
    const [x, idx] = inputs as [TensorType, TensorType];
    checkIndexDtype("gatherND", idx);
    const k = idx.shape[idx.shape.length - 1];
    if (idx.shape.length > 0 && k! < 0) throw unknownAxisError("gatherND", idx.shape.length - 1, idx.shape, "the rank of the result (indices have shape [..., k])");
    if (idx.shape.length === 0 || k! > x.shape.length || k === 0) {
      throw new ShapeError(
        `indices must have shape [..., k] with 1 <= k <= rank of x; got indices ${fmtShape(idx.shape)} for x ${fmtShape(x.shape)}`,
        "gatherND",
      );
    }
    return [{ shape: [...idx.shape.slice(0, -1), ...x.shape.slice(k)], dtype: x.dtype }];
  },
  kernel(inputs, _attrs, outs) {
    const [x, idx] = inputs as [Tensor, Tensor];
    const k = idx.shape[idx.rank - 1]!;
    const id = idx.concrete();
    const count = id.length / k;
    for (let i = 0; i < count; i++) {
      for (let d = 0; d < k; d++) {
        const v = id[i * k + d]!;
        const n = x.shape[d]!;
        if (v < 0 || v >= n) {
          const tuple = Array.from(id.subarray(i * k, i * k + k));
          throw new IndexError(
            `index tuple ${fmt(tuple)} at position ${positionOf(i, idx.shape.slice(0, -1))} of indices (shape ${fmtShape(idx.shape)}) is out of range: component ${d} is ${v} but axis ${d} of x (shape ${fmtShape(x.shape)}) has valid indices ${n > 0 ? `0..${n - 1}` : "none (it is empty)"}`,
            "gatherND",
          );
        }
      }
    }
    const out = alloc(outs[0]!);
    gatherNDInto(x.concrete(), stridesOf(x.shape).slice(0, k), prod(x.shape, k), id, count, out);
    return [out];
  },
  vjp(ctx, cts) {
    const [x, idx] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    const k = idx.shape[idx.rank - 1]!;
    const lead = x.shape.slice(0, k);
    const rest = x.shape.slice(k);
    // Staging with unknown dims: the strides need lead[1:]; the flat zeros need rest (or lead) known.
    const bad = lead.findIndex((n, d) => n < 0 && (d > 0 || hasUnknownDims(rest)));
    if (bad >= 0) throw unknownAxisError("gatherND", bad, x.shape, "the gradient of gatherND (a scatter into x viewed as [prod(x.shape[:k]), ...x.shape[k:]])");
    // Row-major linear index into x viewed as [prod(lead), ...rest], then a scatter-add.
    const it = idx.dtype === "int64" ? idx : cast(idx, "int32");
    const st = makeTensor("gatherND", stridesOf(lead), [k], it.dtype);
    const lin = sum(mul(it, st), -1);
    const zeros = hasUnknownDims(x.shape)
      ? reshape(fullLike(x, 0, dy.dtype), [hasUnknownDims(lead) ? -1 : prod(lead), ...rest])
      : full([prod(lead), ...rest], 0, dy.dtype);
    const g = scatterAdd(zeros, lin, dy, 0);
    return [reshape(g, x.shape), null];
  },
});

/**
 * Gathers slices of `x` addressed by the last axis of `indices` (shape [..., k], k <= rank):
 * out[i...] = x[indices[i..., 0], ..., indices[i..., k-1], ...]; the result has shape
 * indices.shape[:-1] + x.shape[k:].
 */
export function gatherND(x: TensorLike, indices: TensorLike): Tensor {
  const t = toTensor(x, "gatherND");
  const idx = toIndexTensor("gatherND", indices);
  return applyOp1(gatherNDOp, [t, idx], {});
}

function scatterUpdatesShape(x: Shape, idx: Shape, axis: number): number[] {
  return [...x.slice(0, axis), ...idx, ...x.slice(axis + 1)];
}

export const scatterAddOp = defineOp<AxisAttrs>({
  name: "scatterAdd",
  family: "shape",
  inputs: ["x", "indices", "updates"],
  infer(inputs, attrs) {
    const [x, idx, upd] = inputs as [TensorType, TensorType, TensorType];
    checkIndexDtype("scatterAdd", idx);
    if (x.shape.length === 0) throw new ShapeError(`cannot scatter into a scalar (x has shape [])`, "scatterAdd");
    const axis = checkAttrAxis("scatterAdd", attrs.axis, x.shape);
    if (upd.dtype !== x.dtype) throw new DtypeError(`updates have dtype ${upd.dtype} but x has dtype ${x.dtype}`, "scatterAdd");
    const want = scatterUpdatesShape(x.shape, idx.shape, axis);
    if (upd.shape.length !== want.length || !upd.shape.every((n, d) => dimsCompatible(n, want[d]!))) {
      throw new ShapeError(
        `updates have shape ${fmtShape(upd.shape)} but x ${fmtShape(x.shape)} with indices ${fmtShape(idx.shape)} along axis ${axis} needs updates of shape ${fmtShape(want)}`,
        "scatterAdd",
      );
    }
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, idx, upd] = inputs as [Tensor, Tensor, Tensor];
    const axis = attrs.axis;
    const n = x.shape[axis]!;
    const id = idx.concrete();
    checkIndexRange("scatterAdd", id, idx.shape, n, axis, x.shape);
    const out = x.concrete().slice();
    scatterAddAxis(out, prod(x.shape, 0, axis), n, prod(x.shape, axis + 1), id, upd.concrete());
    if (outs[0]!.dtype === "bool") for (let i = 0; i < out.length; i++) out[i] = out[i] ? 1 : 0;
    return [out];
  },
  vjp(ctx, cts) {
    const idx = ctx.inputs[1]!;
    const dy = cts[0]!;
    return [dy, null, gather(dy, idx, ctx.attrs.axis)];
  },
});

/**
 * A copy of `x` with `updates` added at `indices` along `axis` (duplicates accumulate; for bool,
 * a logical or). `updates` has the shape gather(x, indices, axis) would have, or broadcasts to
 * it. Dtypes are promoted as for add.
 */
export function scatterAdd(x: TensorLike, indices: TensorLike, updates: TensorLike, axis = 0): Tensor {
  let [t, u] = toTensorsWeak([x, updates], "scatterAdd") as [Tensor, Tensor];
  const idx = toIndexTensor("scatterAdd", indices);
  if (t.rank === 0) throw new ShapeError(`cannot scatter into a scalar (x has shape [])`, "scatterAdd");
  const a = axisOf("scatterAdd", axis, t.shape);
  const d = promoteTypes(t.dtype, u.dtype);
  if (t.dtype !== d) t = cast(t, d);
  if (u.dtype !== d) u = cast(u, d);
  const want = scatterUpdatesShape(t.shape, idx.shape, a);
  if (!shapesEqual(u.shape, want)) {
    // An unknown dim of updates (staging) may be 1 or the wanted size.
    const off = want.length - u.rank;
    const ok = off >= 0 && u.shape.every((n, d) => n === 1 || dimsCompatible(n, want[d + off]!));
    if (!ok) {
      throw new ShapeError(
        `updates have shape ${fmtShape(u.shape)} but x ${fmtShape(t.shape)} with indices ${fmtShape(idx.shape)} along axis ${a} needs updates of shape ${fmtShape(want)} (or broadcastable to it)`,
        "scatterAdd",
      );
    }
    // With unknown dims the wanted shape is that of gather(x, indices, axis).
    u = hasUnknownDims(want) || hasUnknownDims(u.shape) ? broadcastLike(u, gather(t, idx, a)) : broadcastTo(u, want);
  }
  return applyOp1(scatterAddOp, [t, idx, u], { axis: a });
}

// ---------------------------------------------------------------------------------------------
// pad

export type PadMode = "constant" | "reflect" | "symmetric" | "edge";
const PAD_MODES: readonly PadMode[] = ["constant", "reflect", "symmetric", "edge"];

export interface PadAttrs {
  /** [before, after] per axis, non-negative integers. */
  paddings: [number, number][];
  mode: PadMode;
  /** Fill value for mode "constant". */
  value: number;
}

function checkPaddings(op: string, paddings: unknown, shape: Shape): [number, number][] {
  const r = shape.length;
  const bad = (why: string): never => {
    throw new ShapeError(`paddings ${fmt(paddings)} ${why} for an input of shape ${fmtShape(shape)}`, op);
  };
  if (!Array.isArray(paddings)) bad("must be an array of [before, after] pairs");
  const p = paddings as unknown[];
  if (p.length !== r) bad(`has ${p.length} entries but needs one [before, after] pair per axis (${r})`);
  return p.map((pair, d) => {
    if (!Array.isArray(pair) || pair.length !== 2) bad(`entry ${d} is not a [before, after] pair`);
    const [b, a] = pair as unknown[];
    for (const v of [b, a]) {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) bad(`entry ${d} has ${String(v)}; paddings must be non-negative integers`);
    }
    return [b as number, a as number];
  });
}

/** Source index for output position i (in -before..n+after-1 shifted by before) in a non-constant mode. */
function padIndexMap(mode: PadMode, n: number, before: number, after: number): Int32Array {
  const m = new Int32Array(n + before + after);
  for (let o = 0; o < m.length; o++) {
    const i = o - before;
    let j: number;
    if (i >= 0 && i < n) j = i;
    else if (mode === "edge" || n === 1) j = i < 0 ? 0 : n - 1;
    else if (mode === "reflect") {
      const p = 2 * (n - 1);
      j = ((i % p) + p) % p;
      if (j >= n) j = p - j;
    } else {
      const p = 2 * n;
      j = ((i % p) + p) % p;
      if (j >= n) j = p - 1 - j;
    }
    m[o] = j;
  }
  return m;
}

export const padOp = defineOp<PadAttrs>({
  name: "pad",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (!PAD_MODES.includes(attrs.mode)) throw new ValueError(`unknown mode ${fmt(attrs.mode)} (expected one of ${PAD_MODES.join(", ")})`, "pad");
    const p = checkPaddings("pad", attrs.paddings, x.shape);
    if (attrs.mode !== "constant") {
      x.shape.forEach((n, d) => {
        if (n === 0 && p[d]![0] + p[d]![1] > 0) {
          throw new ShapeError(`cannot pad the empty axis ${d} of shape ${fmtShape(x.shape)} in mode ${fmt(attrs.mode)}`, "pad");
        }
      });
    }
    return [{ shape: x.shape.map((n, d) => (n < 0 ? -1 : n + p[d]![0] + p[d]![1])), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const o = outs[0]!;
    const out = alloc(o);
    if (attrs.mode === "constant") {
      const v = o.dtype === "bool" ? (attrs.value ? 1 : 0) : attrs.value;
      if (v !== 0) out.fill(v);
      const ost = stridesOf(o.shape);
      let off = 0;
      attrs.paddings.forEach(([b], d) => (off += b * ost[d]!));
      copyStrided(x.concrete(), 0, stridesOf(x.shape), out, off, ost, x.shape);
    } else {
      const maps = x.shape.map((n, d) => padIndexMap(attrs.mode, n, attrs.paddings[d]![0], attrs.paddings[d]![1]));
      copyIndexMapped(x.concrete(), x.shape, maps, out);
    }
    return [out];
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    const { paddings, mode } = ctx.attrs;
    let g = cts[0]!;
    if (mode === "constant") {
      const begin = paddings.map(([b]) => b);
      // An unknown size (staging) ends `after` elements before the end instead.
      const end = paddings.map(([b, a], d) => (x.shape[d]! >= 0 ? b + x.shape[d]! : a > 0 ? -a : null));
      return [applyOp1(sliceOp, [g], { begin, end, strides: begin.map(() => 1) })];
    }
    // Non-constant padding is a gather along each axis; its transpose a scatter-add per axis.
    for (let d = x.rank - 1; d >= 0; d--) {
      const [b, a] = paddings[d]!;
      if (b === 0 && a === 0) continue;
      const n = x.shape[d]!;
      if (n < 0) throw unknownAxisError("pad", d, x.shape, `the gradient of padding in mode ${fmt(mode)}`);
      const map = makeTensor("pad", padIndexMap(mode, n, b, a), undefined, "int32");
      const shape = g.shape.slice();
      shape[d] = n;
      let zeros: Tensor;
      if (hasUnknownDims(shape)) {
        // Zeros shaped like the unpadded part of g along axis d (other axes may be unknown).
        const lo = g.shape.map(() => null as number | null);
        const hi = lo.slice();
        lo[d] = b;
        hi[d] = b + n;
        zeros = fullLike(applyOp1(sliceOp, [g], { begin: lo, end: hi, strides: lo.map(() => 1) }), 0);
      } else zeros = full(shape, 0, g.dtype);
      g = scatterAdd(zeros, map, g, d);
    }
    return [g];
  },
});

/**
 * Pads with [before, after] per axis. mode "constant" fills with `constantValue`; "reflect"
 * mirrors without repeating the edge (NumPy's reflect), "symmetric" mirrors repeating it, and
 * "edge" repeats the edge value.
 */
export function pad(x: TensorLike, paddings: readonly (readonly [number, number])[], constantValue: number | boolean = 0, mode: PadMode = "constant"): Tensor {
  const t = toTensor(x, "pad");
  const p = checkPaddings("pad", paddings, t.shape);
  if (!PAD_MODES.includes(mode)) throw new ValueError(`unknown mode ${fmt(mode)} (expected one of ${PAD_MODES.join(", ")})`, "pad");
  if (typeof constantValue !== "number" && typeof constantValue !== "boolean") {
    throw new ValueError(`constantValue must be a number or boolean, got ${typeof constantValue}`, "pad");
  }
  if (p.every(([b, a]) => b === 0 && a === 0)) return t;
  return applyOp1(padOp, [t], { paddings: p, mode, value: Number(constantValue) });
}

// ---------------------------------------------------------------------------------------------
// tile, flip

export interface TileAttrs {
  /** Repetitions per output axis; at least rank entries (the input is viewed with leading 1s). */
  reps: number[];
}

function checkReps(op: string, reps: unknown, shape: Shape): number[] {
  if (!Array.isArray(reps)) throw new ShapeError(`reps must be an array of non-negative integers, got ${String(reps)}`, op);
  for (const r of reps) {
    if (typeof r !== "number" || !Number.isInteger(r) || r < 0) {
      throw new ShapeError(`reps ${fmt(reps)} has ${String(r)}; reps must be non-negative integers (input shape ${fmtShape(shape)})`, op);
    }
  }
  return reps as number[];
}

function tiledInputShape(shape: Shape, n: number): number[] {
  return [...new Array<number>(n - shape.length).fill(1), ...shape];
}

export const tileOp = defineOp<TileAttrs>({
  name: "tile",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const reps = checkReps("tile", attrs.reps, x.shape);
    if (reps.length < x.shape.length) {
      throw new ShapeError(`reps ${fmt(reps)} has fewer entries than the rank of the input (shape ${fmtShape(x.shape)})`, "tile");
    }
    const xs = tiledInputShape(x.shape, reps.length);
    return [{ shape: xs.map((n, d) => (reps[d] === 0 ? 0 : n < 0 ? -1 : n * reps[d]!)), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const out = alloc(outs[0]!);
    const xs = tiledInputShape(x.shape, attrs.reps.length);
    const maps = xs.map((n, d) => {
      const m = new Int32Array(n * attrs.reps[d]!);
      for (let i = 0; i < m.length; i++) m[i] = i % n;
      return m;
    });
    copyIndexMapped(x.concrete(), xs, maps, out);
    return [out];
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    const reps = ctx.attrs.reps;
    const xs = tiledInputShape(x.shape, reps.length);
    if (xs.filter((n) => n < 0).length > 1) {
      throw unknownAxisError("tile", xs.findIndex((n) => n < 0), x.shape, "the gradient of tiling more than one axis of unknown size");
    }
    const split: number[] = [];
    xs.forEach((n, d) => split.push(reps[d]!, n)); // an unknown n (staging) stays -1: reshape infers it
    const g = sum(reshape(cts[0]!, split), reps.map((_, d) => 2 * d));
    return [reshape(g, x.shape)];
  },
});

/**
 * Repeats `x` reps[d] times along each axis (NumPy's tile: a shorter reps is padded with leading
 * 1s, a longer one views x with leading size-1 axes).
 */
export function tile(x: TensorLike, reps: readonly number[]): Tensor {
  const t = toTensor(x, "tile");
  const r = checkReps("tile", reps, t.shape).slice();
  while (r.length < t.rank) r.unshift(1);
  if (r.length === t.rank && r.every((k) => k === 1)) return t;
  return applyOp1(tileOp, [t], { reps: r });
}

export const flipOp: OpDef<AxesAttrs> = defineOp<AxesAttrs>({
  name: "flip",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    checkSortedAxes("flip", attrs.axes, x.shape);
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const out = alloc(outs[0]!);
    const st = stridesOf(x.shape);
    let off = 0;
    const src = st.map((s, d) => {
      if (!attrs.axes.includes(d)) return s;
      off += (x.shape[d]! - 1) * s;
      return -s;
    });
    copyStrided(x.concrete(), off, src, out, 0, st, x.shape);
    return [out];
  },
  vjp(ctx, cts) {
    return [applyOp1(flipOp, [cts[0]!], { axes: ctx.attrs.axes })];
  },
});

/** Reverses the order of elements along the given axes (default: all). */
export function flip(x: TensorLike, axis?: number | readonly number[] | null): Tensor {
  const t = toTensor(x, "flip");
  // Flipping a size-0 or size-1 axis is a no-op; an unknown size (staging) may be larger.
  const axes = axesOf("flip", axis, t.shape).filter((a) => t.shape[a]! > 1 || t.shape[a]! < 0);
  if (axes.length === 0) return t;
  return applyOp1(flipOp, [t], { axes });
}

// ---------------------------------------------------------------------------------------------
// clip

/** NumPy order: max(x, lo) then min(., hi); NaN in x propagates. */
const CLIP_EXPR = "(a < b ? (b > c ? c : b) : (a > c ? c : a))";

export const clipOp = defineOp({
  name: "clip",
  family: "shape",
  inputs: ["x", "min", "max"],
  elementwise: { expr: CLIP_EXPR },
  infer(inputs) {
    const [x, lo, hi] = inputs as [TensorType, TensorType, TensorType];
    return [{ shape: broadcastShapesN("clip", [x.shape, lo.shape, hi.shape]), dtype: promoteTypes(promoteTypes(x.dtype, lo.dtype), hi.dtype) }];
  },
  kernel(inputs, _attrs, outs) {
    const o = outs[0]!;
    const out = alloc(o);
    elementwiseLoop(CLIP_EXPR, 3)(inputs.map((t) => t.concrete()), inputs.map((t) => t.shape), out, o.shape);
    return [out];
  },
  vjp(ctx, cts) {
    const [x, lo, hi] = ctx.inputs as [Tensor, Tensor, Tensor];
    const dy = cts[0]!;
    const below = less(x, lo);
    const above = greater(x, hi);
    const crossed = greater(lo, hi);
    // x passes where lo <= x <= hi (or x is NaN); below lo the value is lo unless lo > hi.
    const dx = where(logicalOr(below, above), 0, dy);
    const dlo = isFloat(lo.dtype) ? sumTo(where(below, where(crossed, 0, dy), 0), lo) : null;
    const dhi = isFloat(hi.dtype) ? sumTo(where(below, where(crossed, dy, 0), where(above, dy, 0)), hi) : null;
    return [sumTo(dx, x), dlo, dhi];
  },
});

function lowest(d: DType): number {
  return d === "int32" ? -(2 ** 31) : d === "int64" ? -(2 ** 53) : d === "uint8" || d === "bool" ? 0 : -Infinity;
}
function highest(d: DType): number {
  return d === "int32" ? 2 ** 31 - 1 : d === "int64" ? 2 ** 53 : d === "uint8" ? 255 : d === "bool" ? 1 : Infinity;
}

/**
 * Limits values to [min, max] (either may be null: unbounded), broadcasting all three; JS numbers
 * are weakly typed. Gradient flows to x where min <= x <= max, and to min/max where they bind.
 */
export function clip(x: TensorLike, min: TensorLike | null | undefined, max?: TensorLike | null): Tensor {
  const hasLo = min !== null && min !== undefined;
  const hasHi = max !== null && max !== undefined;
  if (!hasLo && !hasHi) return toTensor(x, "clip");
  const args: TensorLike[] = [x];
  if (hasLo) args.push(min);
  if (hasHi) args.push(max);
  const ts = toTensorsWeak(args, "clip");
  let d = ts[0]!.dtype;
  for (const t of ts) d = promoteTypes(d, t.dtype);
  const xt = ts[0]!;
  const lo = hasLo ? ts[1]! : scalarOf(lowest(d), d);
  const hi = hasHi ? ts[hasLo ? 2 : 1]! : scalarOf(highest(d), d);
  return applyOp1(clipOp, [xt, lo, hi], {});
}

declare module "../core/tensor.js" {
  interface Tensor {
    reshape(shape: readonly number[]): Tensor;
    broadcastTo(shape: readonly number[]): Tensor;
    transpose(perm?: readonly number[]): Tensor;
    expandDims(axis: number | readonly number[]): Tensor;
    squeeze(axis?: number | readonly number[] | null): Tensor;
    unstack(axis?: number): Tensor[];
    split(numOrSizes: number | readonly number[], axis?: number): Tensor[];
    slice(begin: string | readonly (number | null | undefined)[], end?: readonly (number | null | undefined)[] | null, strides?: readonly (number | null | undefined)[] | null): Tensor;
    gather(indices: TensorLike, axis?: number): Tensor;
    gatherND(indices: TensorLike): Tensor;
    scatterAdd(indices: TensorLike, updates: TensorLike, axis?: number): Tensor;
    pad(paddings: readonly (readonly [number, number])[], constantValue?: number | boolean, mode?: PadMode): Tensor;
    tile(reps: readonly number[]): Tensor;
    flip(axis?: number | readonly number[] | null): Tensor;
    clip(min: TensorLike | null | undefined, max?: TensorLike | null): Tensor;
  }
}
installMethods({ reshape, broadcastTo, transpose, expandDims, squeeze, unstack, split, slice, gather, gatherND, scatterAdd, pad, tile, flip, clip });
