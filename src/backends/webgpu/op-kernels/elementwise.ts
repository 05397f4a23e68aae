/**
 * WebGPU entries of elementwise work that is not one op's expression: a group of steps (the
 * fusedElementwise op) as one WGSL kernel. (An op declared with an expression needs no entry: the
 * backend renders it, backend.ts elementwiseKernel.)
 */
import type { ElementwiseGroup } from "../../../core/expr.js";
import type { TensorType } from "../../../core/tensor-type.js";
import { elementwise } from "../kernels/elementwise.js";
import type { WebGpuEntry } from "./types.js";

/** The entry of an op computing the elementwise group `group(attrs, inputs)` describes. */
export function groupGpu<A>(op: string, group: (attrs: A, inputs: readonly TensorType[]) => ElementwiseGroup | null): WebGpuEntry {
  return {
    op,
    gpu: (dev, inputs, attrs: A, outs) => {
      const g = group(attrs, inputs);
      if (!g) throw new Error(`${op}: its attributes describe no elementwise group for these inputs`);
      return elementwise(dev, inputs, g.steps, g.outputs, outs[0]!.shape, op);
    },
  };
}
