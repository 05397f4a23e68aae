/**
 * Elementwise ops lowered from their expressions (core/expr.ts), not one by one: an op's
 * expression (or a fused group's steps) is rendered as ONNX nodes. The expression's semantics
 * (float64 arithmetic, rounded once into the output's dtype) are kept by computing in double
 * unless every value involved is float32 or bool, where float32 nodes give the same result up
 * to float32 rounding of intermediates (docs/onnx.md lists the tolerances).
 *
 * Values are numbers of the compute dtype or booleans (comparisons, and/or/not); a boolean used
 * as a number is cast (1/0), a number used as a condition is JavaScript truthiness (non-zero and
 * not NaN).
 */
import { bindAttrs, formFor, type ElementwiseGroup, type Expr, type ScalarFn } from "../../core/expr.js";
import type { DType } from "../../core/dtype.js";
import type { OnnxBuilder } from "./builder.js";
import { signedWhere, storeFloat, where } from "./lowerings/common.js";

type Val = { name: string; bool: boolean };

/** ONNX ops that onnxruntime's CPU provider runs on float32 only: in double they go through float32. */
const FLOAT32_ONLY: Partial<Record<ScalarFn, string>> = {
  tan: "Tan",
  asin: "Asin",
  acos: "Acos",
  atan: "Atan",
  sinh: "Sinh",
  cosh: "Cosh",
  erf: "Erf",
  asinh: "Asinh",
  acosh: "Acosh",
  atanh: "Atanh",
};

const DIRECT: Partial<Record<ScalarFn, string>> = {
  neg: "Neg",
  abs: "Abs",
  add: "Add",
  sub: "Sub",
  mul: "Mul",
  div: "Div",
  sqrt: "Sqrt",
  floor: "Floor",
  ceil: "Ceil",
  exp: "Exp",
  log: "Log",
  sin: "Sin",
  cos: "Cos",
  tanh: "Tanh",
  pow: "Pow",
  roundHalfEven: "Round",
};

const COMPARE: Partial<Record<ScalarFn, string>> = { eq: "Equal", lt: "Less", le: "LessOrEqual", gt: "Greater", ge: "GreaterOrEqual" };

class ExprEmitter {
  private readonly consts = new Map<string, string>();
  constructor(
    private readonly b: OnnxBuilder,
    /** The compute dtype: float32 or float64. */
    private readonly c: DType,
  ) {}

  constant(v: number): string {
    const key = Object.is(v, -0) ? "-0" : String(v);
    let n = this.consts.get(key);
    if (n === undefined) this.consts.set(key, (n = this.b.scalar(v, this.c)));
    return n;
  }

  /**
   * Where(c, t, f) of compute-dtype values: plain when t is a non-zero constant of this group or
   * the values are integers, else signedWhere (onnxruntime's Where loses the sign of a zero from t).
   */
  where(c: string, t: string, f: string): string {
    const nonZeroConst = [...this.consts].some(([k, name]) => name === t && k !== "0" && k !== "-0");
    if (nonZeroConst || !(this.c === "float32" || this.c === "float64" || this.c === "float16")) return this.b.op1("Where", [c, t, f]);
    return signedWhere(this.b, c, t, f, this.c);
  }

  /** A value of any dtype as an operand: bool stays bool, others are cast to the compute dtype. */
  operand(name: string, dtype: DType): Val {
    if (dtype === "bool") return { name, bool: true };
    return { name: dtype === this.c ? name : this.b.cast(name, this.c), bool: false };
  }

  num(v: Val): string {
    return v.bool ? this.b.cast(v.name, this.c) : v.name;
  }

  truthy(v: Val): string {
    if (v.bool) return v.name;
    const b = this.b;
    return b.op1("And", [b.op1("Not", [b.op1("Equal", [v.name, this.constant(0)])]), b.op1("Equal", [v.name, v.name])]);
  }

  /** The value as the dtype `to` (a store into a tensor of that dtype). */
  store(v: Val, to: DType): string {
    if (to === "bool") return this.truthy(v);
    if (v.bool) return this.b.cast(v.name, to);
    return storeFloat(this.b, v.name, this.c, to);
  }

  render(e: Expr, operands: Val[]): Val {
    switch (e.kind) {
      case "input":
        return operands[e.index]!;
      case "const":
        return { name: this.constant(e.value), bool: false };
      case "attr":
        throw new Error(`internal: attribute ${e.name} is not bound`);
      case "apply":
        return this.apply(e.fn, e.args.map((a) => this.render(a, operands)));
    }
  }

