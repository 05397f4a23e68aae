/** Indexing by tensors: gather, gatherND, scatterAdd. */
import { DtypeError, IndexError, ShapeError } from "../../core/errors.js";
import { dimsCompatible, fmtShape, hasUnknownDims, shapesEqual, stridesOf, type Shape } from "../../core/shape.js";
import { Tensor, makeTensor, type TensorLike } from "../../core/tensor.js";
import { promoteTypes } from "../../core/dtype.js";
import { applyOp1, defineOp, type TensorType } from "../registry.js";
import { toTensor, toTensorsWeak } from "../convert.js";
import { installMethods } from "../methods.js";
import { sum } from "../reduce.js";
import { cast } from "../cast.js";
import { full } from "../fill.js";
import { fullLike } from "../creation.js";
import { mul } from "../binary.js";
import { gatherAxis, gatherNDInto, scatterAddAxis } from "../../backends/cpu/gather.js";
import { fmt, prod, axisOf, unknownAxisError, alloc, positionOf, checkIndexDtype, checkIndexRange, checkAttrAxis, toIndexTensor, type AxisAttrs } from "./common.js";
import { broadcastLike, broadcastTo, reshape } from "./reshape.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { batchWhen, leadingBatch, perExample, shiftAxis } from "../batching.js";


/**
 * `wrappedBy`: set by a caller that wrapped negative indices -n..-1 itself (ONNX's Gather with
 * indices computed at run time): an index left out of range is reported against that caller's
 * range -n..n-1 and names it. It changes nothing else.
 */
export interface GatherAttrs extends AxisAttrs {
  wrappedBy?: string;
}

export const gatherOp = defineOp<GatherAttrs>({
  name: "gather",
  batch: batchWhen("axis", (c) => c.dims[1] === null, leadingBatch<GatherAttrs>("axis", (a, r) => ({ ...a, axis: shiftAxis(a.axis, r) }), [0])),
  family: "shape",
  inputs: ["x", "indices"],
  infer(inputs, attrs) {
    const [x, idx] = inputs as [TensorType, TensorType];
    checkIndexDtype("gather", idx);
    if (x.shape.length === 0) throw new ShapeError(`cannot gather from a scalar (x has shape [])`, "gather");
    const axis = checkAttrAxis("gather", attrs.axis, x.shape);
    return [{ shape: [...x.shape.slice(0, axis), ...idx.shape, ...x.shape.slice(axis + 1)], dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.gather,
    cpu(inputs, attrs, outs) {
      const [x, idx] = inputs as [Tensor, Tensor];
      const axis = attrs.axis;
      const n = x.shape[axis]!;
      const id = idx.concrete();
      checkIndexRange("gather", id, idx.shape, n, axis, x.shape, attrs.wrappedBy);
      const out = alloc(outs[0]!);
      gatherAxis(x.concrete(), prod(x.shape, 0, axis), n, prod(x.shape, axis + 1), id, out);
      return [out];
    },
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
  batch: perExample,
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
  kernels: {
    webgpu: shapeGpu.gatherND,
    cpu(inputs, _attrs, outs) {
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
  batch: perExample,
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
  kernels: {
    webgpu: shapeGpu.scatterAdd,
    cpu(inputs, attrs, outs) {
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

declare module "../../core/tensor.js" {
  interface Tensor {
    gather(indices: TensorLike, axis?: number): Tensor;
    gatherND(indices: TensorLike): Tensor;
    scatterAdd(indices: TensorLike, updates: TensorLike, axis?: number): Tensor;
  }
}
installMethods({ gather, gatherND, scatterAdd });
