/**
 * The op registry: every op is declared once, here-shaped, and every layer reads the same
 * declaration: eager execution (kernels per backend), tracing (infer), the tape and the graph
 * AD transform (vjp), the optimizer (effects, view, elementwise expression), the executors
 * (kernels, elementwise expression, reduction and product facts) and exporters (onnx).
 *
 * Structural ops (cond, while, call, readVariable, assignVariable: ops/structural.ts) are
 * declared here too, with the facts passes and the verifier need about their regions; the
 * executors run them (they have no kernels).
 */
import type { DType } from "../core/dtype.js";
import { roundStorageToFloat16 } from "../core/float16.js";
import type { ElementwiseForm, ElementwiseGroup, ReductionForm } from "../core/expr.js";
import type { Tensor } from "../core/tensor.js";
import type { TensorType } from "../core/tensor-type.js";
import { currentHandler, recorders, setEagerHandler } from "../core/context.js";
import { Variable } from "../core/variable.js";
import { AllocationError, ValueError } from "../core/errors.js";
import { allocationFailure, checkAllocation, sizeOf } from "../core/shape.js";
import { currentDevice, isRemoteDevice, opDevice } from "../core/device.js";
import { hasUnknownDims } from "../core/shape.js";
import { beginKernel, endKernel, pool } from "../core/storage-pool.js";
import type { Backend } from "../backends/backend.js";
import { backendOf, cpuBackend } from "../backends/registry.js";
import type { CpuKernel } from "../backends/cpu/kernel.js";
import type { BatchRule } from "./batching.js";

export type { TensorType, ElementwiseForm, ElementwiseGroup, ReductionForm, CpuKernel };

/** What a VJP rule sees of the forward call. */
export interface VjpContext<A> {
  inputs: Tensor[];
  outputs: Tensor[];
  attrs: A;
  /**
   * Whether input i's cotangent is used (absent: all are). A VJP may return null for an input
   * nobody differentiates, and so skip its work: a convolution whose input is data computes no
   * input gradient, in eager code as in the graph that tracing records.
   */
  needs?: readonly boolean[];
}

/** Whether a VJP's cotangent for input `i` is used (ctx.needs, or every input when it is absent). */
export const needsCotangent = (ctx: VjpContext<unknown>, i: number): boolean => ctx.needs?.[i] ?? true;

/**
 * An op's kernels, by backend kind. Each backend defines the shape of its entry (the CPU's:
 * backends/cpu/kernel.ts CpuKernel). An elementwise op needs none: a backend without one renders
 * the op's expression (backends/backend.ts elementwiseKernel).
 */
export interface OpKernels<A> {
  cpu?: CpuKernel<A>;
  [backend: string]: unknown;
}

/**
 * How the ONNX exporter writes a node of an op. The ONNX layer (src/onnx) owns its shape: it
 * augments this interface (`declare module "../ops/registry.js"`), so ops know nothing of ONNX.
 */
export interface OnnxLowering {}

/** Facts every op declares, structural or not. */
interface OpFacts {
  readonly name: string;
  /** Family, for documentation and sweeps: "unary", "binary", "reduce", "structural", ... */
  readonly family: string;
  /** Input names, for graphs and error messages; a variadic op has one name and `variadic`. */
  readonly inputs: readonly string[];
  readonly variadic?: boolean;
  /**
   * Side effects beyond computing the outputs (random state, printing, host calls, assignment):
   * never removed, merged, folded or reordered.
   */
  readonly stateful?: boolean;
  /** The outputs depend on a variable's current value (readVariable): not merged across effects. */
  readonly readsVariables?: boolean;
  /** Writes a variable (assignVariable). */
  readonly writesVariables?: boolean;
  /** The ONNX exporter's lowering (filled by src/onnx). */
  onnx?: OnnxLowering;
}

