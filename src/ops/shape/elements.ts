/**
 * Element-wise indexing: gatherElements (take along an axis), scatterElements (put along an
 * axis, with a reduction), scatterND (put slices at index tuples, with a reduction). As in
 * gather, indices are integer tensors in 0..n-1 (not wrapped; an index outside is an
 * IndexError). Gradients: gatherElements scatters back (adding duplicates); the scatters
 * differentiate for reductions "none" and "add" (the others raise GradientError).
 */
import { DtypeError, GradientError, IndexError, ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape, stridesOf } from "../../core/shape.js";
import type { Tensor, TensorLike } from "../../core/tensor.js";
import { applyOp1, defineOp, type TensorType } from "../registry.js";
import { toTensor } from "../convert.js";
import { zerosLikeTensor } from "../fill.js";
import { gatherElementsInto, scatterElementsInto, scatterNDInto, type ScatterReduction } from "../../backends/cpu/elements-index.js";
import { alloc, checkAttrAxis, checkIndexDtype, positionOf, prod, axisOf, toIndexTensor } from "./common.js";
import { gatherND } from "./gather.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { axisBatch, perExample } from "../batching.js";

const REDUCTIONS: readonly ScatterReduction[] = ["none", "add", "mul", "max", "min"];

interface ElementsAttrs {
  axis: number;
}
interface ScatterAttrs {
  axis: number;
  reduction: ScatterReduction;
}
interface ScatterNDAttrs {
  reduction: ScatterReduction;
}

/** indices of rank x's, no larger than x on the other axes; in 0..n-1 along `axis`. */
function checkElementsIndices(op: string, x: readonly number[], idx: readonly number[], axis: number): void {
  if (idx.length !== x.length || idx.some((d, i) => i !== axis && d > x[i]!)) {
    throw new ShapeError(`indices of shape ${fmtShape(idx)} must have the rank of x ${fmtShape(x)} and be no larger on axes other than ${axis}`, op);
  }
}
function checkRange(op: string, id: ArrayLike<number>, idxShape: readonly number[], n: number, what: string): void {
  for (let j = 0; j < id.length; j++) {
    const k = id[j]!;
    if (!(k >= 0 && k < n)) throw new IndexError(`index ${k} at position ${positionOf(j, idxShape)} of indices (shape ${fmtShape(idxShape)}) is out of range for ${what} (valid: 0..${n - 1})`, op);
  }
}
function checkReduction(op: string, r: unknown): ScatterReduction {
  if (!REDUCTIONS.includes(r as ScatterReduction)) throw new ValueError(`reduction must be one of ${REDUCTIONS.join(", ")}, got ${JSON.stringify(r)}`, op);
  return r as ScatterReduction;
}

