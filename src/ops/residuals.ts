/**
 * Residual records: what a differentiated call or branch keeps for its backward, packed into
 * one value. The forward of a call returns its outputs and a handle (a float64 scalar whose
 * storage keys the record); its backward unpacks the handle. A record may hold the handles of
 * the calls it made, so a recursion keeps one record per call, a tree of them, and its
 * backward recomputes nothing (the closure conversion of Myia's backpropagators, in a graph of
 * typed tensors). Branches of a cond return records of different layouts as the same type.
 *
 * packResiduals is marked stateful: its output's identity matters (it is never merged,
 * folded or copied), and executors hand it storage that nothing overwrites later.
 * The ops are each other's VJP, so gradients can flow through kept values (higher order).
 * A zero cotangent of a handle unpacks to zeros; a handle whose record is unknown (say, the
 * sum of two handles) is an error, never a silently wrong value.
 */
import { allocStorage, isFloat, type DType, type TypedArray } from "../core/dtype.js";
import { ValueError } from "../core/errors.js";
import { sizeOf } from "../core/shape.js";
import type { Tensor } from "../core/tensor.js";
import { applyOp, applyOp1, defineOp, runtimeShapes, type TensorType } from "./registry.js";
import { zerosLikeTensor } from "./fill.js";
import { onHost } from "../backends/webgpu/op-kernels/types.js";
import { refuseBatch } from "./batching.js";

interface Kept {
  data: TypedArray;
  shape: number[];
}

const records = new WeakMap<TypedArray, Kept[]>();
let serial = 0;

export const HANDLE_TYPE: TensorType = Object.freeze({ dtype: "float64" as DType, shape: Object.freeze([]) as unknown as number[] });

export const packResidualsOp = defineOp<Record<string, never>>({
  name: "packResiduals",
  batch: refuseBatch("a residual record is an opaque handle of one call's values"),
  family: "ad",
  inputs: ["values"],
  variadic: true,
  stateful: true,
  infer: () => [HANDLE_TYPE],
  kernels: { webgpu: onHost("packResiduals"), cpu(inputs) {
    const handle = new Float64Array([++serial]);
    records.set(
      handle,
      inputs.map((t) => ({ data: t.concrete(), shape: t.shape.slice() })),
    );
    return [handle];
  } },
  vjp(ctx, cts) {
    const types = ctx.inputs.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() }));
    // The inputs come along for their shapes: a zero cotangent unpacks to zeros like them.
    const grads = types.length === 0 ? [] : applyOp(unpackResidualsOp, [cts[0]!, ...ctx.inputs], { types });
    return grads.map((g, i) => (isFloat(ctx.inputs[i]!.dtype) ? g : null));
  },
});

interface UnpackAttrs {
  types: TensorType[];
}

/**
 * (handle, ...likes) -> the record's values. `likes` (optional, one per value) only give the
 * shapes of the zeros a zero cotangent of a handle unpacks to.
 */
export const unpackResidualsOp = defineOp<UnpackAttrs>({
  name: "unpackResiduals",
  batch: refuseBatch("a residual record is an opaque handle of one call's values"),
  family: "ad",
  inputs: ["handle"],
  variadic: true,
  infer: (_inputs, attrs) => attrs.types.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })),
  kernels: { webgpu: onHost("unpackResiduals"), cpu(inputs, attrs) {
    const h = inputs[0]!.concrete();
    const kept = records.get(h);
    if (!kept) {
      const likes = inputs.slice(1);
      if (h[0] === 0 && (likes.length === attrs.types.length || attrs.types.every((t) => t.shape.every((d) => d >= 0)))) {
        return attrs.types.map((t, i) => {
          const shape = likes[i]?.shape ?? t.shape;
          const out = allocStorage(t.dtype, sizeOf(shape));
          if (t.shape.some((d) => d < 0)) runtimeShapes.set(out, shape.slice());
          return out;
        });
      }
      throw new ValueError(`the value is not a residual record (got ${h[0]}); records are produced by packResiduals and may not be combined arithmetically`, "unpackResiduals");
    }
    if (kept.length !== attrs.types.length) {
      throw new ValueError(`the record holds ${kept.length} values, ${attrs.types.length} were expected`, "unpackResiduals");
    }
    return kept.map((k, i) => {
      if (attrs.types[i]!.shape.some((d) => d < 0)) runtimeShapes.set(k.data, k.shape);
      return k.data;
    });
  } },
  vjp(ctx, cts) {
    return [packResiduals(cts.map((c, i) => c ?? zerosLikeTensor(ctx.outputs[i]!))), ...ctx.inputs.slice(1).map(() => null)];
  },
});

/** The record a handle's storage stands for, if any (for containers that copy handles). */
export function recordOf(storage: TypedArray): object | undefined {
  return records.get(storage);
}

/** Makes `storage` (a copy of a handle) stand for `record` too. */
export function adoptRecord(storage: TypedArray, record: object): void {
  records.set(storage, record as Kept[]);
}

/** One handle for `values` (any dtypes and shapes). */
export function packResiduals(values: Tensor[]): Tensor {
  return applyOp1(packResidualsOp, values, {});
}

/** The values of a record, declared with `types` (unknown dims take the recorded shapes). */
export function unpackResiduals(handle: Tensor, types: TensorType[]): Tensor[] {
  if (types.length === 0) return [];
  return applyOp(unpackResidualsOp, [handle], { types });
}