export interface OpDef<A = any> extends OpFacts {
  /** Shape and dtype rule; validates and throws typed errors. */
  infer(inputs: readonly TensorType[], attrs: A): TensorType[];
  /**
   * Validates attributes that graphs from elsewhere (text, other front ends) may get wrong, before
   * the shape rule reads them: throws an Error naming the problem (the verifier runs it).
   */
  checkAttrs?(attrs: Record<string, unknown>, numInputs: number): void;
  /** Kernels per backend (OpKernels): concrete inputs -> the storage of each output (types from infer). */
  kernels: OpKernels<A>;
  /**
   * Vector-Jacobian product, written with registry ops so it is itself differentiable and
   * stageable. Returns one cotangent per input (null = zero / not differentiable).
   * Absent for ops whose outputs are not differentiable (comparisons, argMax, ...).
   */
  vjp?(ctx: VjpContext<A>, cotangents: (Tensor | null)[]): (Tensor | null)[];
  /**
   * The batching rule (vmap): how the op runs on inputs carrying a batch axis, or a stated
   * refusal (ops/batching.ts). Elementwise ops derive theirs (`batchRuleOf`).
   */
  readonly batch?: BatchRule<A>;
  /**
   * The output is input 0's storage itself: "reshape" (same elements in order, another shape:
   * a chain of them is one reshape) or "alias" (the input unchanged: identity, stopGradient).
   */
  readonly view?: "reshape" | "alias";
  /**
   * Inputs whose values the kernel copies during the call, keeping none of their storage: an
   * executor may lend it storage it reuses afterwards (stackPush's row).
   */
  readonly copiesInputs?: readonly number[];
  /** Two-input ops whose inputs may be swapped (add, mul, equal, ...): CSE merges f(a, b) and f(b, a). */
  readonly commutative?: boolean;
  /** Elementwise ops: the scalar expression of one output element, which every backend renders. */
  readonly elementwise?: ElementwiseForm;
  /**
   * Ops that compute a group of elementwise steps in one loop (fusedElementwise): the group for
   * these input types, or null when the attributes do not make one. Executors compile it as they
   * compile elementwise ops.
   */
  readonly group?: (attrs: A, inputs: readonly TensorType[]) => ElementwiseGroup | null;
  /** Reductions over attrs.axes that combine elements one at a time (executors may inline them). */
  readonly reduction?: ReductionForm;
  /**
   * Matrix products: for rank-2 inputs the output is op(x) op(y), each operand transposed as
   * the attributes say (executors may generate products in place).
   */
  readonly product?: (attrs: A) => { transposeA: boolean; transposeB: boolean };
  readonly structural?: undefined;
}

/** The signature of a region or library function, as a structural op's rule sees it. */
export interface RegionSignature {
  readonly inputs: readonly TensorType[];
  readonly outputs: readonly TensorType[];
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
}

/** What a structural op's rule sees of a node. */
export interface StructuralNode<A> {
  readonly inputs: readonly TensorType[];
  readonly outputs: readonly TensorType[];
  readonly attrs: A;
  /** One per region name of the op (the verifier checks the count first). */
  readonly regions: readonly RegionSignature[];
  /** The function the node calls (ops with a calleeAttr), found in the library; null otherwise. */
  readonly callee: (RegionSignature & { readonly name: string }) | null;
  /** How messages name input `i` (the printer's `%n`). */
  describeInput(i: number): string;
}

/**
 * What passes, the verifier and tracers need to know of a structural op, which executors run
 * themselves (regions, calls, variables).
 */
