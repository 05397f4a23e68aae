/** Shape ops: views and rearrangements of data. */
import { ShapeError } from "../core/errors.js";
import { checkShape, fmtShape, shapesEqual, sizeOf, broadcastShapes } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { allocStorage } from "../core/dtype.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { sumTo } from "./reduce.js";
import { elementwiseLoop } from "../backends/cpu/elementwise.js";

export interface ReshapeAttrs {
  shape: number[];
}

export const reshapeOp = defineOp<ReshapeAttrs>({
  name: "reshape",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (sizeOf(attrs.shape) !== sizeOf(x.shape)) {
      throw new ShapeError(`cannot reshape a tensor of shape ${fmtShape(x.shape)} (size ${sizeOf(x.shape)}) to ${fmtShape(attrs.shape)} (size ${sizeOf(attrs.shape)})`, "reshape");
    }
    return [{ shape: attrs.shape, dtype: x.dtype }];
  },
  // Storage is immutable once created, so a reshape shares it.
  kernel(inputs) {
    return [inputs[0]!.concrete()];
  },
  vjp(ctx, cts) {
    return [reshape(cts[0]!, ctx.inputs[0]!.shape)];
  },
});

/** Reshape; one dimension may be -1 (inferred). */
export function reshape(x: TensorLike, shape: readonly number[]): Tensor {
  const t = toTensor(x, "reshape");
  const s = checkShape("reshape", shape as number[], true).slice();
  const inferAt = s.indexOf(-1);
  if (inferAt >= 0) {
    const known = s.reduce((p, d, i) => (i === inferAt ? p : p * d), 1);
    if (known === 0 || t.size % known !== 0) {
      throw new ShapeError(`cannot reshape a tensor of shape ${fmtShape(t.shape)} (size ${t.size}) to ${fmtShape(shape)}`, "reshape");
    }
    s[inferAt] = t.size / known;
  }
  if (shapesEqual(s, t.shape)) return t;
  return applyOp1(reshapeOp, [t], { shape: s });
}

export interface BroadcastToAttrs {
  shape: number[];
}

export const broadcastToOp = defineOp<BroadcastToAttrs>({
  name: "broadcastTo",
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const out = broadcastShapes("broadcastTo", x.shape, attrs.shape);
    if (!shapesEqual(out, attrs.shape)) {
      throw new ShapeError(`cannot broadcast shape ${fmtShape(x.shape)} to ${fmtShape(attrs.shape)}`, "broadcastTo");
    }
    return [{ shape: attrs.shape, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const out = allocStorage(outs[0]!.dtype, sizeOf(attrs.shape));
    elementwiseLoop("a", 1)([x.concrete()], [x.shape], out, attrs.shape);
    return [out];
  },
  vjp(ctx, cts) {
    return [sumTo(cts[0]!, ctx.inputs[0]!.shape)];
  },
});

export function broadcastTo(x: TensorLike, shape: readonly number[]): Tensor {
  const t = toTensor(x, "broadcastTo");
  const s = checkShape("broadcastTo", shape as number[]).slice();
  if (shapesEqual(s, t.shape)) return t;
  return applyOp1(broadcastToOp, [t], { shape: s });
}

declare module "../core/tensor.js" {
  interface Tensor {
    reshape(shape: readonly number[]): Tensor;
    broadcastTo(shape: readonly number[]): Tensor;
  }
}
installMethods({ reshape, broadcastTo });
