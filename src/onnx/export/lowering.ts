/**
 * What an op's ONNX lowering is: the registry's `onnx` slot (ops/registry.ts OnnxLowering) is
 * declared empty there, so that ops know nothing of ONNX; this module gives it its shape, and
 * lowerings/ fills the slot of every op it can lower (installLowerings).
 */
import type { TensorType } from "../../core/tensor-type.js";
import type { OnnxBuilder } from "./builder.js";

/** What a lowering sees of the node it lowers. */
export interface LowerNode<A = any> {
  readonly op: string;
  readonly attrs: A;
  readonly inputTypes: readonly TensorType[];
  readonly outputTypes: readonly TensorType[];
}

/** Emits the ONNX nodes computing the node's outputs from its inputs (ONNX value names); returns the outputs' names. */
export type LowerFn<A = any> = (b: OnnxBuilder, inputs: string[], node: LowerNode<A>) => string[];

declare module "../../ops/registry.js" {
  interface OnnxLowering {
    lower?: LowerFn;
    /** Why the op has no ONNX form (export fails with this reason). */
    refused?: string;
  }
}
