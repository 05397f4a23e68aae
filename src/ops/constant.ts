/**
 * The `constant` op: a tensor whose values are stored in the node's attributes, as plain
 * JSON-able data `{ dtype, shape, values: number[] }` (NaN and ±Infinity stay numbers, so
 * the text and S-expression forms carry them; ONNX lowers it to a Constant). Constant folding
 * (constant-fold.ts) produces it; it has no inputs, no randomness and no gradient.
 */
import { allocStorage, isDType, type DType } from "../core/dtype.js";
import { DtypeError, ValueError } from "../core/errors.js";
import { checkShape, sizeOf } from "../core/shape.js";
import type { Tensor } from "../core/tensor.js";
import { defineOp } from "./registry.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { perExample } from "./batching.js";

export interface ConstantAttrs {
  dtype: DType;
  shape: number[];
  /** Row-major values (bool as 0/1, int64 as exact doubles). */
  values: number[];
}

export const constantOp = defineOp<ConstantAttrs>({
  name: "constant",
  batch: perExample,
  family: "creation",
  inputs: [],
  infer(_inputs, attrs) {
    if (!isDType(attrs.dtype)) throw new DtypeError(`unknown dtype ${JSON.stringify(attrs.dtype)}`, "constant");
    const shape = checkShape("constant", attrs.shape);
    const values = attrs.values;
    if (!Array.isArray(values)) throw new ValueError(`values must be an array of numbers, got ${typeof values}`, "constant");
    const n = sizeOf(shape);
    if (values.length !== n) throw new ValueError(`shape [${shape.join(", ")}] needs ${n} values, got ${values.length}`, "constant");
    return [{ shape, dtype: attrs.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.constant,
    cpu(_inputs, attrs) {
      const out = allocStorage(attrs.dtype, attrs.values.length);
      const v = attrs.values;
      if (attrs.dtype === "bool") for (let i = 0; i < v.length; i++) out[i] = v[i] ? 1 : 0;
      else for (let i = 0; i < v.length; i++) out[i] = v[i]!;
      return [out];
    },
  },
});

/** The attributes of a `constant` node holding the values of concrete tensor `t`. */
export function constantAttrsOf(t: Tensor): ConstantAttrs {
  const data = t.concrete("fold the value of");
  return { dtype: t.dtype, shape: t.shape.slice(), values: Array.from(data as ArrayLike<number>) };
}
