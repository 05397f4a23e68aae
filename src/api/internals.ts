/**
 * `stagecraft/internals`: the parts of Stagecraft below its public surface, for tools, tests and
 * new backends. No stability promise: these follow the code's layout (docs/architecture.md).
 *
 * - executors: the compiled executor's entry points and its specializations, the reference
 *   interpreter, and installing the executor staged functions run on;
 * - op declarations (every `*Op`, structural ones included) and the registry's lookups;
 * - backends: the provider interface, registering one, and the elementwise expression form
 *   they render;
 * - graph helpers the passes share.
 */
import { wire } from "./wiring.js";

wire();

export { compiledExecutor, createCompiledExecutor, interpretExecutor, configuredExecutor, DEFAULT_COMPILE_AFTER, type Executor } from "../exec/executor.js";
export { compileGraph, compiledSpecializations } from "../exec/compiled/cache.js";
export { CompiledGraph, type OutputDesc } from "../exec/compiled/graph.js";
export { interpret, runNode } from "../exec/interpreter.js";
export { setDefaultExecutor } from "../staging/concrete-function.js";
export { setDefaultEngine, currentDefaultEngine } from "../staging/stage.js";

export * from "../ops/index.js";
export { lookupOp, structuralOp, listStructuralOps, kernelFor, runOp, type AnyOpDef, type StructuralOpDef, type StructuralForm, type OpKernels, type OnnxLowering } from "../ops/registry.js";
export { condOp, whileOp, callOp, readVariableOp, assignVariableOp } from "../ops/structural.js";
export { hostCallOp, printOp, assertOp } from "../ops/host.js";
export { customGradientOp } from "../ops/custom-gradient.js";
export { constantOp } from "../ops/constant.js";
export { fusedElementwiseOp, fusedKernel, fusedKernelSource, type FusedAttrs } from "../ops/fused.js";

export type { Backend, GroupKernel } from "../backends/backend.js";
export { registerBackend, backendOf, cpuBackend } from "../backends/registry.js";
export * as expr from "../core/expr.js";
export type { DeviceBuffer } from "../core/tensor.js";

export { planMemory, cloneGraph, cloneProgram, refineTypes, fuse, inline, prune, cse, simplify, constantFold } from "../graph/passes/index.js";
