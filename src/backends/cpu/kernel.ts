/** The shape of a CPU kernel (an op's `kernels.cpu`): concrete inputs in host memory to the storage of each output. */
import type { TypedArray } from "../../core/dtype.js";
import type { Tensor } from "../../core/tensor.js";
import type { TensorType } from "../../core/tensor-type.js";

/** Computes an op's outputs (types from its shape rule) from concrete inputs; returns each output's storage. */
export type CpuKernel<A = any> = (inputs: Tensor[], attrs: A, outs: TensorType[]) => TypedArray[];
