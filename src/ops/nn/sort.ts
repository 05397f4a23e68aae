/**
 * topK, sort and argsort (NaN the largest value, as in PyTorch: last ascending, first descending
 * and in topK; ties in index order); their gradients scatter along the axis.
 */
import { allocStorage } from "../../core/dtype.js";
import { ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape, hasUnknownDims, normalizeAxis, sizeOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { sortAxis, topKRows } from "../../backends/cpu/sort.js";
import { applyOp, applyOp1, defineOp, type OpDef } from "../registry.js";
import { toTensor } from "../convert.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { installMethods } from "../methods.js";
import { add, mul } from "../binary.js";
import { sum } from "../reduce.js";
import { expandDims, reshape, scatterAdd, transpose } from "../shape.js";
import { arange, full, oneHot } from "../creation.js";
import { where } from "../where.js";
import { cast } from "../cast.js";
import { splitAt } from "./softmax.js";
import { isInt, unknownSizeError } from "./window.js";
import { mathGpu } from "../../backends/webgpu/op-kernels/math.js";
import { axisBatch, sameAttrsBatch } from "../batching.js";

export interface TopKAttrs {
  k: number;
  sorted: boolean;
}

export interface SortAttrs {
  /** Normalized axis. */
  axis: number;
  descending: boolean;
}

export interface SortOptions {
  /** Default -1. */
  axis?: number;
  /** Default false. */
  descending?: boolean;
}
const SORT_OPTIONS = optionKeys<SortOptions>()("axis", "descending");

/**
 * Zeros of `shape` with `updates` placed at `indices` along `axis` (take-along-axis layout:
 * indices and updates have `shape` except along the axis; positions must be distinct per slice).
 * Expressed as one flat scatterAdd, so it is differentiable (its VJP is a gather).
 */
function scatterAlongAxis(op: string, updates: Tensor, indices: Tensor, axis: number, shape: Shape): Tensor {
  if (hasUnknownDims(shape)) return scatterAlongAxisOneHot(op, updates, indices, axis, shape);
  const [outer, n, inner] = splitAt(shape, axis);
  const m = indices.shape[axis]!;
  // flat position of each update: (o * n + indices[o, j, i]) * inner + i
  const base = add(reshape(mul(arange(outer), n * inner), [outer, 1, 1]), reshape(arange(inner), [1, 1, inner]));
  const flat = add(base, mul(reshape(cast(indices, "int32"), [outer, m, inner]), inner));
  const out = scatterAdd(full([sizeOf(shape)], 0, updates.dtype), reshape(flat, [-1]), reshape(updates, [-1]), 0);
  return reshape(out, shape);
}

/**
 * scatterAlongAxis without static sizes (for unknown dims while staging; only the size of `axis`
 * must be known): out[..., p] = sum over j of (indices[..., j] == p ? updates[..., j] : 0), with
 * the axis moved last, through a one-hot mask of the positions.
 */
function scatterAlongAxisOneHot(op: string, updates: Tensor, indices: Tensor, axis: number, shape: Shape): Tensor {
  const n = shape[axis]!;
  if (n < 0) throw unknownSizeError(op, `the gradient along axis ${axis}`, shape);
  const r = shape.length;
  const perm = Array.from({ length: r }, (_, i) => i).filter((i) => i !== axis);
  perm.push(axis);
  const inv = new Array<number>(r);
  perm.forEach((p, i) => (inv[p] = i));
  const idx = transpose(indices, perm);
  const upd = transpose(updates, perm);
  const mask = oneHot(idx, n, "bool"); // [..., m, n]
  const out = sum(where(mask, expandDims(upd, -1), 0), -2); // [..., n]
  return transpose(out, inv);
}

export const topKOp: OpDef<TopKAttrs> = defineOp<TopKAttrs>({
  name: "topK",
  batch: sameAttrsBatch,
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (x.shape.length === 0) throw new ShapeError(`needs a tensor of rank >= 1, got a scalar`, "topK");
    const n = x.shape[x.shape.length - 1]!;
    if (!isInt(attrs.k) || attrs.k < 0) throw new ValueError(`k must be a non-negative integer, got ${String(attrs.k)}`, "topK");
    if (n >= 0 && attrs.k > n) throw new ShapeError(`k = ${attrs.k} is larger than the last dimension (${n}) of shape ${fmtShape(x.shape)}`, "topK");
    const shape = [...x.shape.slice(0, -1), attrs.k];
    return [{ shape, dtype: x.dtype }, { shape, dtype: "int32" }];
  },
  kernels: {
    webgpu: mathGpu.topK,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const n = x.shape[x.shape.length - 1]!;
      const rows = n === 0 ? 0 : x.size / n;
      const values = allocStorage(outs[0]!.dtype, sizeOf(outs[0]!.shape));
      const indices = new Int32Array(sizeOf(outs[1]!.shape));
      if (attrs.k > 0) topKRows(x.concrete(), rows, n, attrs.k, attrs.sorted, values, indices);
      return [values, indices];
    },
  },
  vjp(ctx, cts) {
    // dx[..., indices[..., j]] = dvalues[..., j]
    const x = ctx.inputs[0]!;
    return [scatterAlongAxis("topK", cts[0]!, ctx.outputs[1]!, x.rank - 1, x.shape)];
  },
});