export interface StructuralForm<A> {
  /** The names of the node's regions: as many regions as names (cond: then, else). */
  readonly regions: readonly string[];
  /** Node input that region input 0 receives; the inputs before it are not passed to regions. */
  readonly regionOperandsFrom: number;
  /**
   * The first node input that may be dropped when no region reads it (the inputs before it are
   * loop variables, which the node's outputs carry); absent when none may be.
   */
  droppableFrom?(attrs: A): number;
  /**
   * Input 0 is a bool predicate that selects region 0 (true) or region 1 (false), whose outputs
   * are the node's: each output may be dropped from all regions at once, and a constant
   * predicate inlines the region it selects.
   */
  readonly selectsRegion?: boolean;
  /** The attribute naming the library function the node calls (call: "callee"). */
  readonly calleeAttr?: string;
  /** Nodes also have the effects of their regions and callee (what those read, write or do). */
  readonly inheritsEffects?: boolean;
  /** The variable a node reads or writes (readVariable, assignVariable), or null when the attribute is not one. */
  variable?(attrs: A): { readonly name: string; readonly dtype: DType; readonly shape: readonly number[] } | null;
  /** Validates a node against its regions and callee: throws an Error whose message names the first problem. */
  check(node: StructuralNode<A>): void;
}

export interface StructuralOpDef<A = any> extends OpFacts {
  readonly structural: StructuralForm<A>;
  /**
   * Graph AD's rule for the op, as a registry op's is its `vjp`: the gradient layer (src/grad)
   * fills it at wiring time. While tapes record, the tracer hands the rule the node it is about
   * to emit instead of emitting it; the rule emits it augmented for its gradient, records its
   * tape entry and returns the node's outputs. What the rule receives is the tracer's
   * (staging/recording.ts): ops know no tracer, so it is opaque here.
   */
  gradient?: (node: never) => Tensor[];
}

export type AnyOpDef = OpDef | StructuralOpDef;

const registry = new Map<string, AnyOpDef>();

export function defineOp<A>(def: OpDef<A>): OpDef<A> {
  roundsFloat16Outputs(def);
  register(def as OpDef);
  return def;
}

/**
 * float16 values live in Float32Array storage on the CPU (core/dtype.ts): every CPU kernel
 * computes as for float32 and its float16 outputs are rounded here, once for every op, so that
 * no kernel has to know (the compiled loops round their stores the same way:
 * backends/cpu/js-expr.ts storeConversion).
 */
function roundsFloat16Outputs<A>(def: OpDef<A>): void {
  const kernel = def.kernels.cpu;
  if (kernel === undefined) return;
  def.kernels.cpu = (inputs, attrs, outs) => {
    const data = kernel(inputs, attrs, outs);
    for (let i = 0; i < outs.length; i++) {
      if (outs[i]!.dtype === "float16") {
        const d = data[i];
        if (d instanceof Float32Array) roundStorageToFloat16(d);
      }
    }
    return data;
  };
}

export function defineStructuralOp<A>(def: StructuralOpDef<A>): StructuralOpDef<A> {
  register(def as StructuralOpDef);
  return def;
}

function register(def: AnyOpDef): void {
  if (registry.has(def.name)) throw new Error(`op ${def.name} is declared twice`);
  registry.set(def.name, def);
}

/** The declaration of a registry op (one with kernels); structural ops are lookupOp's. */
export function getOp(name: string): OpDef {
  const d = registry.get(name);
  if (!d) throw new ValueError(`no op named ${JSON.stringify(name)} in the registry`);
  if (d.structural) throw new ValueError(`${name} is a structural op: executors run it, it has no kernels`);
  return d;
}

/** The declaration of any op, structural ones included, or null. */
export function lookupOp(name: string): AnyOpDef | null {
  return registry.get(name) ?? null;
}

/** The declaration of a structural op, or null (a registry op or no op). */
export function structuralOp(name: string): StructuralOpDef | null {
  const d = registry.get(name);
  return d?.structural ? d : null;
}

/** An op's batching rule: declared, or derived from its elementwise expression; null when it has neither. */
export function batchRuleOf(def: OpDef): BatchRule | null {
  return def.batch ?? (def.elementwise ? elementwiseBatchRule : null);
}
let elementwiseBatchRule: BatchRule | null = null;
/** ops/batching.ts installs the derived elementwise rule (it imports this file). */
export function setElementwiseBatchRule(r: BatchRule): void {
  elementwiseBatchRule = r;
}

