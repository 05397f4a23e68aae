/**
 * Elementwise expressions: the scalar form of an elementwise op, one small tree per op over its
 * operands, which every backend renders in its own language. The CPU backend renders it as
 * JavaScript (its eager loops, fused loops and the compiled executor's inline loops) and as
 * WebAssembly SIMD (the executor's float32 loops); a GPU backend renders it as WGSL. The op
 * declares the expression once (ops/: `elementwise`), the backends never see the op.
 *
 * Semantics every renderer reproduces:
 * - numbers are IEEE float64 values, each operation rounded as JavaScript rounds it; the store
 *   into the output's dtype rounds the result once (a float32 output: Math.fround);
 * - comparisons (eq ... ge), `and`, `or`, `not` and `isFinite` give booleans (stored as 1 / 0);
 * - a condition (`select`'s first operand, `and`/`or`/`not` operands) is JavaScript truthiness:
 *   non-zero and not NaN;
 * - `attr` nodes are numeric attributes of the node, bound (bindAttrs) before rendering.
 *
 * To render an expression, write an ExprRenderer and fold the tree with it (renderExpr); a
 * renderer that cannot express a function returns null from `apply` (the backend then does not
 * take that op: the CPU's SIMD renderer declines `exp`, and the executor keeps its JavaScript
 * loop).
 */
import type { DType } from "./dtype.js";

/** The scalar functions an expression may use, with their arity. */
export const SCALAR_FUNCTIONS = {
  // arithmetic (float64, rounded as JavaScript rounds)
  neg: 1,
  abs: 1,
  add: 2,
  sub: 2,
  mul: 2,
  div: 2,
  sqrt: 1,
  floor: 1,
  ceil: 1,
  // comparisons and logic (booleans)
  eq: 2,
  ne: 2,
  lt: 2,
  le: 2,
  gt: 2,
  ge: 2,
  and: 2,
  or: 2,
  not: 1,
  /** select(c, t, f): t where c is truthy, else f. */
  select: 3,
  // the math library, as JavaScript's Math computes it
  exp: 1,
  log: 1,
  log1p: 1,
  expm1: 1,
  sin: 1,
  cos: 1,
  tan: 1,
  asin: 1,
  acos: 1,
  atan: 1,
  sinh: 1,
  cosh: 1,
  tanh: 1,
  pow: 2,
  atan2: 2,
  /** The error function, accurate to float64 (SCALAR_HELPERS_JS below defines it). */
  erf: 1,
  /** Rounds to the nearest integer, halves to even (IEEE roundTiesToEven). */
  roundHalfEven: 1,
  /** Number.isFinite (a boolean). */
  isFinite: 1,
  // added for ONNX import (C-style integer division and remainder, inverse hyperbolics)
  /** Math.trunc: rounds toward zero. */
  trunc: 1,
  /** The remainder with the dividend's sign, exact (C's fmod; JavaScript's `%`). */
  fmod: 2,
  asinh: 1,
  acosh: 1,
  atanh: 1,
} as const;

export type ScalarFn = keyof typeof SCALAR_FUNCTIONS;

export type Expr = InputExpr | ConstExpr | AttrExpr | ApplyExpr;

/** Operand `index` of the op (its inputs in order). */
export interface InputExpr {
  readonly kind: "input";
  readonly index: number;
}
export interface ConstExpr {
  readonly kind: "const";
  readonly value: number;
}
/** A numeric attribute of the node (e.g. leakyRelu's alpha). */
export interface AttrExpr {
  readonly kind: "attr";
  readonly name: string;
}
export interface ApplyExpr {
  readonly kind: "apply";
  readonly fn: ScalarFn;
  readonly args: readonly Expr[];
}

/**
 * The elementwise form an op declares: the expression of one output element, and optionally a
 * cheaper one for float32 outputs (accurate to float32, e.g. tanh's rational approximation).
 */
export interface ElementwiseForm {
  readonly expr: Expr;
  readonly f32?: Expr;
}

/**
 * One step of an elementwise group (a fused chain, or one op alone): an expression (attributes
 * bound, chosen for the step's dtype) over earlier values of the group.
 */
export interface ElementwiseStep {
  readonly expr: Expr;
  /** The expression's operands: index < numInputs is a group input, otherwise step `index - numInputs`. */
  readonly args: readonly number[];
  /** The step's value is rounded as storing it in this dtype rounds it, before a later step reads it. */
  readonly dtype: DType;
}