  private apply(fn: ScalarFn, args: Val[]): Val {
    const b = this.b;
    const n = (i: number) => this.num(args[i]!);
    const numVal = (name: string): Val => ({ name, bool: false });
    const boolVal = (name: string): Val => ({ name, bool: true });
    const direct = DIRECT[fn];
    if (direct !== undefined) return numVal(b.op1(direct, args.map((_, i) => n(i))));
    const cmp = COMPARE[fn];
    if (cmp !== undefined) return boolVal(b.op1(cmp, [n(0), n(1)]));
    const f32 = FLOAT32_ONLY[fn];
    if (f32 !== undefined) {
      if (this.c === "float32") return numVal(b.op1(f32, [n(0)]));
      return numVal(b.cast(b.op1(f32, [b.cast(n(0), "float32")]), this.c));
    }
    switch (fn) {
      case "ne":
        return boolVal(b.op1("Not", [b.op1("Equal", [n(0), n(1)])]));
      case "and":
        return boolVal(b.op1("And", [this.truthy(args[0]!), this.truthy(args[1]!)]));
      case "or":
        return boolVal(b.op1("Or", [this.truthy(args[0]!), this.truthy(args[1]!)]));
      case "not":
        return boolVal(b.op1("Not", [this.truthy(args[0]!)]));
      case "select": {
        const [, t, f] = args as [Val, Val, Val];
        const cond = this.truthy(args[0]!);
        if (t.bool && f.bool) return boolVal(where(b, cond, t.name, f.name, "bool"));
        return numVal(this.where(cond, this.num(t), this.num(f)));
      }
      case "isFinite":
        // x - x is 0 for finite x and NaN for infinities and NaN
        return boolVal(b.op1("Equal", [b.op1("Sub", [n(0), n(0)]), this.constant(0)]));
      case "trunc": {
        const x = n(0);
        return numVal(this.where(b.op1("Less", [x, this.constant(0)]), b.op1("Ceil", [x]), b.op1("Floor", [x])));
      }
      case "fmod":
        return numVal(b.op1("Mod", [n(0), n(1)], { fmod: 1 }));
      case "log1p": {
        // log(1 + x) * x / ((1 + x) - 1): accurate where 1 + x rounds (Goldberg's trick)
        const x = n(0);
        const u = b.op1("Add", [x, this.constant(1)]);
        const d = b.op1("Sub", [u, this.constant(1)]);
        const q = b.op1("Div", [b.op1("Mul", [b.op1("Log", [u]), x]), d]);
        return numVal(this.where(b.op1("Equal", [d, this.constant(0)]), x, q));
      }
      case "expm1": {
        // (e^x - 1) * x / log(e^x) (Kahan), x itself where e^x rounds to 1, -1 where e^x - 1 is -1
        const x = n(0);
        const u = b.op1("Exp", [x]);
        const um1 = b.op1("Sub", [u, this.constant(1)]);
        const q = b.op1("Div", [b.op1("Mul", [um1, x]), b.op1("Log", [u])]);
        const big = b.op1("Where", [b.op1("Equal", [um1, this.constant(-1)]), um1, q]);
        const inf = b.op1("Where", [b.op1("Equal", [u, this.constant(Infinity)]), u, big]);
        // (x, which may be -0, in Where's second slot: onnxruntime's Where turns a -0 from the
        // first into +0; the negation as Xor, which its NotWhereFusion does not swap back)
        const notOne = b.op1("Xor", [b.op1("Equal", [u, this.constant(1)]), b.constant([1], "bool", [])]);
        return numVal(b.op1("Where", [notOne, inf, x]));
      }
      case "atan2": {
        // atan(y / x), moved by pi where x is negative (or -0) toward y's side (y's sign bit,
        // -0 included), y's sign of 0 or pi where both are zero: Math.atan2's cases
        const [y, x] = [n(0), n(1)];
        const q = this.apply("atan", [numVal(b.op1("Div", [y, x]))]).name;
        const pi = this.constant(Math.PI);
        const signBit = (v: string) =>
          b.op1("Or", [b.op1("Less", [v, this.constant(0)]), b.op1("And", [b.op1("Equal", [v, this.constant(0)]), b.op1("Less", [b.op1("Div", [this.constant(1), v]), this.constant(0)])])]);
        const xNeg = signBit(x);
        const yNeg = signBit(y);
        const shifted = b.op1("Where", [yNeg, b.op1("Sub", [q, pi]), b.op1("Add", [q, pi])]);
        const r = b.op1("Where", [xNeg, shifted, q]);
        const zero = b.op1("And", [b.op1("Equal", [x, this.constant(0)]), b.op1("Equal", [y, this.constant(0)])]);
        const atZero = b.op1("Where", [xNeg, b.op1("Where", [yNeg, this.constant(-Math.PI), pi]), y]);
        // (both infinite: y / x is NaN; the angle is pi/4 or 3pi/4 toward y's side)
        const inf = b.op1("And", [b.op1("IsInf", [x]), b.op1("IsInf", [y])]);
        const diag = b.op1("Where", [xNeg, this.constant((3 * Math.PI) / 4), this.constant(Math.PI / 4)]);
        const atInf = b.op1("Where", [yNeg, b.op1("Neg", [diag]), diag]);
        return numVal(b.op1("Where", [inf, atInf, this.where(zero, atZero, r)]));
      }
      default:
        return b.unsupported(`its expression uses ${fn}, which the exporter cannot write`);
    }
  }
}

