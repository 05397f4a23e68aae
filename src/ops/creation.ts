/** Creation: tensor, scalar, arange, linspace, eye, fullLike, zerosLike, onesLike, oneHot. */
import { allocStorage, DEFAULT_FLOAT, isDType, type DType } from "../core/dtype.js";
import { hasUnknownDims } from "../core/shape.js";
import { DtypeError, IndexError, ValueError } from "../core/errors.js";
import { makeTensor, Tensor, type TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { fillLikeOp, full, zerosLikeTensor, onesLikeTensor } from "./fill.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { perExample } from "./batching.js";

export { full, zeros, ones } from "./fill.js";

/** A tensor from a number, boolean, (nested) array or typed array. */
export function tensor(value: TensorLike, dtype?: DType, shape?: number[]): Tensor {
  return makeTensor("tensor", value, shape, dtype);
}

export function scalar(value: number | boolean, dtype?: DType): Tensor {
  if (typeof value !== "number" && typeof value !== "boolean") throw new ValueError(`scalar() takes a number or boolean, got ${typeof value}`, "scalar");
  return makeTensor("scalar", value, undefined, dtype);
}

/**
 * A tensor of x's shape filled with `value` (dtype: `dtype`, else x's). While a function is
 * staged it follows x's shape when the graph runs, unknown (null inputSignature) dims included.
 */
export function fullLike(x: TensorLike, value: number | boolean, dtype?: DType): Tensor {
  const t = toTensor(x, "fullLike");
  if (dtype !== undefined && !isDType(dtype)) throw new DtypeError(`unknown dtype ${JSON.stringify(dtype)}`, "fullLike");
  if (typeof value !== "number" && typeof value !== "boolean") throw new ValueError(`value must be a number or boolean, got ${typeof value}`, "fullLike");
  const d = dtype ?? t.dtype;
  if (!hasUnknownDims(t.shape)) return full(t.shape as number[], value, d);
  return applyOp1(fillLikeOp, [t], { dtype: d, value: Number(value) });
}

export const zerosLike = (x: TensorLike, dtype?: DType): Tensor => zerosLikeTensor(toTensor(x, "zerosLike"), dtype);
export const onesLike = (x: TensorLike, dtype?: DType): Tensor => onesLikeTensor(toTensor(x, "onesLike"), dtype);

interface RangeAttrs {
  start: number;
  step: number;
  size: number;
  dtype: DType;
}

export const rangeOp = defineOp<RangeAttrs>({
  name: "range",
  batch: perExample,
  family: "creation",
  inputs: [],
  infer: (_i, a) => [{ shape: [a.size], dtype: a.dtype }],
  kernels: {
    webgpu: shapeGpu.range,
    cpu(_i, a) {
      const out = allocStorage(a.dtype, a.size);
      for (let i = 0; i < a.size; i++) out[i] = a.start + i * a.step;
      return [out];
    },
  },
});

/** arange(stop) / arange(start, stop, step): like numpy.arange. Integer arguments give int32. */
export function arange(start: number, stop?: number, step = 1, dtype?: DType): Tensor {
  if (stop === undefined) [start, stop] = [0, start];
  for (const [k, v] of [["start", start], ["stop", stop], ["step", step]] as const) {
    if (typeof v !== "number" || !Number.isFinite(v)) throw new ValueError(`${k} must be a finite number, got ${String(v)}`, "arange");
  }
  if (step === 0) throw new ValueError("step must not be 0", "arange");
  const size = Math.max(0, Math.ceil((stop - start) / step));
  const d = dtype ?? ([start, stop, step].every(Number.isInteger) ? "int32" : DEFAULT_FLOAT);
  return applyOp1(rangeOp, [], { start, step, size, dtype: d });
}

/** `num` evenly spaced values from start to stop inclusive. */
export function linspace(start: number, stop: number, num: number, dtype: DType = DEFAULT_FLOAT): Tensor {
  if (!Number.isInteger(num) || num < 0) throw new ValueError(`num must be a non-negative integer, got ${num}`, "linspace");
  const step = num > 1 ? (stop - start) / (num - 1) : 0;
  return applyOp1(rangeOp, [], { start, step, size: num, dtype });
}

interface EyeAttrs {
  n: number;
  m: number;
  dtype: DType;
}

export const eyeOp = defineOp<EyeAttrs>({
  name: "eye",
  batch: perExample,
  family: "creation",
  inputs: [],
  infer: (_i, a) => [{ shape: [a.n, a.m], dtype: a.dtype }],
  kernels: {
    webgpu: shapeGpu.eye,
    cpu(_i, a) {
      const out = allocStorage(a.dtype, a.n * a.m);
      for (let i = 0; i < Math.min(a.n, a.m); i++) out[i * a.m + i] = 1;
      return [out];
    },
  },
});

export function eye(n: number, m: number = n, dtype: DType = DEFAULT_FLOAT): Tensor {
  for (const v of [n, m]) if (!Number.isInteger(v) || v < 0) throw new ValueError(`sizes must be non-negative integers, got ${n}, ${m}`, "eye");
  return applyOp1(eyeOp, [], { n, m, dtype });
}

interface OneHotAttrs {
  depth: number;
  dtype: DType;
}

export const oneHotOp = defineOp<OneHotAttrs>({
  name: "oneHot",
  batch: perExample,
  family: "creation",
  inputs: ["indices"],
  infer(inputs, a) {
    const x = inputs[0]!;
    if (x.dtype !== "int32" && x.dtype !== "int64" && x.dtype !== "uint8") {
      throw new DtypeError(`indices must be an integer tensor, got ${x.dtype}`, "oneHot");
    }
    return [{ shape: [...x.shape, a.depth], dtype: a.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.oneHot,
    cpu(inputs, a) {
      const idx = inputs[0]!.concrete();
      const out = allocStorage(a.dtype, idx.length * a.depth);
      for (let i = 0; i < idx.length; i++) {
        const k = idx[i]!;
        if (k < 0 || k >= a.depth) throw new IndexError(`index ${k} at position ${i} is out of range for depth ${a.depth}`, "oneHot");
        out[i * a.depth + k] = 1;
      }
      return [out];
    },
  },
});

/** One-hot encoding along a new last axis. */
export function oneHot(indices: TensorLike, depth: number, dtype: DType = DEFAULT_FLOAT): Tensor {
  if (!Number.isInteger(depth) || depth < 1) throw new ValueError(`depth must be a positive integer, got ${depth}`, "oneHot");
  const t = indices instanceof Tensor ? toTensor(indices, "oneHot") : makeTensor("oneHot", indices, undefined, "int32");
  return applyOp1(oneHotOp, [t], { depth, dtype });
}

