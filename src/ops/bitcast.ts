/**
 * bitcast: the same bytes read as another dtype of the same width (float32 <-> int32,
 * float64 <-> int64, int8 <-> uint8, ...). int64/uint64 results beyond 2^53 round, as their
 * storage does (core/dtype.ts). Not differentiable.
 */
import { isDType, type DType } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { bitcastInto, VALUE_BYTES } from "../backends/cpu/bitcast.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { bitwiseGpuEntries } from "../backends/webgpu/op-kernels/elementwise.js";
import { perExample } from "./batching.js";

export const bitcastOp = defineOp<{ dtype: DType }>({
  name: "bitcast",
  batch: perExample,
  family: "bitwise",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (!isDType(attrs.dtype)) throw new DtypeError(`unknown target dtype ${JSON.stringify(attrs.dtype)}`, "bitcast");
    if (VALUE_BYTES[x.dtype] !== VALUE_BYTES[attrs.dtype]) {
      throw new DtypeError(`cannot reinterpret ${x.dtype} (${VALUE_BYTES[x.dtype]} bytes) as ${attrs.dtype} (${VALUE_BYTES[attrs.dtype]} bytes): the widths differ`, "bitcast");
    }
    return [{ shape: x.shape, dtype: attrs.dtype }];
  },
  kernels: { cpu: (inputs, attrs) => [bitcastInto(inputs[0]!.concrete(), inputs[0]!.dtype, attrs.dtype)], webgpu: bitwiseGpuEntries.bitcast },
});

export function bitcast(x: TensorLike, dtype: DType): Tensor {
  const t = toTensor(x, "bitcast");
  return applyOp1(bitcastOp, [t], { dtype });
}