export const gatherElementsOp = defineOp<ElementsAttrs>({
  name: "gatherElements",
  batch: axisBatch,
  family: "shape",
  inputs: ["x", "indices"],
  infer(inputs, attrs) {
    const [x, idx] = inputs as [TensorType, TensorType];
    checkIndexDtype("gatherElements", idx);
    const axis = checkAttrAxis("gatherElements", attrs.axis, x.shape);
    checkElementsIndices("gatherElements", x.shape, idx.shape, axis);
    return [{ shape: idx.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.gatherElements,
    cpu(inputs, attrs, outs) {
      const [x, idx] = inputs as [Tensor, Tensor];
      const id = idx.concrete();
      checkRange("gatherElements", id, idx.shape, x.shape[attrs.axis]!, `axis ${attrs.axis} of x (shape ${fmtShape(x.shape)})`);
      const out = alloc(outs[0]!);
      gatherElementsInto(x.concrete(), x.shape, id, idx.shape, attrs.axis, out);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [x, idx] = ctx.inputs as [Tensor, Tensor];
    return [scatterElements(zerosLikeTensor(x, cts[0]!.dtype), idx, cts[0]!, ctx.attrs.axis, "add"), null];
  },
});

/** out[p] = x[p with p[axis] replaced by indices[p]]: the result has the indices' shape. */
export function gatherElements(x: TensorLike, indices: TensorLike, axis = 0): Tensor {
  const t = toTensor(x, "gatherElements");
  const idx = toIndexTensor("gatherElements", indices);
  return applyOp1(gatherElementsOp, [t, idx], { axis: axisOf("gatherElements", axis, t.shape) });
}

export const scatterElementsOp = defineOp<ScatterAttrs>({
  name: "scatterElements",
  batch: axisBatch,
  family: "shape",
  inputs: ["x", "indices", "updates"],
  infer(inputs, attrs) {
    const [x, idx, upd] = inputs as [TensorType, TensorType, TensorType];
    checkIndexDtype("scatterElements", idx);
    checkReduction("scatterElements", attrs.reduction);
    const axis = checkAttrAxis("scatterElements", attrs.axis, x.shape);
    checkElementsIndices("scatterElements", x.shape, idx.shape, axis);
    if (upd.dtype !== x.dtype) throw new DtypeError(`updates have dtype ${upd.dtype} but x has dtype ${x.dtype}`, "scatterElements");
    if (upd.shape.length !== idx.shape.length || upd.shape.some((d, i) => d !== idx.shape[i])) {
      throw new ShapeError(`updates of shape ${fmtShape(upd.shape)} must have the indices' shape ${fmtShape(idx.shape)}`, "scatterElements");
    }
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.scatterElements,
    cpu(inputs, attrs) {
      const [x, idx, upd] = inputs as [Tensor, Tensor, Tensor];
      const id = idx.concrete();
      checkRange("scatterElements", id, idx.shape, x.shape[attrs.axis]!, `axis ${attrs.axis} of x (shape ${fmtShape(x.shape)})`);
      const out = x.concrete().slice();
      scatterElementsInto(out, x.shape, id, idx.shape, upd.concrete(), attrs.axis, attrs.reduction);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [, idx, upd] = ctx.inputs as [Tensor, Tensor, Tensor];
    const dy = cts[0]!;
    const r = ctx.attrs.reduction;
    if (r !== "none" && r !== "add") throw new GradientError(`the gradient of reduction ${JSON.stringify(r)} is not defined here (only "none" and "add")`, "scatterElements");
    const dUpd = gatherElements(dy, idx, ctx.attrs.axis);
    // "none": the overwritten positions of x get no gradient.
    const dx = r === "add" ? dy : scatterElements(dy, idx, zerosLikeTensor(upd, dy.dtype), ctx.attrs.axis, "none");
    return [dx, null, dUpd];
  },
});

/**
 * A copy of `x` where position p with p[axis] = indices[q] receives updates[q] (for every
 * position q of indices), combined by `reduction`: "none" (replace; of duplicates the last
 * wins), "add", "mul", "max" or "min".
 */
export function scatterElements(x: TensorLike, indices: TensorLike, updates: TensorLike, axis = 0, reduction: ScatterReduction = "none"): Tensor {
  const t = toTensor(x, "scatterElements");
  const u = toTensor(updates, "scatterElements", t.dtype);
  const idx = toIndexTensor("scatterElements", indices);
  return applyOp1(scatterElementsOp, [t, idx, u], { axis: axisOf("scatterElements", axis, t.shape), reduction: checkReduction("scatterElements", reduction) });
}

export const scatterNDOp = defineOp<ScatterNDAttrs>({
  name: "scatterND",
  batch: perExample,
  family: "shape",
  inputs: ["x", "indices", "updates"],
  infer(inputs, attrs) {
    const [x, idx, upd] = inputs as [TensorType, TensorType, TensorType];
    checkIndexDtype("scatterND", idx);
    checkReduction("scatterND", attrs.reduction);
    const k = idx.shape[idx.shape.length - 1]!;
    if (idx.shape.length === 0 || !(k >= 1 && k <= x.shape.length)) {
      throw new ShapeError(`indices must have shape [..., k] with 1 <= k <= rank of x; got indices ${fmtShape(idx.shape)} for x ${fmtShape(x.shape)}`, "scatterND");
    }
    const want = [...idx.shape.slice(0, -1), ...x.shape.slice(k)];
    if (upd.dtype !== x.dtype) throw new DtypeError(`updates have dtype ${upd.dtype} but x has dtype ${x.dtype}`, "scatterND");
    if (upd.shape.length !== want.length || upd.shape.some((d, i) => d !== want[i])) {
      throw new ShapeError(`updates have shape ${fmtShape(upd.shape)} but indices ${fmtShape(idx.shape)} into x ${fmtShape(x.shape)} need ${fmtShape(want)}`, "scatterND");
    }
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.scatterND,
    cpu(inputs, attrs) {
      const [x, idx, upd] = inputs as [Tensor, Tensor, Tensor];
      const k = idx.shape[idx.rank - 1]!;
      const id = idx.concrete();
      for (let j = 0; j < id.length; j++) {
        const n = x.shape[j % k]!;
        if (!(id[j]! >= 0 && id[j]! < n)) throw new IndexError(`component ${j % k} of index tuple ${Math.floor(j / k)} is ${id[j]}, out of range for axis ${j % k} of x (shape ${fmtShape(x.shape)}, valid 0..${n - 1})`, "scatterND");
      }
      const out = x.concrete().slice();
      scatterNDInto(out, stridesOf(x.shape).slice(0, k), prod(x.shape, k), id, id.length / k, upd.concrete(), attrs.reduction);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [, idx, upd] = ctx.inputs as [Tensor, Tensor, Tensor];
    const dy = cts[0]!;
    const r = ctx.attrs.reduction;
    if (r !== "none" && r !== "add") throw new GradientError(`the gradient of reduction ${JSON.stringify(r)} is not defined here (only "none" and "add")`, "scatterND");
    const dx = r === "add" ? dy : scatterND(dy, idx, zerosLikeTensor(upd, dy.dtype), "none");
    return [dx, null, gatherND(dy, idx)];
  },
});

/** A copy of `x` whose slices at the index tuples of `indices` ([..., k]) receive `updates`, combined by `reduction`. */
export function scatterND(x: TensorLike, indices: TensorLike, updates: TensorLike, reduction: ScatterReduction = "none"): Tensor {
  const t = toTensor(x, "scatterND");
  const u = toTensor(updates, "scatterND", t.dtype);
  const idx = toIndexTensor("scatterND", indices);
  return applyOp1(scatterNDOp, [t, idx, u], { reduction: checkReduction("scatterND", reduction) });
}

export type { ScatterReduction };
