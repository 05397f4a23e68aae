/** identity and stopGradient. */
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { sameAttrsBatch } from "./batching.js";

export const identityOp = defineOp({
  name: "identity",
  batch: sameAttrsBatch,
  family: "shape",
  view: "alias",
  inputs: ["x"],
  infer: (inputs) => [{ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype }],
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()], webgpu: shapeGpu.identity },
  vjp: (_ctx, cts) => [cts[0]!],
});

/** Passes the value through but blocks gradients (the VJP is zero). */
export const stopGradientOp = defineOp({
  name: "stopGradient",
  batch: sameAttrsBatch,
  family: "nn",
  view: "alias",
  inputs: ["x"],
  infer: (inputs) => [{ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype }],
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()], webgpu: shapeGpu.stopGradient },
  vjp: () => [null],
});

export const identity = (x: TensorLike): Tensor => applyOp1(identityOp, [toTensor(x, "identity")], {});
export const stopGradient = (x: TensorLike): Tensor => applyOp1(stopGradientOp, [toTensor(x, "stopGradient")], {});