/** Elementwise steps computed together, in one loop over the output's shape. */
export interface ElementwiseGroup {
  readonly numInputs: number;
  readonly steps: readonly ElementwiseStep[];
  /** The steps whose values the group writes, in output order. */
  readonly outputs: readonly number[];
}

/** The expression an output of `dtype` uses. */
export function formFor(form: ElementwiseForm, dtype: DType): Expr {
  return dtype === "float32" && form.f32 !== undefined ? form.f32 : form.expr;
}

/** How a reduction combines the elements of a group, one at a time (max/min propagate NaN; any/all test non-zero). */
export type Combine = "sum" | "prod" | "max" | "min" | "any" | "all";

/**
 * The form of a reduction that combines elements one at a time, accumulating in float64 and
 * rounding once into the output (mean: then divided by the group's size).
 */
export interface ReductionForm {
  readonly combine: Combine;
  readonly mean?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Building

export type ExprLike = Expr | number;

export const input = (index: number): InputExpr => ({ kind: "input", index });
export const num = (value: number): ConstExpr => ({ kind: "const", value });
export const attr = (name: string): AttrExpr => ({ kind: "attr", name });

const lift = (x: ExprLike): Expr => (typeof x === "number" ? num(x) : x);

export function apply(fn: ScalarFn, ...args: ExprLike[]): ApplyExpr {
  if (args.length !== SCALAR_FUNCTIONS[fn]) throw new Error(`internal: ${fn} takes ${SCALAR_FUNCTIONS[fn]} operands, got ${args.length}`);
  return { kind: "apply", fn, args: args.map(lift) };
}

/** The first three operands, by the names the ops' formulas use. */
export const a = input(0);
export const b = input(1);
export const c = input(2);

export const neg = (x: ExprLike) => apply("neg", x);
export const abs = (x: ExprLike) => apply("abs", x);
export const add = (x: ExprLike, y: ExprLike) => apply("add", x, y);
export const sub = (x: ExprLike, y: ExprLike) => apply("sub", x, y);
export const mul = (x: ExprLike, y: ExprLike) => apply("mul", x, y);
export const div = (x: ExprLike, y: ExprLike) => apply("div", x, y);
export const sqrt = (x: ExprLike) => apply("sqrt", x);
export const floor = (x: ExprLike) => apply("floor", x);
export const ceil = (x: ExprLike) => apply("ceil", x);
export const eq = (x: ExprLike, y: ExprLike) => apply("eq", x, y);
export const ne = (x: ExprLike, y: ExprLike) => apply("ne", x, y);
export const lt = (x: ExprLike, y: ExprLike) => apply("lt", x, y);
export const le = (x: ExprLike, y: ExprLike) => apply("le", x, y);
export const gt = (x: ExprLike, y: ExprLike) => apply("gt", x, y);
export const ge = (x: ExprLike, y: ExprLike) => apply("ge", x, y);
export const and = (x: ExprLike, y: ExprLike) => apply("and", x, y);
export const or = (x: ExprLike, y: ExprLike) => apply("or", x, y);
export const not = (x: ExprLike) => apply("not", x);
export const select = (cond: ExprLike, t: ExprLike, f: ExprLike) => apply("select", cond, t, f);
/** A math-library function of one or two operands (exp, log, ..., pow, atan2, erf). */
export const fn = (name: ScalarFn, ...args: ExprLike[]) => apply(name, ...args);

// ---------------------------------------------------------------------------------------------
// Rendering and inspection

/** What a backend supplies to render an expression; `apply` returns null for a function it cannot express. */
export interface ExprRenderer<T> {
  input(index: number): T;
  constant(value: number): T;
  apply(fn: ScalarFn, args: T[]): T | null;
}

/** Folds `e` bottom-up with `r`; null when some function cannot be rendered. Attributes must be bound. */
export function renderExpr<T>(e: Expr, r: ExprRenderer<T>): T | null {
  switch (e.kind) {
    case "input":
      return r.input(e.index);
    case "const":
      return r.constant(e.value);
    case "attr":
      throw new Error(`internal: attribute ${e.name} of an elementwise expression is not bound`);
    case "apply": {
      const args: T[] = [];
      for (const x of e.args) {
        const v = renderExpr(x, r);
        if (v === null) return null;
        args.push(v);
      }
      return r.apply(e.fn, args);
    }
  }
}

/** Whether `e` reads a numeric attribute. */
export function hasAttrs(e: Expr): boolean {
  return e.kind === "attr" || (e.kind === "apply" && e.args.some(hasAttrs));
}

/** `e` with every attribute replaced by its value in `attrs` (a number, or an error naming it). */
export function bindAttrs(e: Expr, attrs: Readonly<Record<string, unknown>> | undefined): Expr {
  if (!hasAttrs(e)) return e;
  const bind = (x: Expr): Expr => {
    if (x.kind === "attr") {
      const v = attrs?.[x.name];
      if (typeof v !== "number") throw new Error(`elementwise expression needs numeric attribute ${x.name}, got ${JSON.stringify(v)}`);
      return num(v);
    }
    return x.kind === "apply" ? { kind: "apply", fn: x.fn, args: x.args.map(bind) } : x;
  };
  return bind(e);
}

/** A string naming `e` exactly (for caches): equal keys, equal expressions. */
export function exprKey(e: Expr): string {
  switch (e.kind) {
    case "input":
      return `$${e.index}`;
    case "const":
      return Object.is(e.value, -0) ? "-0" : String(e.value);
    case "attr":
      return `@${e.name}`;
    case "apply":
      return `${e.fn}(${e.args.map(exprKey).join(",")})`;
  }
}

/** The reference semantics: `e` evaluated on concrete operands, as every renderer must compute it. */
export function evaluateExpr(e: Expr, operands: readonly number[]): number | boolean {
  const v = (x: Expr): number => Number(evaluateExpr(x, operands));
  const truthy = (x: Expr): boolean => {
    const t = evaluateExpr(x, operands);
    return typeof t === "boolean" ? t : t !== 0 && t === t;
  };
  switch (e.kind) {
    case "input":
      return operands[e.index]!;
    case "const":
      return e.value;
    case "attr":
      throw new Error(`internal: attribute ${e.name} of an elementwise expression is not bound`);
    case "apply": {
      const [x, y, z] = e.args as [Expr, Expr, Expr];
      switch (e.fn) {
        case "neg":
          return -v(x);
        case "abs":
          return Math.abs(v(x));
        case "add":
          return v(x) + v(y);
        case "sub":
          return v(x) - v(y);
        case "mul":
          return v(x) * v(y);
        case "div":
          return v(x) / v(y);
        case "sqrt":
          return Math.sqrt(v(x));
        case "floor":
          return Math.floor(v(x));
        case "ceil":
          return Math.ceil(v(x));
        case "eq":
          return v(x) === v(y);
        case "ne":
          return v(x) !== v(y);
        case "lt":
          return v(x) < v(y);
        case "le":
          return v(x) <= v(y);
        case "gt":
          return v(x) > v(y);
        case "ge":
          return v(x) >= v(y);
        case "and":
          return truthy(x) && truthy(y);
        case "or":
          return truthy(x) || truthy(y);
        case "not":
          return !truthy(x);
        case "select":
          return truthy(x) ? evaluateExpr(y, operands) : evaluateExpr(z, operands);
        case "pow":
          return Math.pow(v(x), v(y));
        case "atan2":
          return Math.atan2(v(x), v(y));
        case "erf":
          return erf(v(x));
        case "roundHalfEven":
          return roundHalfEven(v(x));
        case "isFinite":
          return Number.isFinite(v(x));
        case "fmod":
          return v(x) % v(y);
        default:
          return Math[e.fn](v(x));
      }
    }
  }
}

/**
 * The reference definitions of `erf` (accurate to float64: the Maclaurin series below 2.5, a
 * continued fraction for erfc above, W. J. Cody style) and `roundHalfEven`, as JavaScript source:
 * the CPU backend puts it before its generated loops (backends/cpu/js-expr.ts) and
 * evaluateExpr runs it, so both give the same bits.
 */
export const SCALAR_HELPERS_JS = `
function erf(x) {
  if (x === 0) return x; // (erf is odd: erf(-0) is -0, which the series below turns into +0)
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let sum = x, term = x, x2 = x * x;
    for (let n = 1; n < 60; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return 1.1283791670955126 * sum;
  }
  if (ax > 6) return x > 0 ? 1 : -1;
  let f = 0;
  for (let n = 60; n >= 1; n--) f = (n / 2) / (ax + f);
  const erfc = Math.exp(-ax * ax) / (ax + f) / 1.7724538509055159;
  return x > 0 ? 1 - erfc : erfc - 1;
}
function roundHalfEven(x) {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
}
`;

const { erf, roundHalfEven } = new Function(`${SCALAR_HELPERS_JS}\nreturn { erf, roundHalfEven };`)() as {
  erf: (x: number) => number;
  roundHalfEven: (x: number) => number;
};
