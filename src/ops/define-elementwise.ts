/**
 * Declaring elementwise ops: a scalar template plus a dtype rule and a VJP. The same
 * template generates the eager kernel (backends/cpu/elementwise.ts) and feeds fusion.
 */
import { type DType, isFloat, promoteTypes, allocStorage, DEFAULT_FLOAT } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import { broadcastShapesN } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { elementwiseLoop, type ElementwiseLoop } from "../backends/cpu/elementwise.js";
import { applyOp1, defineOp, templateExpression, type OpDef, type TensorType, type VjpContext } from "./registry.js";
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
  /** JS expression over `a` (`b`, `c`) computing one element. */
  expr: string;
  /** Used instead of `expr` when the output dtype is an integer type. */
  intExpr?: string;
  /** Used instead of `expr` when the output dtype is float32 (see ElementwiseTemplate). */
  f32Expr?: string;
  dtype: DtypeRule;
  vjp?: OpDef["vjp"];
}

export function defineElementwise(spec: ElementwiseSpec): OpDef {
  const arity = spec.inputs.length;
  const loops = new Map<string, ElementwiseLoop | null>();
  const elementwise = { expr: spec.expr, ...(spec.intExpr ? { intExpr: spec.intExpr } : {}), ...(spec.f32Expr ? { f32Expr: spec.f32Expr } : {}) };
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
    kernel(inputs: Tensor[], attrs: Record<string, number> | undefined, outs: TensorType[]) {
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOfShape(o.shape));
      const template = templateExpression(elementwise, o.dtype);
      // Loops are compiled once per template; templates with attributes once per value.
      let loop = loops.get(template);
      if (loop === undefined) {
        loop = template.includes("$") ? null : elementwiseLoop(template, arity);
        loops.set(template, loop);
      }
      if (loop === null) loop = elementwiseLoop(bindAttrs(template, attrs), arity);
      const datas = new Array(inputs.length);
      const shapes = new Array(inputs.length);
      for (let i = 0; i < inputs.length; i++) {
        datas[i] = inputs[i]!.concrete();
        shapes[i] = inputs[i]!.shape;
      }
      loop(datas, shapes, out, o.shape);
      return [out];
    },
    ...(spec.vjp ? { vjp: spec.vjp } : {}),
  });
}

/** Substitutes `$name` placeholders in a template with attribute values (numeric literals). */
export function bindAttrs(expr: string, attrs: Record<string, number> | undefined): string {
  if (!expr.includes("$")) return expr;
  return expr.replace(/\$(\w+)/g, (_, k: string) => {
    const v = attrs?.[k];
    if (typeof v !== "number") throw new Error(`elementwise template needs numeric attribute ${k}`);
    return `(${Number.isFinite(v) ? String(v) : v > 0 ? "Infinity" : v < 0 ? "-Infinity" : "NaN"})`;
  });
}

function sizeOfShape(s: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < s.length; i++) n *= s[i]!;
  return n;
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
