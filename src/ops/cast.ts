/**
 * cast: dtype conversion. Float -> int truncates toward zero, and narrow integer types wrap as
 * C casts do (typed-array stores); to bool is `x != 0`; to float16 rounds to nearest (registry).
 */
import { allocStorage, isDType, isFloat, type DType } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { sameAttrsBatch } from "./batching.js";

export interface CastAttrs {
  dtype: DType;
}

export const castOp = defineOp<CastAttrs>({
  name: "cast",
  batch: sameAttrsBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    if (!isDType(attrs.dtype)) throw new DtypeError(`unknown target dtype ${JSON.stringify(attrs.dtype)}`, "cast");
    return [{ shape: inputs[0]!.shape, dtype: attrs.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.cast,
    cpu(inputs, attrs) {
      const src = inputs[0]!.concrete();
      const out = allocStorage(attrs.dtype, src.length);
      const d = attrs.dtype;
      if (d === "bool") for (let i = 0; i < src.length; i++) out[i] = src[i] !== 0 ? 1 : 0;
      else if ((d === "int64" || d === "uint64") && isFloat(inputs[0]!.dtype)) for (let i = 0; i < src.length; i++) out[i] = Math.trunc(src[i]!);
      else (out as Float64Array).set(src as Float64Array);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    // Gradients flow only between float dtypes.
    return [isFloat(x.dtype) && isFloat(ctx.attrs.dtype) ? cast(cts[0]!, x.dtype) : null];
  },
});

export function cast(x: TensorLike, dtype: DType): Tensor {
  const t = toTensor(x, "cast");
  if (t.dtype === dtype) return t;
  return applyOp1(castOp, [t], { dtype });
}

declare module "../core/tensor.js" {
  interface Tensor {
    cast(dtype: DType): Tensor;
  }
}
installMethods({ cast });
