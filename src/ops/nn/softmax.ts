/** softmax and logSoftmax (numerically stable, max-shifted). */
import { allocStorage, isFloat, type DType, type TypedArray } from "../../core/dtype.js";
import { normalizeAxis, sizeOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { applyOp1, defineOp, type OpDef, type TensorType } from "../registry.js";
import { toTensor } from "../convert.js";
import { installMethods } from "../methods.js";
import { exp } from "../unary.js";
import { mul, sub } from "../binary.js";
import { sum } from "../reduce.js";
import { mathGpu } from "../../backends/webgpu/op-kernels/math.js";
import { axisBatch } from "../batching.js";

export interface SoftmaxAttrs {
  /** Normalized (non-negative) axis. */
  axis: number;
}

/** Dtype of a float-valued result: float inputs keep theirs, integer and bool give float32. */
function floatResult(d: DType): DType {
  return isFloat(d) ? d : "float32";
}

/** Views `shape` as [outer, shape[axis], inner]. */
export function splitAt(shape: Shape, axis: number): [number, number, number] {
  let outer = 1, inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  return [outer, shape[axis]!, inner];
}

/** Numerically stable (max-shifted) softmax or log-softmax of every [outer, n, inner] slice. */
function softmaxKernel(x: TypedArray, out: TypedArray, outer: number, n: number, inner: number, log: boolean): void {
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * n * inner + i;
      const end = base + n * inner;
      let m = -Infinity;
      let nan = false;
      for (let j = base; j < end; j += inner) {
        const v = x[j]!;
        if (v > m) m = v;
        else if (v !== v) nan = true;
      }
      if (nan) m = NaN;
      let s = 0;
      if (log) {
        for (let j = base; j < end; j += inner) s += Math.exp(x[j]! - m);
        // (x - m) - log s, not x - (m + log s): a lone -0 gives +0 (-0 - -0), as onnxruntime and PyTorch
        const ls = Math.log(s);
        for (let j = base; j < end; j += inner) out[j] = x[j]! - m - ls;
      } else {
        for (let j = base; j < end; j += inner) {
          const e = Math.exp(x[j]! - m);
          out[j] = e;
          s += e;
        }
        const r = 1 / s;
        for (let j = base; j < end; j += inner) out[j] = out[j]! * r;
      }
    }
  }
}

function defineSoftmax(name: "softmax" | "logSoftmax", log: boolean): OpDef<SoftmaxAttrs> {
  return defineOp<SoftmaxAttrs>({
    name,
    batch: axisBatch,
    family: "nn",
    inputs: ["x"],
    infer(inputs, attrs): TensorType[] {
      const x = inputs[0]!;
      normalizeAxis(name, attrs.axis, x.shape.length);
      return [{ shape: x.shape, dtype: floatResult(x.dtype) }];
    },
    kernels: {
      webgpu: mathGpu[name],
      cpu(inputs, attrs, outs) {
        const x = inputs[0]!;
        const o = outs[0]!;
        const out = allocStorage(o.dtype, sizeOf(o.shape));
        const [outer, n, inner] = splitAt(x.shape, attrs.axis);
        softmaxKernel(x.concrete(), out, outer, n, inner, log);
        return [out];
      },
    },
    vjp(ctx, cts) {
      const y = ctx.outputs[0]!;
      const dy = cts[0]!;
      const axis = ctx.attrs.axis;
      // softmax: y * (dy - sum(dy * y)); logSoftmax: dy - exp(y) * sum(dy)
      if (log) return [sub(dy, mul(exp(y), sum(dy, axis, true)))];
      return [mul(y, sub(dy, sum(mul(dy, y), axis, true)))];
    },
  });
}

export const softmaxOp = defineSoftmax("softmax", false);
export const logSoftmaxOp = defineSoftmax("logSoftmax", true);

/** exp(x) / sum(exp(x)) along `axis` (default the last), computed with a max shift. Integer inputs give float32. */
export function softmax(x: TensorLike, axis = -1): Tensor {
  const t = toTensor(x, "softmax");
  return applyOp1(softmaxOp, [t], { axis: normalizeAxis("softmax", axis, t.rank) });
}

/** x - log(sum(exp(x))) along `axis` (default the last), computed with a max shift. */
export function logSoftmax(x: TensorLike, axis = -1): Tensor {
  const t = toTensor(x, "logSoftmax");
  return applyOp1(logSoftmaxOp, [t], { axis: normalizeAxis("logSoftmax", axis, t.rank) });
}

declare module "../../core/tensor.js" {
  interface Tensor {
    softmax(axis?: number): Tensor;
    logSoftmax(axis?: number): Tensor;
  }
}
installMethods({ softmax, logSoftmax });