/** The dtype a step computes in: float32 when every value it touches is float32 or bool. */
function computeDtype(dtypes: readonly DType[]): DType {
  return dtypes.every((d) => d === "float32" || d === "bool") ? "float32" : "float64";
}

/** Lowers an elementwise group (one op, or a fused chain) whose inputs are `inputs` (names and dtypes). */
export function lowerGroup(b: OnnxBuilder, group: ElementwiseGroup, inputs: readonly { name: string; dtype: DType }[]): string[] {
  const values: { name: string; dtype: DType }[] = [...inputs];
  for (const step of group.steps) {
    const argVals = step.args.map((i) => values[i]!);
    const em = new ExprEmitter(b, computeDtype([step.dtype, ...argVals.map((v) => v.dtype)]));
    const operands = argVals.map((v) => em.operand(v.name, v.dtype));
    const result = em.render(step.expr, operands);
    values.push({ name: em.store(result, step.dtype), dtype: step.dtype });
  }
  return group.outputs.map((k) => values[group.numInputs + k]!.name);
}

/** The group of one elementwise op: its declared expression (the float64 one), attributes bound. */
export function elementwiseGroup(form: { expr: Expr; f32?: Expr }, attrs: unknown, numInputs: number, outDtype: DType): ElementwiseGroup {
  const expr = bindAttrs(formFor({ expr: form.expr }, outDtype), attrs as Record<string, unknown>);
  return { numInputs, steps: [{ expr, args: Array.from({ length: numInputs }, (_, i) => i), dtype: outDtype }], outputs: [0] };
}

/** Lowers one elementwise op from its declared expression. */
export function lowerElementwise(b: OnnxBuilder, form: { expr: Expr; f32?: Expr }, attrs: unknown, inputs: readonly { name: string; dtype: DType }[], outDtype: DType): string {
  return lowerGroup(b, elementwiseGroup(form, attrs, inputs.length, outDtype), inputs)[0]!;
}

/** Whether an expression applies a function the export computes in float32 whatever its dtype (atan2 through atan). */
function appliesFloat32Only(e: Expr): boolean {
  if (e.kind !== "apply") return false;
  return FLOAT32_ONLY[e.fn] !== undefined || e.fn === "atan2" || e.args.some(appliesFloat32Only);
}

/**
 * Whether lowering `group` over inputs of `inputDtypes` computes a float64 step through float32
 * (a FLOAT32_ONLY function: onnxruntime has no double kernel for it), as lowerGroup decides it:
 * the exported model is then less accurate than the op (erf of a float64 to ~1e-8, not ~1e-16).
 */
export function groupLosesFloat64(group: ElementwiseGroup, inputDtypes: readonly DType[]): boolean {
  const dtypes: DType[] = [...inputDtypes];
  for (const step of group.steps) {
    // (computed in double through float32: a loss only where a float64 is involved; float16 gains)
    if ([step.dtype, ...step.args.map((i) => dtypes[i]!)].includes("float64") && appliesFloat32Only(step.expr)) return true;
    dtypes.push(step.dtype);
  }
  return false;
}
