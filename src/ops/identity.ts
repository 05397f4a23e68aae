/** identity and stopGradient. */
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";

export const identityOp = defineOp({
  name: "identity",
  family: "shape",
  view: "alias",
  inputs: ["x"],
  infer: (inputs) => [{ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype }],
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()] },
  vjp: (_ctx, cts) => [cts[0]!],
});

/** Passes the value through but blocks gradients (the VJP is zero). */
export const stopGradientOp = defineOp({
  name: "stopGradient",
  family: "nn",
  view: "alias",
  inputs: ["x"],
  infer: (inputs) => [{ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype }],
  kernels: { cpu: (inputs) => [inputs[0]!.concrete()] },
  vjp: () => [null],
});

export const identity = (x: TensorLike): Tensor => applyOp1(identityOp, [toTensor(x, "identity")], {});
export const stopGradient = (x: TensorLike): Tensor => applyOp1(stopGradientOp, [toTensor(x, "stopGradient")], {});
