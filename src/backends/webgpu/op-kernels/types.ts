/**
 * The WebGPU backend's kernel entries: what an op's `kernels.webgpu` is (the CPU's is
 * backends/cpu/kernel.ts). An entry gets the device, its inputs as GPU arrays (buffer, shape,
 * dtype), the op's attributes and the output types `infer` gave, and returns the outputs' arrays.
 * Returning an input's array unchanged (same buffer id) means the output shares its storage (a
 * view: reshape, identity).
 *
 * Entries are keyed by op name (op-kernels/index.ts); api/ wiring installs them into the op
 * declarations, and a test checks that every registry op has one.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import type { GpuArray } from "../kernels/common.js";

export interface OutType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export type WebGpuKernel<A = any> = (dev: KernelDevice, inputs: GpuArray[], attrs: A, outs: readonly OutType[]) => GpuArray[];

/** Product of shape[from:to]. */
export function prod(shape: readonly number[], from = 0, to = shape.length): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= shape[i]!;
  return n;
}

/** The same buffer seen with another shape (a view). */
export function view(x: GpuArray, shape: readonly number[]): GpuArray {
  return { id: x.id, shape, dtype: x.dtype };
}
