/** Shapes, strides, axes and NumPy broadcasting. */
import { AllocationError, ShapeError } from "./errors.js";
import { storageBytes, type DType } from "./dtype.js";

/**
 * A shape. While a function is staged with `inputSignature` null dims, a dimension may be
 * unknown: UNKNOWN (-1). Shape rules treat an unknown dim as compatible with any size and
 * propagate it; executors re-run the rules with concrete shapes, so kernels never see it.
 */
export type Shape = readonly number[];

export const UNKNOWN = -1;

export function hasUnknownDims(shape: Shape): boolean {
  for (let i = 0; i < shape.length; i++) if (shape[i]! < 0) return true;
  return false;
}

/** Dimension equality where an unknown dim matches anything. */
export function dimsCompatible(a: number, b: number): boolean {
  return a === b || a < 0 || b < 0;
}

export function sizeOf(shape: Shape): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

/** Multi-index of flat position `i` in `shape`, formatted "[i, j]" (for messages). */
export function positionOf(i: number, shape: Shape): string {
  const idx = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d]!;
    idx[d] = n > 0 ? i % n : 0;
    i = n > 0 ? Math.floor(i / n) : 0;
  }
  return `[${idx.join(", ")}]`;
}

export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function fmtShape(s: Shape): string {
  return `[${s.join(", ")}]`;
}

/** Validates a user-given shape: non-negative integers (at most one -1 when allowed). */
export function checkShape(op: string, shape: unknown, allowInfer = false): number[] {
  if (!Array.isArray(shape)) throw new ShapeError(`shape must be an array of integers, got ${String(shape)}`, op);
  let inferred = 0;
  for (const d of shape) {
    if (typeof d !== "number" || !Number.isInteger(d)) {
      throw new ShapeError(`shape ${JSON.stringify(shape)} has a non-integer dimension ${String(d)}`, op);
    }
    if (d === -1 && allowInfer) {
      if (++inferred > 1) throw new ShapeError(`shape ${JSON.stringify(shape)} has more than one -1`, op);
    } else if (d < 0) {
      throw new ShapeError(`shape ${JSON.stringify(shape)} has a negative dimension ${d}`, op);
    }
  }
  return shape as number[];
}

/**
 * The NumPy broadcast of two shapes (an unknown dim, -1 while staging, matches any size).
 * `mismatch` may phrase the error for the caller (matmul names its operands' whole shapes).
 */
export function broadcastShapes(op: string, a: Shape, b: Shape, mismatch?: () => string): number[] {
  if (shapesEqual(a, b)) return a as number[];
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = i < n - a.length ? 1 : a[i - (n - a.length)]!;
    const db = i < n - b.length ? 1 : b[i - (n - b.length)]!;
    if (da === db || db === 1) out[i] = da;
    else if (da === 1) out[i] = db;
    else if (da < 0 || db < 0) out[i] = da < 0 ? db : da; // an unknown dim (staging) matches any size
    else throw new ShapeError(mismatch?.() ?? `shapes ${fmtShape(a)} and ${fmtShape(b)} cannot be broadcast together (dimension ${i}: ${da} vs ${db})`, op);
  }
  return out;
}

export function broadcastShapesN(op: string, shapes: Shape[]): number[] {
  let out: number[] = shapes[0] as number[];
  for (let i = 1; i < shapes.length; i++) out = broadcastShapes(op, out, shapes[i]!);
  return out;
}

/** Normalizes a possibly negative axis against `rank`; throws ShapeError when out of range. */
export function normalizeAxis(op: string, axis: number, rank: number): number {
  if (typeof axis !== "number" || !Number.isInteger(axis)) {
    throw new ShapeError(`axis must be an integer, got ${String(axis)}`, op);
  }
  if (axis < -rank || axis >= rank) {
    throw new ShapeError(`axis ${axis} is out of range for a tensor of rank ${rank} (valid: ${-rank}..${rank - 1})`, op);
  }
  return axis < 0 ? axis + rank : axis;
}

/** Normalizes an axis list (undefined = all axes), sorted, without duplicates. */
export function normalizeAxes(op: string, axes: number | readonly number[] | undefined | null, rank: number): number[] {
  if (axes === undefined || axes === null) return Array.from({ length: rank }, (_, i) => i);
  const list = typeof axes === "number" ? [axes] : axes;
  const out = list.map((a) => normalizeAxis(op, a, rank));
  const seen = new Set<number>();
  for (const a of out) {
    if (seen.has(a)) throw new ShapeError(`axis ${a} appears more than once in ${JSON.stringify(list)}`, op);
    seen.add(a);
  }
  return out.sort((x, y) => x - y);
}

/**
 * Strides of `shape` when read as broadcast to `outShape` (0 on broadcast dimensions),
 * aligned to outShape's rank.
 */
export function broadcastStrides(shape: Shape, outShape: Shape): number[] {
  const st = stridesOf(shape);
  const n = outShape.length;
  const out = new Array<number>(n).fill(0);
  const off = n - shape.length;
  for (let i = 0; i < shape.length; i++) out[i + off] = shape[i] === 1 && outShape[i + off] !== 1 ? 0 : st[i]!;
  return out;
}

/** The axes along which `shape` was broadcast to make `outShape` (for reducing gradients back). */
export function broadcastReductionAxes(shape: Shape, outShape: Shape): number[] {
  const axes: number[] = [];
  const off = outShape.length - shape.length;
  for (let i = 0; i < outShape.length; i++) {
    if (i < off) axes.push(i);
    else if (shape[i - off] === 1 && outShape[i] !== 1) axes.push(i);
  }
  return axes;
}

/** The most elements one tensor can hold: the longest typed array JavaScript allocates (2^32). */
export const MAX_ELEMENTS = 2 ** 32;

/**
 * The one check made before a tensor is allocated: a tensor of `shape` and `dtype` must fit in
 * a typed array (shapes with unknown dims are checked when the dims are known). `op` names the
 * op whose output it is.
 */
export function checkAllocation(op: string, shape: Shape, dtype: DType): void {
  const n = sizeOf(shape);
  if (n > MAX_ELEMENTS && !hasUnknownDims(shape)) {
    throw new AllocationError(`${describeAllocation(shape, dtype)} is larger than the largest tensor that can be allocated (2^32 = ${MAX_ELEMENTS} elements)`, op);
  }
}

/** The error for an allocation the JavaScript engine refused (a RangeError: out of memory). */
export function allocationFailure(op: string | undefined, shape: Shape, dtype: DType, cause: RangeError): AllocationError {
  return new AllocationError(`${describeAllocation(shape, dtype)} could not be allocated (${cause.message})`, op);
}

function describeAllocation(shape: Shape, dtype: DType): string {
  const n = sizeOf(shape);
  const bytes = n * storageBytes(dtype); // (of its storage: float16 is held in a Float32Array)
  const units: [number, string][] = [
    [2 ** 40, "TiB"],
    [2 ** 30, "GiB"],
    [2 ** 20, "MiB"],
  ];
  const [scale, unit] = units.find(([s]) => bytes >= s) ?? [1, "bytes"];
  const size = unit === "bytes" ? `${bytes} bytes` : `${(bytes / scale).toPrecision(3)} ${unit}`;
  return `a ${dtype} tensor of shape ${fmtShape(shape)} (${n.toPrecision(n < 1e15 ? 15 : 4).replace(/\.?0+$/, "")} elements, ${size})`;
}
