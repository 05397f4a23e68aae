/** Helpers shared by the shape ops: axis and index validation, storage, error messages. */
import { DtypeError, IndexError, ShapeError } from "../../core/errors.js";
import { fmtShape, positionOf, shapesEqual, sizeOf, type Shape } from "../../core/shape.js";
import { Tensor, makeTensor, type TensorLike } from "../../core/tensor.js";
import { allocStorage, type TypedArray } from "../../core/dtype.js";
import type { TensorType } from "../registry.js";
import { toTensor } from "../convert.js";
import { fullLike } from "../creation.js";

/** Explains, for a shape argument computed from a staged tensor's shape, why it is not a real size. */
export function unknownShapeArg(op: string, what: string, shape: readonly number[], problem: string, inShape?: Shape): ShapeError {
  const input = inShape ? ` (the input has shape ${fmtShape(inShape)})` : "";
  return new ShapeError(
    `${what} ${fmtShape(shape)} ${problem}${input}: while a function is staged with null inputSignature dimensions, unknown sizes read ` +
      `as -1 (tensor.shape[i] is -1, and arithmetic on it is not a size), so ${op} cannot tell the real size. Give the inputSignature ` +
      `a concrete size for that dimension${op === "broadcastTo" ? ", or broadcast against the other tensor itself (broadcastLike(x, y), or an elementwise op)" : op === "reshape" ? ", or use a single -1 for the one dimension to infer" : ""}`,
    op,
  );
}

export const fmt = (v: unknown): string => JSON.stringify(v);

export function prod(s: Shape, from = 0, to = s.length): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= s[i]!;
  return n;
}

/**
 * Normalizes a possibly negative axis of a tensor of `shape` (`extra` = 1 for a new axis, as in
 * stack/expandDims); ShapeError naming the op and the shape when out of range.
 */
export function axisOf(op: string, axis: unknown, shape: Shape, extra = 0): number {
  const r = shape.length + extra;
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -r || axis >= r) {
    const what = extra ? `a new axis of an output of rank ${r} (input shape ${fmtShape(shape)})` : `a tensor of shape ${fmtShape(shape)}`;
    throw new ShapeError(`axis ${String(axis)} is out of range for ${what} (valid: ${-r}..${r - 1})`, op);
  }
  return axis < 0 ? axis + r : axis;
}

/** Normalizes an axis or axis list (null/undefined = all axes), sorted; duplicates are errors. */
export function axesOf(op: string, axes: unknown, shape: Shape, extra = 0): number[] {
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
export function unknownAxisError(op: string, axis: number, shape: Shape, what: string): ShapeError {
  return new ShapeError(
    `${what} depends on the size of axis ${axis} of shape ${fmtShape(shape)}, which is unknown (-1) while the function is staged ` +
      `with a null inputSignature dimension there; give the inputSignature a concrete size for that dimension`,
    op,
  );
}

export function alloc(t: TensorType): TypedArray {
  return allocStorage(t.dtype, sizeOf(t.shape));
}

export { positionOf } from "../../core/shape.js";

export function checkIndexDtype(op: string, t: TensorType, what = "indices"): void {
  if (t.dtype !== "int32" && t.dtype !== "int64" && t.dtype !== "uint8") {
    throw new DtypeError(`${what} must be an integer tensor (int32, int64 or uint8), got ${t.dtype} with shape ${fmtShape(t.shape)}`, op);
  }
}

/**
 * Throws IndexError for the first index outside 0..n-1. `wrappedBy` names a caller that wrapped
 * -n..-1 before (ONNX's Gather at run time, where the indices are not known when traced): its
 * indices out of range are as it was given them, the message states its range -n..n-1 and names it.
 */
export function checkIndexRange(op: string, idx: TypedArray, idxShape: Shape, n: number, axis: number, xShape: Shape, wrappedBy?: string): void {
  for (let j = 0; j < idx.length; j++) {
    const k = idx[j]!;
    if (k < 0 || k >= n) {
      const message = indexRangeMessage(Number(k), j, idxShape, n, axis, xShape, wrappedBy !== undefined);
      throw new IndexError(wrappedBy === undefined ? message : `${message} (in ${wrappedBy})`, op);
    }
  }
}

/**
 * The message for index `k` at flat position `j` out of range for an axis of size n. With
 * `wrapsNegative` (ONNX's Gather, whose importer wraps -n..-1) the valid range is -n..n-1 and
 * `k` is the model's own index, not a wrapped one.
 */
export function indexRangeMessage(k: number, j: number, idxShape: Shape, n: number, axis: number, xShape: Shape, wrapsNegative: boolean): string {
  const valid = n === 0 ? `the axis is empty` : wrapsNegative ? `valid indices are ${-n}..${n - 1}` : `valid indices are 0..${n - 1}`;
  const neg = k < 0 && !wrapsNegative ? " (negative indices are not wrapped)" : "";
  return `index ${k} at position ${positionOf(j, idxShape)} of indices (shape ${fmtShape(idxShape)}) is out of range for axis ${axis} of size ${n} of a tensor of shape ${fmtShape(xShape)}: ${valid}${neg}`;
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
export function filledCts(cts: (Tensor | null)[], outputs: Tensor[]): Tensor[] {
  return cts.map((c, i) => c ?? fullLike(outputs[i]!, 0));
}

/** Validates an attribute's axis list: normalized, sorted, unique. */
export function checkSortedAxes(op: string, axes: unknown, shape: Shape, extra = 0): number[] {
  if (!Array.isArray(axes)) throw new ShapeError(`axes must be an array of integers, got ${String(axes)}`, op);
  const norm = axesOf(op, axes, shape, extra);
  if (!shapesEqual(norm, axes as number[])) throw new ShapeError(`axes attribute ${fmt(axes)} must be sorted and non-negative (shape ${fmtShape(shape)})`, op);
  return norm;
}

export function checkSameDtypes(op: string, inputs: readonly TensorType[]): void {
  for (let i = 1; i < inputs.length; i++) {
    if (inputs[i]!.dtype !== inputs[0]!.dtype) {
      throw new DtypeError(`input ${i} has dtype ${inputs[i]!.dtype} but input 0 has dtype ${inputs[0]!.dtype}; all inputs must have the same dtype`, op);
    }
  }
}

export function checkAttrAxis(op: string, axis: unknown, shape: Shape, extra = 0): number {
  const a = axisOf(op, axis, shape, extra);
  if (a !== axis) throw new ShapeError(`axis attribute must be normalized (non-negative), got ${String(axis)}`, op);
  return a;
}

export interface AxisAttrs {
  /** Normalized (non-negative) axis. */
  axis: number;
}

export interface AxesAttrs {
  /** Sorted, normalized axes. */
  axes: number[];
}