export const sortOp: OpDef<SortAttrs> = defineOp<SortAttrs>({
  name: "sort",
  batch: axisBatch,
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    normalizeAxis("sort", attrs.axis, x.shape.length);
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: mathGpu.sort,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const values = allocStorage(outs[0]!.dtype, x.size);
      const [outer, n, inner] = splitAt(x.shape, attrs.axis);
      sortAxis(x.concrete(), outer, n, inner, attrs.descending, values, null);
      return [values];
    },
  },
  vjp(ctx, cts) {
    // y[i] = x[perm[i]] along the axis, so dx[perm[i]] = dy[i].
    const x = ctx.inputs[0]!;
    const perm = applyOp1(argsortOp, [x], ctx.attrs);
    return [scatterAlongAxis("sort", cts[0]!, perm, ctx.attrs.axis, x.shape)];
  },
});

export const argsortOp: OpDef<SortAttrs> = defineOp<SortAttrs>({
  name: "argsort",
  batch: axisBatch,
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    normalizeAxis("argsort", attrs.axis, x.shape.length);
    return [{ shape: x.shape, dtype: "int32" }];
  },
  kernels: {
    webgpu: mathGpu.argsort,
    cpu(inputs, attrs) {
      const x = inputs[0]!;
      const indices = new Int32Array(x.size);
      const [outer, n, inner] = splitAt(x.shape, attrs.axis);
      sortAxis(x.concrete(), outer, n, inner, attrs.descending, null, indices);
      return [indices];
    },
  },
});

function sortAttrs(op: string, x: Tensor, opts: SortOptions): SortAttrs {
  if (opts === null || typeof opts !== "object") throw new ValueError(`options must be an object { axis?, descending? }, got ${String(opts)}`, op);
  const descending = opts.descending ?? false;
  if (typeof descending !== "boolean") throw new ValueError(`descending must be a boolean, got ${String(descending)}`, op);
  if (x.rank === 0) throw new ShapeError(`needs a tensor of rank >= 1, got a scalar`, op);
  return { axis: normalizeAxis(op, opts.axis ?? -1, x.rank), descending };
}

/**
 * The k largest entries along the last axis and their int32 indices, largest first
 * (sorted = false: in index order). NaN counts as larger than every number, +Infinity included
 * (as in PyTorch: NaNs come first); among equal values the lower index comes first.
 */
export function topK(x: TensorLike, k: number, options: { sorted?: boolean } = {}): [Tensor, Tensor] {
  checkOptions("topK", options, ["sorted"]);
  const t = toTensor(x, "topK");
  const sorted = options.sorted ?? true;
  if (typeof sorted !== "boolean") throw new ValueError(`sorted must be a boolean, got ${String(sorted)}`, "topK");
  if (!isInt(k) || k < 0) throw new ValueError(`k must be a non-negative integer, got ${String(k)}`, "topK");
  const [values, indices] = applyOp(topKOp, [t], { k, sorted });
  return [values!, indices!];
}

/** Sorted values along `axis` (default -1), ascending unless `descending`. NaN is the largest value (last ascending, first descending); stable. */
export function sort(x: TensorLike, options: SortOptions = {}): Tensor {
  checkOptions("sort", options, SORT_OPTIONS);
  const t = toTensor(x, "sort");
  return applyOp1(sortOp, [t], sortAttrs("sort", t, options));
}

/** The int32 permutation that sorts along `axis` (stable: equal values keep index order; NaN the largest). Not differentiable. */
export function argsort(x: TensorLike, options: SortOptions = {}): Tensor {
  checkOptions("argsort", options, SORT_OPTIONS);
  const t = toTensor(x, "argsort");
  return applyOp1(argsortOp, [t], sortAttrs("argsort", t, options));
}

declare module "../../core/tensor.js" {
  interface Tensor {
    topK(k: number, options?: { sorted?: boolean }): [Tensor, Tensor];
    sort(options?: SortOptions): Tensor;
    argsort(options?: SortOptions): Tensor;
  }
}
installMethods({ topK, sort, argsort });
