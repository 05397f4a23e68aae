/**
 * The WebGPU backend's kernel entries: what an op's `kernels.webgpu` is (the CPU's is
 * backends/cpu/kernel.ts). The op's declaration in src/ops names its entry (`kernels: { cpu,
 * webgpu }`), as it names its CPU kernel; elementwise ops name none (the backend renders their
 * expression as WGSL). A test checks that every registry op has one and that it is the op's own.
 *
 * A GPU kernel gets the device, its inputs as GPU arrays (buffer, shape, dtype), the op's
 * attributes and the output types `infer` gave, and returns the outputs' arrays. Returning an
 * input's array unchanged (same buffer id) means the output shares its storage (a view: reshape,
 * identity).
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import type { GpuArray } from "../kernels/common.js";

export interface OutType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export type WebGpuKernel<A = any> = (dev: KernelDevice, inputs: GpuArray[], attrs: A, outs: readonly OutType[]) => GpuArray[];

/** An op's `kernels.webgpu`. */
export interface WebGpuEntry {
  /** The op's name (for errors). */
  readonly op: string;
  /** The GPU kernel. */
  readonly gpu?: WebGpuKernel;
  /**
   * The op's work is on the host (it calls JavaScript, or keeps host-side tables): the backend runs
   * the op's CPU kernel on host copies of the inputs and keeps its outputs on the host until a GPU
   * kernel needs them.
   */
  readonly host?: true;
  /**
   * The op may make, move or convert tensors of dtypes WGSL has no type for (float64, int64, ...:
   * storage.ts hostDtype): for those it runs its CPU kernel on the host. Any other op raises a
   * DtypeError for them.
   */
  readonly wide?: true;
}

/** Entries for a family's GPU kernels, each named by its key (the op's name); `wide` lists the ops that also run on host dtypes. */
export function gpuEntries<K extends string>(kernels: Record<K, WebGpuKernel>, wide: readonly NoInfer<K>[] = []): Readonly<Record<K, WebGpuEntry>> {
  const out = {} as Record<K, WebGpuEntry>;
  for (const op of Object.keys(kernels) as K[]) out[op] = { op, gpu: kernels[op], ...(wide.includes(op) ? { wide: true as const } : {}) };
  return out;
}

/** The entry of an op whose work is on the host (host calls, printing, residual records, iteration stacks). */
export function onHost(op: string): WebGpuEntry {
  return { op, host: true };
}

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
