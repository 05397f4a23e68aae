/**
 * The op registry: every op is declared once, here-shaped, and every layer reads the same
 * declaration: eager execution (kernel), tracing (infer), the tape and the graph AD
 * transform (vjp), the optimizer and executors (elementwise template), and exporters (onnx).
 */
import { isInteger, type DType, type TypedArray } from "../core/dtype.js";
import { roundStorageToFloat16 } from "../core/float16.js";
import type { Tensor } from "../core/tensor.js";
import { Tensor as TensorClass } from "../core/tensor.js";
import { currentHandler, recorders, setEagerHandler } from "../core/context.js";
import { ValueError } from "../core/errors.js";
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
  if ((dtype === "float32" || dtype === "float16") && t.f32Expr) return t.f32Expr;
  if (isInteger(dtype) && t.intExpr) return t.intExpr;
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
  roundsFloat16Outputs(def);
  registry.set(def.name, def as OpDef);
  return def;
}

/**
 * float16 values live in Float32Array storage (core/dtype.ts): every kernel computes as for
 * float32 and its float16 outputs are rounded here, once for every op, so that no kernel has
 * to know. (The compiled executor's loops round the same way: exec/loops.ts storeConversion.)
 */
function roundsFloat16Outputs<A>(def: OpDef<A>): void {
  const kernel = def.kernel;
  (def as { kernel: OpDef<A>["kernel"] }).kernel = function (this: OpDef<A>, inputs, attrs, outs) {
    const data = kernel.call(this, inputs, attrs, outs);
    for (let i = 0; i < outs.length; i++) {
      if (outs[i]!.dtype === "float16") {
        const d = data[i];
        if (d instanceof Float32Array) roundStorageToFloat16(d);
      }
    }
    return data;
  };
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
  const outputs = currentHandler().run(def, inputs, attrs);
  if (recorders.length > 0) {
    for (let i = 0; i < recorders.length; i++) recorders[i]!.recordOp(def, inputs, attrs, outputs);
  }
  return outputs;
}

export function applyOp1<A>(def: OpDef<A>, inputs: Tensor[], attrs: A): Tensor {
  return applyOp(def, inputs, attrs)[0]!;
}

/** Eager execution: infer, run the kernel, wrap the storage. */
setEagerHandler({
  run(def, inputs, attrs) {
    const dev = currentDevice();
    for (let i = 0; i < inputs.length; i++) if (inputs[i]!.device !== dev) inputs[i] = copyToDevice(inputs[i]!, dev);
    const types = def.infer(inputs, attrs);
    return wrapOutputs(types, def.kernel(inputs, attrs, types));
  },
});
