/** Joining and splitting: concat, stack, unstack, split. */
import { ShapeError, ValueError } from "../../core/errors.js";
import { dimsCompatible, fmtShape, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { promoteTypes } from "../../core/dtype.js";
import { applyOp, applyOp1, defineOp } from "../registry.js";
import { toTensor, toTensorsWeak } from "../convert.js";
import { installMethods } from "../methods.js";
import { cast } from "../cast.js";
import { copyStrided } from "../../backends/cpu/transpose.js";
import { fmt, prod, axisOf, unknownAxisError, alloc, filledCts, checkSameDtypes, checkAttrAxis, type AxisAttrs } from "./common.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { STACKED, isStackedSequence, type StackedSequence } from "../../core/tensor-sequence.js";
import { reshape, transpose } from "./reshape.js";
import { axisBatch } from "../batching.js";



export const concatOp = defineOp<AxisAttrs>({
  name: "concat",
  batch: axisBatch,
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
  kernels: {
    webgpu: shapeGpu.concat,
    cpu(inputs, attrs, outs) {
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

/**
 * A sequence's stacked elements T ([n, ...element shape]) with its leading axis moved to
 * `axis` of the elements (0..rank): stack(elements, axis).
 */
function stackedAt(op: string, seq: StackedSequence, axis: number, extra: 0 | 1): { t: Tensor; a: number } {
  const t = seq[STACKED](undefined, op);
  const element = t.shape.slice(1);
  if (extra === 0 && element.length === 0) throw new ShapeError(`cannot concatenate scalars (the sequence's elements have shape [])`, op);
  const a = axisOf(op, axis, element, extra);
  if (a === 0) return { t, a };
  const perm = element.map((_, j) => j + 1);
  perm.splice(a, 0, 0);
  return { t: transpose(t, perm), a };
}

/** stack() of a sequence of tensors (AutoGraph's tensor list): its stacked elements, moved to `axis`. */
function stackSequence(seq: StackedSequence, axis: number): Tensor {
  return stackedAt("stack", seq, axis, 1).t;
}

/** concat() of a sequence of tensors: the stacked elements with the sequence axis merged into `axis`. */
function concatSequence(seq: StackedSequence, axis: number): Tensor {
  const { t, a } = stackedAt("concat", seq, axis, 0);
  const n = t.shape[a]!;
  const d = t.shape[a + 1]!;
  const shape = t.shape.filter((_, j) => j !== a + 1);
  shape[a] = n >= 0 && d >= 0 ? n * d : -1;
  if (shape.filter((x) => x < 0).length > 1) {
    throw new ShapeError(`cannot concatenate a sequence of elements of partly unknown shape ${fmtShape(t.shape.slice(1))} along axis ${a}`, "concat");
  }
  return reshape(t, shape);
}

/** Joins tensors along an existing axis. Dtypes are promoted to a common one. */
export function concat(tensors: readonly TensorLike[], axis = 0): Tensor {
  if (isStackedSequence(tensors)) return concatSequence(tensors, axis);
  const ts = toTensorList("concat", tensors);
  if (ts[0]!.rank === 0) throw new ShapeError(`cannot concatenate scalars (input 0 has shape [])`, "concat");
  const a = axisOf("concat", axis, ts[0]!.shape);
  if (ts.length === 1) return ts[0]!;
  return applyOp1(concatOp, ts, { axis: a });
}

export const stackOp = defineOp<AxisAttrs>({
  name: "stack",
  batch: axisBatch,
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
  kernels: {
    webgpu: shapeGpu.stack,
    cpu(inputs, attrs, outs) {
      const out = alloc(outs[0]!);
      const s = inputs[0]!.shape;
      const outer = prod(s, 0, attrs.axis);
      const inner = prod(s, attrs.axis);
      const count = inputs.length;
      for (let i = 0; i < count; i++) copyStrided(inputs[i]!.concrete(), 0, [inner, 1], out, i * inner, [count * inner, 1], [outer, inner]);
      return [out];
    },
  },
  vjp(ctx, cts) {
    return unstack(cts[0]!, ctx.attrs.axis);
  },
});

/** Joins same-shaped tensors along a new axis (in 0..rank). Dtypes are promoted. */
export function stack(tensors: readonly TensorLike[], axis = 0): Tensor {
  if (isStackedSequence(tensors)) return stackSequence(tensors, axis);
  const ts = toTensorList("stack", tensors);
  const a = axisOf("stack", axis, ts[0]!.shape, 1);
  return applyOp1(stackOp, ts, { axis: a });
}

export const unstackOp = defineOp<AxisAttrs>({
  name: "unstack",
  batch: axisBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const axis = checkAttrAxis("unstack", attrs.axis, x.shape);
    if (x.shape[axis]! < 0) throw unknownAxisError("unstack", axis, x.shape, "the number of outputs");
    const shape = x.shape.filter((_, i) => i !== axis);
    return Array.from({ length: x.shape[axis]! }, () => ({ shape, dtype: x.dtype }));
  },
  kernels: {
    webgpu: shapeGpu.unstack,
    cpu(inputs, attrs, outs) {
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
  batch: axisBatch,
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
  kernels: {
    webgpu: shapeGpu.split,
    cpu(inputs, attrs, outs) {
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

declare module "../../core/tensor.js" {
  interface Tensor {
    /** Iterates over axis 0 (`for (const row of x)`, `[...x]`): its rows, as unstack(x) gives them. */
    [Symbol.iterator](): Iterator<Tensor>;
    unstack(axis?: number): Tensor[];
    split(numOrSizes: number | readonly number[], axis?: number): Tensor[];
  }
}
installMethods({ unstack, split });

// (a scalar, or axis 0 unknown while staging, is the length getter's error: never an empty loop)
Object.defineProperty(Tensor.prototype, Symbol.iterator, {
  value: function* (this: Tensor): Generator<Tensor, void, undefined> {
    const n = this.length;
    if (n > 0) yield* unstack(this, 0);
  },
  writable: true,
  configurable: true,
});
