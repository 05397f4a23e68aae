/** Constant-filled tensors (zeros, ones, full) and their *Like variants. */
import { allocStorage, DEFAULT_FLOAT, isDType, type DType } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import { checkShape, hasUnknownDims, sizeOf } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { perExample, sameAttrsBatch } from "./batching.js";

export interface FillAttrs {
  shape: number[];
  dtype: DType;
  value: number;
}

/** A constant; an op (not raw storage) so that staging records it as a node. */
export const fillOp = defineOp<FillAttrs>({
  name: "fill",
  batch: perExample,
  family: "creation",
  inputs: [],
  infer(_inputs, attrs) {
    if (!isDType(attrs.dtype)) throw new DtypeError(`unknown dtype ${JSON.stringify(attrs.dtype)}`, "fill");
    return [{ shape: attrs.shape, dtype: attrs.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.fill,
    cpu(_inputs, attrs) {
      const out = allocStorage(attrs.dtype, sizeOf(attrs.shape));
      const v = attrs.dtype === "bool" ? (attrs.value ? 1 : 0) : attrs.value;
      if (v !== 0) out.fill(v);
      return [out];
    },
  },
});

export function full(shape: number[], value: number | boolean, dtype?: DType): Tensor {
  const s = checkShape("full", shape);
  const d = dtype ?? (typeof value === "boolean" ? "bool" : DEFAULT_FLOAT);
  return applyOp1(fillOp, [], { shape: s.slice(), dtype: d, value: Number(value) });
}
export const zeros = (shape: number[], dtype: DType = DEFAULT_FLOAT): Tensor => full(shape, 0, dtype);
export const ones = (shape: number[], dtype: DType = DEFAULT_FLOAT): Tensor => full(shape, 1, dtype);

interface FillLikeAttrs {
  dtype: DType;
  value: number;
}

/**
 * A constant with the shape of its input, known only at run time (used while staging with
 * unknown dims); the input's values are not read, so it has no gradient.
 */
export const fillLikeOp = defineOp<FillLikeAttrs>({
  name: "fillLike",
  batch: sameAttrsBatch,
  family: "creation",
  inputs: ["x"],
  infer: (inputs, attrs) => [{ shape: inputs[0]!.shape, dtype: attrs.dtype }],
  kernels: {
    webgpu: shapeGpu.fillLike,
    cpu(inputs, attrs) {
      const out = allocStorage(attrs.dtype, sizeOf(inputs[0]!.shape));
      const v = attrs.dtype === "bool" ? (attrs.value ? 1 : 0) : attrs.value;
      if (v !== 0) out.fill(v);
      return [out];
    },
  },
});

function fillLike(x: Tensor, value: number, dtype: DType): Tensor {
  if (!hasUnknownDims(x.shape)) return full(x.shape as number[], value, dtype);
  return applyOp1(fillLikeOp, [x], { dtype, value });
}

export function zerosLikeTensor(x: Tensor, dtype?: DType): Tensor {
  return fillLike(x, 0, dtype ?? x.dtype);
}
export function onesLikeTensor(x: Tensor, dtype?: DType): Tensor {
  return fillLike(x, 1, dtype ?? x.dtype);
}
