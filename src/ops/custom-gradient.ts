/**
 * The custom-gradient op (grad/functional.ts customGradient makes it): inputs are the function's
 * inputs followed by the values it computed (kept as computed, so the forward runs once); its
 * VJP is the user's gradient function. When the op is replayed (a staged function being
 * differentiated), the gradient function is obtained by running the registered function again
 * on the replayed inputs.
 */
import { GradientError } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import { defineOp } from "./registry.js";
import { zerosLikeTensor } from "./fill.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { refuseBatch } from "./batching.js";

export interface CustomGradientResult {
  value: Tensor | Tensor[];
  /** Receives the cotangent(s) of value; returns one gradient per tensor input (null = zero). */
  grad: (...cotangents: Tensor[]) => Tensor | null | (Tensor | null)[];
}

export interface CustomGradientAttrs {
  fnId: number;
  numInputs: number;
}

const customFunctions = new Map<number, (...inputs: Tensor[]) => CustomGradientResult>();
const gradientOfOutput = new WeakMap<Tensor, CustomGradientResult["grad"]>();
let nextCustomId = 1;

/** Registers a function that computes a value and its gradient; returns the id its nodes carry. */
export function registerCustomFunction(f: (...inputs: Tensor[]) => CustomGradientResult): number {
  const id = nextCustomId++;
  customFunctions.set(id, f);
  return id;
}

/** Keeps the gradient function of the call that produced `output` (the op's first output). */
export function rememberGradient(output: Tensor, grad: CustomGradientResult["grad"]): void {
  gradientOfOutput.set(output, grad);
}

export const customGradientOp = defineOp<CustomGradientAttrs>({
  name: "customGradient",
  batch: refuseBatch("its VJP is a closure over one call's tensors"),
  family: "ad",
  inputs: ["inputs"],
  variadic: true,
  infer: (inputs, a) => inputs.slice(a.numInputs).map((t) => ({ shape: t.shape, dtype: t.dtype })),
  kernels: { cpu: (inputs, a) => inputs.slice(a.numInputs).map((t) => t.concrete()), webgpu: shapeGpu.customGradient },
  vjp(ctx, cts) {
    const xs = ctx.inputs.slice(0, ctx.attrs.numInputs);
    const values = ctx.outputs;
    const grad = gradientOfOutput.get(values[0]!) ?? customFunctions.get(ctx.attrs.fnId)!(...xs).grad;
    const g = grad(...cts.map((c, i) => c ?? zerosLikeTensor(values[i]!)));
    const list = Array.isArray(g) ? g : [g];
    if (list.length !== xs.length) {
      throw new GradientError(`the custom gradient returned ${list.length} gradients for ${xs.length} inputs`, "customGradient");
    }
    return [...list, ...values.map(() => null)];
  },
});
