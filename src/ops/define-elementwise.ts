/**
 * Declaring elementwise ops: an expression (core/expr.ts) plus a dtype rule and a VJP. Every
 * backend renders the expression (the CPU's eager kernel: backends/cpu/elementwise.ts), and
 * fusion combines the expressions of a chain into one loop.
 */
import { type DType, isFloat, promoteTypes, DEFAULT_FLOAT } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import type { ElementwiseForm, Expr } from "../core/expr.js";
import { broadcastShapesN } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { cpuBackend } from "../backends/registry.js";
import { applyOp1, defineOp, type CpuKernel, type OpDef, type TensorType, type VjpContext } from "./registry.js";
import { toTensorsWeak } from "./convert.js";

/**
 * How the output dtype follows from the (promoted) input dtype:
 * - "same": same as the inputs (bool arithmetic becomes int32)
 * - "float": float inputs keep their dtype; integer/bool inputs give float32
 * - "bool": always bool (comparisons, predicates)
 * - "logical": inputs must be bool, output bool
 * - "int-or-float": numeric only (no bool), same dtype
 */
export type DtypeRule = "same" | "float" | "bool" | "logical" | "numeric";

function outputDtype(op: string, rule: DtypeRule, dtypes: DType[]): DType {
  let d = dtypes[0]!;
  for (let i = 1; i < dtypes.length; i++) d = promoteTypes(d, dtypes[i]!);
  switch (rule) {
    case "same":
      return d === "bool" ? "int32" : d;
    case "numeric":
      if (d === "bool") throw new DtypeError(`does not accept bool inputs (got ${dtypes.join(", ")})`, op);
      return d;
    case "float":
      return isFloat(d) ? d : DEFAULT_FLOAT;
    case "bool":
      return "bool";
    case "logical":
      if (dtypes.some((x) => x !== "bool")) throw new DtypeError(`needs bool inputs, got ${dtypes.join(", ")}`, op);
      return "bool";
  }
}

export interface ElementwiseSpec {
  name: string;
  family: string;
  inputs: string[];
  /** The value of one output element over the operands (core/expr.ts: E.a, E.b, E.c). */
  expr: Expr;
  /** Used instead of `expr` when the output dtype is float32: accurate to float32, cheaper. */
  f32?: Expr;
  dtype: DtypeRule;
  vjp?: OpDef["vjp"];
  /** Swapping the two operands gives the same result. */
  commutative?: boolean;
}

/** The CPU kernel of an elementwise form: its expression rendered as a JavaScript loop. */
export const cpuElementwiseKernel = (form: ElementwiseForm): CpuKernel => cpuBackend.elementwiseKernel(form) as CpuKernel;

export function defineElementwise(spec: ElementwiseSpec): OpDef {
  const arity = spec.inputs.length;
  const elementwise: ElementwiseForm = spec.f32 ? { expr: spec.expr, f32: spec.f32 } : { expr: spec.expr };
  return defineOp({
    name: spec.name,
    family: spec.family,
    inputs: spec.inputs,
    elementwise,
    infer(inputs: readonly TensorType[]): TensorType[] {
      const shape = arity === 1 ? inputs[0]!.shape : broadcastShapesN(spec.name, inputs.map((t) => t.shape));
      const dtype = outputDtype(spec.name, spec.dtype, inputs.map((t) => t.dtype));
      return [{ shape, dtype }];
    },
    kernels: { cpu: cpuElementwiseKernel(elementwise) },
    ...(spec.vjp ? { vjp: spec.vjp } : {}),
    ...(spec.commutative ? { commutative: true } : {}),
  });
}

export type UnaryVjp = (x: Tensor, y: Tensor, dy: Tensor) => Tensor;
export type BinaryVjp = (a: Tensor, b: Tensor, y: Tensor, dy: Tensor) => [Tensor | null, Tensor | null];

export function unaryVjp(rule: UnaryVjp): OpDef["vjp"] {
  return (ctx: VjpContext<unknown>, cts) => [rule(ctx.inputs[0]!, ctx.outputs[0]!, cts[0]!)];
}

/** Applies an elementwise op to JS-number-or-tensor operands (numbers weakly typed). */
export function callElementwise(def: OpDef, ...args: TensorLike[]): Tensor {
  return applyOp1(def, toTensorsWeak(args, def.name), {});
}

export function callElementwiseWithAttrs(def: OpDef, attrs: Record<string, number>, ...args: TensorLike[]): Tensor {
  return applyOp1(def, toTensorsWeak(args, def.name), attrs);
}