/** Every registry op (the ones with kernels). */
export function listOps(): OpDef[] {
  return [...registry.values()].filter((d): d is OpDef => !d.structural);
}

/** Every structural op. */
export function listStructuralOps(): StructuralOpDef[] {
  return [...registry.values()].filter((d): d is StructuralOpDef => !!d.structural);
}

// ---------------------------------------------------------------------------------------------
// Dispatch

/**
 * Output shapes known only when a kernel runs (hostCall outputs whose spec has unknown
 * dims): the kernel records them here against the storage it returns.
 */
export const runtimeShapes = new WeakMap<object, number[]>();

/** Wraps kernel outputs as tensors of the inferred types (or the shapes a kernel recorded). */
export function wrapOutputs(types: TensorType[], data: unknown[], backend: Backend = cpuBackend, device = currentDevice()): Tensor[] {
  const outs = new Array<Tensor>(types.length);
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    const d = data[i]! as object;
    outs[i] = backend.tensor(d, hasUnknownDims(t.shape) ? (runtimeShapes.get(d) ?? t.shape) : t.shape, t.dtype, device);
  }
  return outs;
}

/** Elementwise kernels backends rendered for ops that declare none for them. */
const renderedKernels = new WeakMap<AnyOpDef, Map<string, unknown>>();

/** `def`'s kernel for `backend`: declared, or rendered from its elementwise expression. */
export function kernelFor(def: OpDef, backend: Backend): unknown {
  const declared = def.kernels[backend.kind];
  if (declared !== undefined) return declared;
  if (!def.elementwise) throw new ValueError(`op ${def.name} has no kernel for the ${backend.kind} backend`, def.name);
  let byKind = renderedKernels.get(def);
  if (!byKind) renderedKernels.set(def, (byKind = new Map()));
  let k = byKind.get(backend.kind);
  if (k === undefined) byKind.set(backend.kind, (k = backend.elementwiseKernel(def.elementwise, def.name)));
  return k;
}

/** Runs `def`'s kernel on concrete inputs on `backend` (outputs of the given types): the outputs' storage. */
export function runKernel(def: OpDef, backend: Backend, inputs: Tensor[], attrs: unknown, types: TensorType[]): unknown[] {
  return backend.run(kernelFor(def, backend), inputs, attrs, types);
}

/**
 * Runs an op now, on concrete inputs, outside any handler and tape (executors, constant folding),
 * on the device eager ops would use (opDevice: the scope's, else its inputs'): its shape rule,
 * the size check of its outputs, its kernel.
 */
export function runOp(def: OpDef, inputs: Tensor[], attrs: unknown): Tensor[] {
  const dev = opDevice(inputs);
  return runOn(def, currentBackend(dev), dev, inputs, attrs);
}

/**
 * A copy of `t` on `device`: its values read back to host memory (an error saying to await
 * `data()` when that cannot be done now) and uploaded there; host memory to the CPU keeps the storage.
 */
export function copyToDevice(t: Tensor, device: string): Tensor {
  const to = backendOf(device);
  return to.tensor(to.upload(t.concrete(`move to ${device}`), t.dtype), t.shape, t.dtype, device);
}

/** Applies an op to tensor inputs through the current handler, then notifies tapes. */
export function applyOp<A>(def: OpDef<A>, inputs: Tensor[], attrs: A): Tensor[] {
  inputs = readVariables(inputs);
  const outputs = currentHandler().run(def, inputs, attrs);
  if (recorders.length > 0) {
    for (let i = 0; i < recorders.length; i++) recorders[i]!.recordOp(def, inputs, attrs, outputs);
  }
  return outputs;
}

/**
 * A variable given as an input is read, as the op wrappers' argument conversion does: tapes
 * and staged code see the read (its gradient, its value at run time).
 */
