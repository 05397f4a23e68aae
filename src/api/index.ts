/**
 * Stagecraft's public surface: what users call, listed name by name. Internals (the compiled
 * executor, op declarations, backends, passes' helpers) are in the `stagecraft/internals` entry
 * (internals.ts). This module also wires the layers together, once (wiring.ts).
 */
// (first: in browsers this is the platform seam's browser side, which must run before Babel's modules)
import "../core/platform/node.js";
import { wire } from "./wiring.js";

wire();

// tensors, variables, dtypes, devices, errors
export { Tensor, SymbolicValueError, TensorCoercionError, type TensorLike, type NestedArray } from "../core/tensor.js";
export { Variable, variable } from "../core/variable.js";
export { type DType, DTYPES, promoteTypes } from "../core/dtype.js";
export { listDevices, device, type DeviceInfo } from "../core/device.js";
export { StagecraftError, ShapeError, DtypeError, IndexError, ValueError, NumericsError, GradientError, AllocationError, RecursionDepthError } from "../core/errors.js";

// ops, as functions (they are Tensor methods too)
export { tensor, scalar, full, zeros, ones, fullLike, zerosLike, onesLike, arange, linspace, eye, oneHot } from "../ops/creation.js";
export {
  neg, abs, sign, exp, log, log1p, expm1, sqrt, rsqrt, square, reciprocal, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh,
  sigmoid, relu, softplus, erf, gelu, floor, ceil, round, isNaN, isFinite, leakyRelu, elu,
} from "../ops/unary.js";
export { asinh, acosh, atanh } from "../ops/hyperbolic.js";
export { add, sub, mul, div, floorDiv, mod, pow, maximum, minimum, atan2, squaredDifference } from "../ops/binary.js";
export { truncDiv, fmod } from "../ops/remainder.js";
export { bitwiseAnd, bitwiseOr, bitwiseXor, bitwiseNot, bitShiftLeft, bitShiftRight } from "../ops/bitwise.js";
export { bitcast } from "../ops/bitcast.js";
export { equal, notEqual, less, lessEqual, greater, greaterEqual, logicalAnd, logicalOr, logicalXor, logicalNot } from "../ops/compare.js";
export { where } from "../ops/where.js";
export { cast } from "../ops/cast.js";
export { identity, stopGradient } from "../ops/identity.js";
export { toDevice } from "../ops/to-device.js";
export { sum, mean, prod, max, min, argMax, argMin, logSumExp, variance, any, all, cumsum, sumTo, type AxisArg } from "../ops/reduce.js";
export {
  reshape, broadcastTo, broadcastLike, transpose, expandDims, squeeze, concat, stack, unstack, split, slice, gather, gatherND,
  scatterAdd, pad, tile, flip, clip, type PadMode,
} from "../ops/shape.js";
export { gatherElements, scatterElements, scatterND, type ScatterReduction } from "../ops/shape/elements.js";
export { matmul, dot, outer, einsum } from "../ops/linalg.js";
export {
  softmax, logSoftmax, conv2d, conv2dTranspose, maxPool2d, avgPool2d, topK, sort, argsort,
  type Padding2d, type Conv2dOptions, type Conv2dTransposeOptions, type Pool2dOptions, type SortOptions,
} from "../ops/nn.js";
export { checkNumerics } from "../ops/numerics.js";
export { stackPush, stackPop, stackRead, emptyStack } from "../ops/iteration-stack.js";
export * as random from "./random.js";
// settings: the determinism switch (sc.config.setDeterministic)
export * as config from "./config.js";
// the op set, for extending it (docs/architecture.md: where an op lives)
export { getOp, listOps, applyOp, defineOp, type OpDef, type TensorType, type VjpContext } from "../ops/registry.js";

// differentiation
export { vmap, BatchedTensor, type VmapOptions } from "../vmap/vmap.js";
export { jacrev, jacfwd, hessian } from "../vmap/jacobian.js";
export { GradientTape, type GradientTapeOptions } from "../ad/tape.js";
export { grad, valueAndGrad, vjp, jvp, hvp, customGradient, type GradOptions, type CustomGradientResult } from "../grad/functional.js";

// staging
export { stage, type StageOptions, type StagedFunction } from "../staging/stage.js";
export { spec, TensorSpec } from "../staging/signature.js";
export { cond, whileLoop, scan, type WhileOptions } from "../staging/control-flow.js";
export { hostCall, print, initScope } from "../staging/host.js";
export { ConcreteFunction } from "../staging/concrete-function.js";
export { StagingError } from "../staging/trace-context.js";

// graphs: reading, writing, checking and optimizing them
export { Graph, Node, Value, FunctionLibrary } from "../graph/ir.js";
export { printGraph, printLibrary } from "../graph/printer.js";
export { toSExpr, parseSExpr } from "../graph/sexpr.js";
export { graphsEqual } from "../graph/equal.js";
export { verifyGraph, GraphVerificationError } from "../graph/verify.js";
export { optimize, optimizeCopy } from "../graph/passes/index.js";

// AutoGraph
export { autograph, type AutographOptions } from "../autograph/api.js";
export { ag, AutoGraphError, AssertionFailedError, range, relaxShape, assert } from "../autograph/operators/index.js";

// models
export * as nn from "../nn/index.js";
export * as optim from "../optim/index.js";
export * as io from "../io/index.js";
export * as data from "../data/index.js";
export * as onnx from "../onnx/index.js";
export * as distributed from "../distributed/index.js";
export * as remote from "../remote/index.js";

// The WebGPU backend: `await initWebGPU()` makes "webgpu:0" available where an adapter exists.
export { initWebGPU, webgpuUnavailable, webgpuStats, webgpuFinish, tidy } from "./webgpu.js";
