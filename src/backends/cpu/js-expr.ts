/**
 * The CPU backend's JavaScript rendering of elementwise expressions (core/expr.ts): the source of
 * one element's value, over the operands' names, for the eager loops (elementwise.ts), fused
 * loops (fused.ts) and the compiled executor's inline loops (js-loops.ts). The source computes
 * exactly what the expression's semantics say (it is JavaScript's own arithmetic), and needs the
 * helpers of SCALAR_PRELUDE in scope.
 */
import type { DType } from "../../core/dtype.js";
import { renderExpr, SCALAR_HELPERS_JS, type Expr, type ExprRenderer, type ScalarFn } from "../../core/expr.js";
import { ROUND_F16_SOURCE } from "../../core/float16.js";

/**
 * Source of `storeInt64(x)`: x as a store into int64 (or uint64) storage keeps it, which is a
 * Float64Array: truncated, and 0 for NaN and infinities, as the other integer typed arrays store
 * them (an int64 floorDiv or mod by zero gave Infinity and NaN, a pow with a negative exponent
 * 0.5: values no int64 holds, and onnxruntime's plan gave INT64_MIN for them).
 */
const STORE_INT64_SOURCE = `
function storeInt64(x) {
  return x - x === 0 ? Math.trunc(x) + 0 : 0;
}
`;

/**
 * The helper functions rendered source calls (erf, roundHalfEven) and the float16 rounding of
 * stores (roundF16): put it before generated loops.
 */
export const SCALAR_PRELUDE = SCALAR_HELPERS_JS + ROUND_F16_SOURCE + STORE_INT64_SOURCE;

const INFIX: Partial<Record<ScalarFn, string>> = {
  add: "+",
  sub: "-",
  mul: "*",
  div: "/",
  eq: "===",
  ne: "!==",
  lt: "<",
  le: "<=",
  gt: ">",
  ge: ">=",
};

/** Functions rendered as calls of a helper of the scalar prelude. */
const HELPERS: Partial<Record<ScalarFn, string>> = { erf: "erf", roundHalfEven: "roundHalfEven", isFinite: "Number.isFinite" };

export function jsLiteral(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "(-Infinity)";
  if (Object.is(v, -0)) return "(-0)";
  return v < 0 ? `(${v})` : String(v);
}

const renderer = (operands: readonly string[]): ExprRenderer<string> => ({
  input: (i) => {
    const name = operands[i];
    if (name === undefined) throw new Error(`internal: the expression reads operand ${i}, but only ${operands.length} are given`);
    return name;
  },
  constant: jsLiteral,
  apply(fn, args) {
    const [x, y, z] = args;
    const infix = INFIX[fn];
    if (infix) return `(${x} ${infix} ${y})`;
    const helper = HELPERS[fn];
    if (helper) return `${helper}(${x})`;
    switch (fn) {
      case "neg":
        return `(-${x})`;
      case "and":
        return `(!!${x} && !!${y})`;
      case "or":
        return `(!!${x} || !!${y})`;
      case "not":
        return `(!${x})`;
      case "select":
        return `(${x} ? ${y} : ${z})`;
      case "fmod":
        return `(${x} % ${y})`;
      default:
        return `Math.${fn}(${args.join(", ")})`;
    }
  },
});

/** `expr` rounded as a store into `dtype`'s storage rounds it (the value a later step must read). */
export function storeConversion(dtype: DType, expr: string): string {
  switch (dtype) {
    case "float32":
      return `Math.fround(${expr})`;
    case "float16":
      // float16 storage is a Float32Array holding float16 values (core/dtype.ts): a store rounds
      // to float32 and the kernel's output is then rounded to float16 (ops/registry.ts)
      return `roundF16(Math.fround(${expr}))`;
    case "float64":
      return `(+(${expr}))`;
    case "int64":
    case "uint64":
      return `storeInt64(${expr})`;
    case "int32":
      return `((${expr}) | 0)`;
    case "uint32":
      return `((${expr}) >>> 0)`;
    case "int16":
      return `(((${expr}) << 16) >> 16)`;
    case "uint16":
      return `((${expr}) & 65535)`;
    case "int8":
      return `(((${expr}) << 24) >> 24)`;
    case "uint8":
    case "bool":
      return `((${expr}) & 255)`;
  }
}

/** JavaScript source of `e` (attributes bound) over the operand expressions `operands`. */
export function jsSource(e: Expr, operands: readonly string[]): string {
  return renderExpr(e, renderer(operands))!;
}
