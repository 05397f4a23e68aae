/**
 * Every op's WebGPU entry, by op name. To give a new op a WebGPU kernel, add its entry to the
 * family's table (shape.ts, math.ts) or, for an op whose work is inherently on the host, its name
 * to HOST_OPS; test/webgpu-coverage.test.ts fails for a registry op that has neither.
 *
 * Elementwise ops need no entry: the backend renders their expression (api/ wiring names them).
 */
import type { DType } from "../../../core/dtype.js";
import { fill } from "../kernels/layout.js";
import { shapeKernels } from "./shape.js";
import { mathKernels } from "./math.js";
import { view, type WebGpuKernel } from "./types.js";

export const GPU_KERNELS: Readonly<Record<string, WebGpuKernel>> = {
  ...shapeKernels,
  ...mathKernels,
  dimSize: (dev, [x], a: { axis: number }) => [fill(dev, [], "int32", x!.shape[a.axis]!)],
  // (in a plan: a buffer written once, when the plan is made)
  constant(dev, _i, a: { values: number[] }, outs) {
    const o = outs[0]!;
    const id = dev.alloc(4 * a.values.length);
    dev.write(id, o.dtype === "float32" ? Float32Array.from(a.values) : o.dtype === "int32" ? Int32Array.from(a.values) : Uint32Array.from(a.values, (v) => (o.dtype === "bool" ? (v ? 1 : 0) : v)));
    return [{ id, shape: o.shape, dtype: o.dtype }];
  },
  // (the first numInputs inputs are the function's arguments; the rest its values)
  customGradient: (_dev, inputs, a: { numInputs: number }, outs) => inputs.slice(a.numInputs).map((x, i) => view(x, outs[i]!.shape)),
};

/**
 * Ops that run their CPU kernel on the webgpu device's host copies: host callbacks and printing
 * (they hand values to JavaScript), residual records (host-side tables of kept tensors), iteration
 * stacks (growable host storage; rows are uploaded when a GPU kernel reads them).
 */
export const HOST_OPS: readonly string[] = ["hostCall", "print", "assert", "packResiduals", "unpackResiduals", "stackPush", "stackPop", "stackRead", "emptyStack"];

/**
 * Ops that may make, move or convert float64/int64 tensors on the webgpu device: they run on the
 * host for those dtypes (whose storage never leaves it). Every other op raises a DtypeError.
 */
export const WIDE_OPS: readonly string[] = [
  "fill", "fillLike", "range", "eye", "constant", "cast", "reshape", "expandDims", "squeeze", "identity", "stopGradient",
  "randomUniform", "randomNormal", "randomBernoulli", "randomCategorical", "packResiduals", "unpackResiduals", "stackPush", "stackPop", "stackRead", "emptyStack", "dimSize",
];

/** The dtypes whose tensors stay on the host on this device. */
export const HOST_DTYPES: readonly DType[] = ["float64", "int64"];
