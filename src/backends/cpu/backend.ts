/**
 * The CPU backend: host memory (typed arrays, shared by views since storage is immutable),
 * TypeScript kernels, WebAssembly SIMD and worker threads (matmul.ts, conv.ts, worker-pool.ts),
 * and JavaScript rendered from elementwise expressions (elementwise.ts, fused.ts).
 */
import { allocStorage, type DType, type TypedArray } from "../../core/dtype.js";
import type { ElementwiseForm, ElementwiseGroup } from "../../core/expr.js";
import { Tensor } from "../../core/tensor.js";
import type { TensorType } from "../../core/tensor-type.js";
import type { Backend } from "../backend.js";
import { elementwiseKernel } from "./elementwise.js";
import { groupLoop } from "./fused.js";
import type { CpuKernel } from "./kernel.js";

export const cpuBackend: Backend = {
  kind: "cpu",
  devices: [{ name: "cpu:0", description: "CPU (TypeScript kernels, WebAssembly SIMD, worker threads)" }],
  allocate: (dtype: DType, size: number) => allocStorage(dtype, size),
  upload: (data: TypedArray) => data,
  tensor: (storage, shape, dtype, device) => new Tensor(storage as TypedArray, shape, dtype, device),
  storage: (t) => t.concrete(),
  readSync: (t) => t.concrete(),
  read: async (t) => t.concrete(),
  run: (kernel, inputs, attrs, outs) => (kernel as CpuKernel)(inputs, attrs, outs as TensorType[]),
  elementwiseKernel: (form: ElementwiseForm) => elementwiseKernel(form),
  groupKernel(group: ElementwiseGroup, inputs: readonly TensorType[], outShape: readonly number[]) {
    const loop = groupLoop(
      group,
      inputs.map((t) => t.shape),
      outShape,
    );
    return (ins, outs) => loop(ins as TypedArray[], outs as TypedArray[]);
  },
};
