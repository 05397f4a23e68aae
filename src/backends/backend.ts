/**
 * Backends as providers. A backend keeps the storage of the tensors on its devices and runs
 * kernels on it; ops reach it through this one interface, selected per device (ops/registry.ts
 * dispatches an op call to the backend of the current device). The CPU backend (cpu/backend.ts:
 * TypeScript kernels, WebAssembly SIMD, worker threads) is the first implementation.
 *
 * What a backend is given is plain data, never an op: an op's kernel for this backend (the
 * entry `OpDef.kernels[kind]`, whose shape the backend defines: cpu/backend.ts CpuKernel), its
 * inputs as tensors, and for elementwise work the expressions of core/expr.ts, which each backend
 * renders itself (the CPU as JavaScript and WebAssembly SIMD; a GPU backend as WGSL). An
 * elementwise op that declares no kernel for a backend runs the kernel that backend renders from
 * its expression, so a new backend runs every elementwise op without touching the ops.
 *
 * Memory that is not host memory (a GPU buffer) lives in a tensor as a DeviceBuffer
 * (core/tensor.ts): `await t.data()` reads any tensor; `dataSync()` only reads those whose
 * backend can answer at once (readSync), and says to await `data()` otherwise.
 */
import type { DType, TypedArray } from "../core/dtype.js";
import type { ElementwiseForm, ElementwiseGroup } from "../core/expr.js";
import type { Tensor } from "../core/tensor.js";
import type { TensorType } from "../core/tensor-type.js";

/** A kernel computing a fused elementwise group: reads `inputs`, writes `outputs` (storage of this backend). */
export type GroupKernel<S> = (inputs: S[], outputs: S[]) => void;

export interface Backend<S = unknown> {
  /** The key of this backend's kernels in OpDef.kernels ("cpu", "webgpu"); devices of this kind run here. */
  readonly kind: string;
  /** The devices this backend serves (core/device.ts lists them), the first being the default. */
  readonly devices: readonly { name: string; description: string }[];
  /** New storage of `size` elements of `dtype` (zeros). */
  allocate(dtype: DType, size: number): S;
  /** New storage holding a copy of host data (the CPU may keep the array itself: storage is immutable). */
  upload(data: TypedArray, dtype: DType): S;
  /** A tensor of this backend holding `storage`. */
  tensor(storage: S, shape: readonly number[], dtype: DType, device: string): Tensor;
  /** The storage of a concrete tensor of this backend. */
  storage(t: Tensor): S;
  /** The values of a tensor of this backend as host data, now; null when only `read` can give them. */
  readSync(t: Tensor): TypedArray | null;
  /** The values of a tensor of this backend as host data, once they are ready. */
  read(t: Tensor): Promise<TypedArray>;
  /** Runs an op's kernel for this backend (its entry in OpDef.kernels) on concrete inputs: each output's storage. */
  run(kernel: unknown, inputs: Tensor[], attrs: unknown, outs: readonly TensorType[]): S[];
  /** The kernel (in this backend's OpDef.kernels form) of an elementwise op, rendered from its expression. */
  elementwiseKernel(form: ElementwiseForm): unknown;
  /** A kernel computing a group of elementwise steps over `outShape` for inputs of these types (one loop, no intermediates). */
  groupKernel(group: ElementwiseGroup, inputs: readonly TensorType[], outShape: readonly number[]): GroupKernel<S>;
}