function readVariables(inputs: Tensor[]): Tensor[] {
  for (let i = 0; i < inputs.length; i++) if (inputs[i] instanceof Variable) return inputs.map((t) => (t instanceof Variable ? t.read() : t));
  return inputs;
}

export function applyOp1<A>(def: OpDef<A>, inputs: Tensor[], attrs: A): Tensor {
  return applyOp(def, inputs, attrs)[0]!;
}

/** The backend of the device ops run on now (cached while the device stays the same). */
let lastDevice = "";
let lastBackend: Backend = cpuBackend;
function currentBackend(dev: string): Backend {
  if (dev !== lastDevice) {
    lastBackend = backendOf(dev);
    lastDevice = dev;
  }
  return lastBackend;
}

/** How the engine says it cannot allocate an array (a RangeError). */
const ALLOCATION_FAILURE = /allocat|array (buffer )?length/i;

/**
 * Runs `def` on concrete inputs on `backend`: shape rule, the size check of every output (before
 * anything is allocated), the kernel; an allocation the engine refuses is an AllocationError
 * naming the op.
 */
function runOn(def: OpDef, backend: Backend, device: string, inputs: Tensor[], attrs: unknown): Tensor[] {
  const types = def.infer(inputs, attrs);
  for (let i = 0; i < types.length; i++) checkAllocation(def.name, types[i]!.shape, types[i]!.dtype);
  let data: unknown[];
  // (a stateless host kernel reads its inputs during the call only: core/storage-pool.ts)
  const mode = pool.inUse ? beginKernel(inputs, backend.kind === "cpu" ? def : null) : 0;
  try {
    data = backend.run(def.kernels[backend.kind] ?? kernelFor(def, backend), inputs, attrs, types);
    if (mode !== 0) endKernel(mode);
  } catch (e) {
    if (mode !== 0) endKernel(mode);
    // (allocStorage's error, which knows no op; or a kernel's own allocation)
    if (e instanceof AllocationError && e.op === undefined) throw new AllocationError(e.message, def.name);
    // (a stack overflow is passed on as it is: a regular expression may not even compile then)
    if (!(e instanceof RangeError) || types.length === 0 || e.message.startsWith("Maximum call stack") || !ALLOCATION_FAILURE.test(e.message)) throw e;
    const big = types.reduce((a, t) => (sizeOf(t.shape) > sizeOf(a.shape) ? t : a), types[0]!);
    throw allocationFailure(def.name, big.shape, big.dtype, e);
  }
  return wrapOutputs(types, data, backend, device);
}

/**
 * Runs ops placed on a remote worker's device (src/remote/eager.ts installs it): each op is sent
 * there, its outputs are tensors whose storage stays there.
 */
export interface RemoteOpRunner {
  run(def: OpDef, inputs: Tensor[], attrs: unknown, device: string): Tensor[];
}
let remoteRunner: RemoteOpRunner | null = null;
export function setRemoteOpRunner(r: RemoteOpRunner): void {
  remoteRunner = r;
}

/** Eager execution: inputs moved to the current device, then runOn the device's backend. */
setEagerHandler({
  run(def: OpDef, inputs, attrs) {
    const dev = opDevice(inputs);
    if (remoteRunner !== null && isRemoteDevice(dev)) return remoteRunner.run(def, inputs, attrs, dev);
    const backend = currentBackend(dev);
    // The copies go in a new array: `inputs` is also what tapes record, and they must see the
    // caller's tensors (a copy made here is not on any tape, so recording it would cut the path
    // from a host tensor to a loss computed on the GPU: a silent zero gradient).
    let onDevice = inputs;
    for (let i = 0; i < inputs.length; i++) {
      if (inputs[i]!.device === dev) continue;
      if (onDevice === inputs) onDevice = inputs.slice();
      onDevice[i] = copyToDevice(inputs[i]!, dev);
    }
    return runOn(def, backend, dev, onDevice, attrs);
  },
});
