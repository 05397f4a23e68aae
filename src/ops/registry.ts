/**
 * The op registry: every op is declared once, here-shaped, and every layer reads the same
 * declaration: eager execution (kernel), tracing (infer), the tape and the graph AD
 * transform (vjp), the optimizer and executors (elementwise template), and exporters (onnx).
 */
import type { DType, TypedArray } from "../core/dtype.js";
import type { Tensor } from "../core/tensor.js";
import { Tensor as TensorClass } from "../core/tensor.js";
import { currentHandler, recorders, setEagerHandler } from "../core/context.js";
import { Variable } from "../core/variable.js";
import { AllocationError, ValueError } from "../core/errors.js";
import { allocationFailure, checkAllocation, sizeOf } from "../core/shape.js";
import { currentDevice } from "../core/device.js";

/** Moves a tensor to another device (all devices share host memory today: the storage is shared). */
export function copyToDevice(t: Tensor, device: string): Tensor {
  return new TensorClass(t.concrete(), t.shape, t.dtype, device);
}

export interface TensorType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** What a VJP rule sees of the forward call. */
export interface VjpContext<A> {
  inputs: Tensor[];
  outputs: Tensor[];
  attrs: A;
}

/**
 * An elementwise op's scalar template, shared by the generated eager kernel and (later) the
 * fusing executor: a JS expression over the operand names `a`, `b`, `c`.
 */
export interface ElementwiseTemplate {
  expr: string;
  /** Expression used when the output dtype is integer (e.g. floor division), if different. */
  intExpr?: string;
  /**
   * Expression used when the output dtype is float32, if different: an approximation
   * accurate to float32 (a few ulp), cheaper than the float64-accurate `expr`.
   */
  f32Expr?: string;
}

/** The template's expression for an output of `dtype`. */
export function templateExpression(t: ElementwiseTemplate, dtype: DType): string {
  if (dtype === "float32" && t.f32Expr) return t.f32Expr;
  if ((dtype === "int32" || dtype === "int64" || dtype === "uint8") && t.intExpr) return t.intExpr;
  return t.expr;
}

export interface OpDef<A = any> {
  readonly name: string;
  /** Input names, for graphs and error messages; a variadic op has one name and `variadic`. */
  readonly inputs: readonly string[];
  readonly variadic?: boolean;
  /** Shape and dtype rule; validates and throws typed errors. */
  infer(inputs: readonly TensorType[], attrs: A): TensorType[];
  /** CPU kernel: concrete inputs -> storage of each output (types from infer). */
  kernel(inputs: Tensor[], attrs: A, outs: TensorType[]): TypedArray[];
  /**
   * Vector-Jacobian product, written with registry ops so it is itself differentiable and
   * stageable. Returns one cotangent per input (null = zero / not differentiable).
   * Absent for ops whose outputs are not differentiable (comparisons, argMax, ...).
   */
  vjp?(ctx: VjpContext<A>, cotangents: (Tensor | null)[]): (Tensor | null)[];
  /** Side effects (random with state, printing, assignment): never pruned or folded. */
  readonly stateful?: boolean;
  /** Set for elementwise ops: the fusion template. */
  readonly elementwise?: ElementwiseTemplate;
  /** Family, for documentation and sweeps: "unary", "binary", "reduce", ... */
  readonly family: string;
  /** Slot filled by the ONNX layer. */
  onnx?: unknown;
}

const registry = new Map<string, OpDef>();

export function defineOp<A>(def: OpDef<A>): OpDef<A> {
  if (registry.has(def.name)) throw new Error(`op ${def.name} is declared twice`);
  registry.set(def.name, def as OpDef);
  return def;
}

export function getOp(name: string): OpDef {
  const d = registry.get(name);
  if (!d) throw new ValueError(`no op named ${JSON.stringify(name)} in the registry`);
  return d;
}

export function listOps(): OpDef[] {
  return [...registry.values()];
}

/**
 * Output shapes known only when a kernel runs (hostCall outputs whose spec has unknown
 * dims): the kernel records them here against the storage it returns.
 */
export const runtimeShapes = new WeakMap<TypedArray, number[]>();

/** Wraps kernel outputs as tensors of the inferred types (or the shapes a kernel recorded). */
export function wrapOutputs(types: TensorType[], data: TypedArray[]): Tensor[] {
  const outs = new Array<Tensor>(types.length);
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    const d = data[i]!;
    const unknown = t.shape.some((n) => n < 0);
    outs[i] = new TensorClass(d, unknown ? (runtimeShapes.get(d) ?? t.shape) : t.shape, t.dtype);
  }
  return outs;
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

/**
 * Runs `def` on concrete inputs: shape rule, the size check of every output (before anything
 * is allocated), the kernel; an allocation the engine refuses is an AllocationError naming the op.
 */
export function runKernel<A>(def: OpDef<A>, inputs: Tensor[], attrs: A): Tensor[] {
  const types = def.infer(inputs, attrs);
  for (let i = 0; i < types.length; i++) checkAllocation(def.name, types[i]!.shape, types[i]!.dtype);
  let data: TypedArray[];
  try {
    data = def.kernel(inputs, attrs, types);
  } catch (e) {
    // (allocStorage's error, which knows no op; or a kernel's own allocation)
    if (e instanceof AllocationError && e.op === undefined) throw new AllocationError(e.message, def.name);
    if (!(e instanceof RangeError) || !/allocat|array (buffer )?length/i.test(e.message) || types.length === 0) throw e;
    const big = types.reduce((a, t) => (sizeOf(t.shape) > sizeOf(a.shape) ? t : a), types[0]!);
    throw allocationFailure(def.name, big.shape, big.dtype, e);
  }
  return wrapOutputs(types, data);
}

/** Eager execution: infer, run the kernel, wrap the storage. */
setEagerHandler({
  run(def, inputs, attrs) {
    const dev = currentDevice();
    for (let i = 0; i < inputs.length; i++) if (inputs[i]!.device !== dev) inputs[i] = copyToDevice(inputs[i]!, dev);
    return runKernel(def, inputs, attrs);
  },
});
