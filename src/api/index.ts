/** Stagecraft's public surface. */
export * from "../ops/index.js";
export { Tensor, SymbolicValueError, type TensorLike, type NestedArray } from "../core/tensor.js";
export { Variable, variable } from "../core/variable.js";
export { type DType, DTYPES, promoteTypes } from "../core/dtype.js";
export { StagecraftError, ShapeError, DtypeError, IndexError, ValueError, NumericsError, GradientError } from "../core/errors.js";
export { GradientTape, type GradientTapeOptions } from "../ad/tape.js";
export { grad, valueAndGrad, vjp, customGradient, type GradOptions, type CustomGradientResult } from "../ad/functional.js";
export { stage, type StageOptions, type StagedFunction } from "../staging/stage.js";
export { spec, TensorSpec } from "../staging/signature.js";
export { cond, whileLoop, scan, type WhileOptions } from "../staging/control-flow.js";
export { hostCall, print, initScope } from "../staging/host.js";
export { ConcreteFunction } from "../staging/concrete-function.js";
export { StagingError } from "../staging/trace-context.js";
export { listDevices, device, type DeviceInfo } from "../core/device.js";
export { printGraph, printLibrary } from "../graph/printer.js";
export { toSExpr, parseSExpr } from "../graph/sexpr.js";
export { graphsEqual } from "../graph/equal.js";
export { verifyGraph, GraphVerificationError } from "../graph/verify.js";
export { Graph, Node, Value, FunctionLibrary } from "../graph/ir.js";
export * as optim from "../optim/index.js";
export { jvp, hvp } from "../ad/functional.js";
// Ops the optimizer introduces (constant, fusedElementwise) must be registered wherever graphs run.
export { optimize, optimizeCopy } from "../graph/passes/index.js";
export { autograph, type AutographOptions } from "../autograph/api.js";
export { ag, AutoGraphError, AssertionFailedError } from "../autograph/operators/index.js";
export { range, relaxShape, assert } from "../autograph/operators/index.js";
// The compiled executor (exec/compile.ts) becomes the default for staged functions.
export { compileGraph, compiledExecutor, interpretExecutor, createCompiledExecutor, type CompiledGraph } from "../exec/compile.js";
// The WebGPU backend: `await initWebGPU()` makes "webgpu:0" available where an adapter exists.
export { initWebGPU, webgpuUnavailable, webgpuStats, webgpuFinish, tidy } from "./webgpu.js";
