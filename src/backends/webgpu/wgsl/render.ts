/**
 * Renders an elementwise expression (core/expr.ts) as a WGSL expression with JavaScript's
 * semantics, as far as 32-bit arithmetic allows.
 *
 * JavaScript computes every template in float64 and rounds once, into the output's typed array.
 * Here values are typed: "i" (i32: exact integers; +, -, * wrap, which equals the typed-array store
 * of the exact result while it stays below 2^53), "f" (f32), "b" (bool). Division and every Math
 * function give "f". Stores follow the typed arrays: ToInt32 for int32 (NaN and infinities give 0),
 * the low 8 bits for uint8, 0/1 for bool.
 *
 * Known differences from the CPU (documented in docs/webgpu.md): float32 results are computed in
 * float32 (a few ulp apart; trigonometric builtins are only as accurate as the GPU's), integer
 * products past 2^53 and int32 floor division past 2^24 are exact here where JavaScript rounds.
 */
import type { ApplyExpr, Expr, ScalarFn } from "../../../core/expr.js";
import type { WgslScalar } from "../kernels/common.js";

export type ValueType = "i" | "f" | "b";
export interface Rendered {
  code: string;
  t: ValueType;
}

function lit(v: number): Rendered {
  if (Number.isNaN(v)) return { code: "nan_f32()", t: "f" };
  if (v === Infinity) return { code: "inf_f32()", t: "f" };
  if (v === -Infinity) return { code: "(-inf_f32())", t: "f" };
  if (Number.isInteger(v) && Math.abs(v) < 2 ** 31 && !Object.is(v, -0)) return { code: `${v}i`, t: "i" };
  return { code: f32Literal(v), t: "f" };
}

/** A WGSL f32 literal (the value rounded to float32 first, so WGSL never sees an out-of-range one). */
export function f32Literal(v: number): string {
  const f = Math.fround(v);
  if (!Number.isFinite(f)) return f > 0 ? "inf_f32()" : f < 0 ? "(-inf_f32())" : "nan_f32()";
  if (Object.is(f, -0)) return "(-0.0)";
  let s = String(f);
  if (!/[.e]/.test(s)) s += ".0";
  return `f32(${s})`;
}

export function toF(r: Rendered): string {
  return r.t === "f" ? r.code : r.t === "i" ? `f32(${r.code})` : `select(0.0, 1.0, ${r.code})`;
}
function toI(r: Rendered): string {
  return r.t === "i" ? r.code : r.t === "f" ? `f2i(${r.code})` : `select(0i, 1i, ${r.code})`;
}
/** JavaScript truthiness: 0 and NaN are false. */
export function toB(r: Rendered): string {
  return r.t === "b" ? r.code : r.t === "i" ? `(${r.code} != 0i)` : `truthy_f(${r.code})`;
}

/** Math functions of one float argument: the WGSL builtin or helper. */
const F1: Partial<Record<ScalarFn, string>> = {
  exp: "exp",
  log: "log",
  sqrt: "sqrt",
  sin: "sin",
  cos: "cos",
  tan: "tan",
  asin: "asin_f32",
  acos: "acos_f32",
  atan: "atan_f32",
  sinh: "sinh",
  cosh: "cosh",
  tanh: "tanh_f32",
  log1p: "log1p_f32",
  expm1: "expm1_f32",
  erf: "erf_f32",
  asinh: "asinh_f32",
  acosh: "acosh_f32",
  atanh: "atanh_f32",
  trunc: "trunc",
  roundHalfEven: "round",
  floor: "floor",
  ceil: "ceil",
  abs: "abs",
};

const COMPARE: Partial<Record<ScalarFn, string>> = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" };
const ARITH: Partial<Record<ScalarFn, string>> = { add: "+", sub: "-", mul: "*" };

function sameExpr(a: Expr, b: Expr): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Renders `e` over the operands' rendered values (attributes bound). */
export function renderTyped(e: Expr, vars: readonly Rendered[]): Rendered {
  switch (e.kind) {
    case "const":
      return lit(e.value);
    case "input": {
      const v = vars[e.index];
      if (!v) throw new Error(`internal: the expression reads operand ${e.index}, but only ${vars.length} are given`);
      return v;
    }
    case "attr":
      throw new Error(`internal: attribute ${e.name} of an elementwise expression is not bound`);
    case "apply":
      return renderCall(e, vars);
  }
}

function renderCall(e: ApplyExpr, vars: readonly Rendered[]): Rendered {
  const { fn } = e;
  const [x0, y0] = e.args;
  // x != x / x == x: NaN tests on the bits (a compiler may fold x != x to false).
  if ((fn === "ne" || fn === "eq") && sameExpr(x0!, y0!)) {
    const x = renderTyped(x0!, vars);
    if (x.t !== "f") return { code: fn === "ne" ? "false" : "true", t: "b" };
    return { code: fn === "ne" ? `is_nan(${x.code})` : `(!is_nan(${x.code}))`, t: "b" };
  }
  // floor(p / q) of integers: exact integer floor division (JavaScript divides in float64).
  if (fn === "floor" && x0!.kind === "apply" && x0!.fn === "div") {
    const p = renderTyped(x0!.args[0]!, vars);
    const q = renderTyped(x0!.args[1]!, vars);
    if (p.t !== "f" && q.t !== "f") return { code: `floordiv_i(${toI(p)}, ${toI(q)})`, t: "f" };
  }
  // trunc(p / q) of integers: C's integer division. (JavaScript gives +-Infinity or NaN for q = 0,
  // which every integer store makes 0; the dtype rule of truncDiv keeps integers integers.)
  if (fn === "trunc" && x0!.kind === "apply" && x0!.fn === "div") {
    const p = renderTyped(x0!.args[0]!, vars);
    const q = renderTyped(x0!.args[1]!, vars);
    if (p.t !== "f" && q.t !== "f") return { code: `truncdiv_i(${toI(p)}, ${toI(q)})`, t: "i" };
  }
  const args = e.args.map((a) => renderTyped(a, vars));
  const [x, y, z] = args as [Rendered, Rendered, Rendered];
  const allInt = args.every((a) => a.t !== "f");
  // The bitwise ops' WGSL-only functions (op-kernels/elementwise.ts builds them): on i32 words.
  switch (fn as string) {
    case "bitAnd":
    case "bitOr":
    case "bitXor":
      return { code: `(${toI(x)} ${fn === ("bitAnd" as ScalarFn) ? "&" : fn === ("bitOr" as ScalarFn) ? "|" : "^"} ${toI(y)})`, t: "i" };
    case "bitNot":
      return { code: `(~${toI(x)})`, t: "i" };
    case "shl":
    case "shr":
    case "shru":
      return { code: `${fn}_i(${toI(x)}, ${toI(y)})`, t: "i" };
    case "bitcastWord":
      return x.t === "f" ? { code: `bitcast<i32>(${x.code})`, t: "i" } : { code: `bitcast<f32>(${toI(x)})`, t: "f" };
  }
  const arith = ARITH[fn];
  if (arith) {
    if (allInt) return { code: `(${toI(x)} ${arith} ${toI(y)})`, t: "i" };
    return { code: `(${toF(x)} ${arith} ${toF(y)})`, t: "f" };
  }
  const cmp = COMPARE[fn];
  if (cmp) {
    if (x.t === "b" && y.t === "b" && (cmp === "==" || cmp === "!=")) return { code: `(${x.code} ${cmp} ${y.code})`, t: "b" };
    if (allInt) return { code: `(${toI(x)} ${cmp} ${toI(y)})`, t: "b" };
    // (a NaN operand makes != true; compilers may emit an ordered comparison, false for NaN)
    if (cmp === "!=") return { code: `ne_f32(${toF(x)}, ${toF(y)})`, t: "b" };
    return { code: `(${toF(x)} ${cmp} ${toF(y)})`, t: "b" };
  }
  switch (fn) {
    case "neg":
      return x.t === "i" ? { code: `(-${x.code})`, t: "i" } : { code: `(-${toF(x)})`, t: "f" };
    case "div":
      return { code: `(${toF(x)} / ${toF(y)})`, t: "f" };
    case "and":
    case "or":
      return { code: `(${toB(x)} ${fn === "and" ? "&&" : "||"} ${toB(y)})`, t: "b" };
    case "not":
      return { code: `(!${toB(x)})`, t: "b" };
    case "select": {
      const [tc, fc, t] = unify(y, z);
      return { code: `select(${fc}, ${tc}, ${toB(x)})`, t };
    }
    case "isFinite":
      return x.t === "f" ? { code: `is_finite(${x.code})`, t: "b" } : { code: "true", t: "b" };
    case "pow":
      if (allInt) return { code: `pow_i(${toI(x)}, ${toI(y)})`, t: "i" };
      return { code: `pow_f32(${toF(x)}, ${toF(y)})`, t: "f" };
    case "atan2":
      return { code: `atan2_f32(${toF(x)}, ${toF(y)})`, t: "f" };
    case "fmod":
      // (integers: JavaScript's NaN for a zero divisor is 0 in every integer store)
      if (allInt) return { code: `fmod_i(${toI(x)}, ${toI(y)})`, t: "i" };
      return { code: `fmod_f32(${toF(x)}, ${toF(y)})`, t: "f" };
  }
  // Functions that keep integers integral (exact on ints).
  if (x.t !== "f" && (fn === "abs" || fn === "floor" || fn === "ceil" || fn === "roundHalfEven" || fn === "trunc")) {
    return fn === "abs" ? { code: `abs(${toI(x)})`, t: "i" } : { code: toI(x), t: "i" };
  }
  const name = F1[fn];
  if (name) return { code: `${name}(${toF(x)})`, t: "f" };
  throw new Error(`the WGSL renderer has no rendering of the scalar function ${fn}`);
}

/** Common type of two branches: i with i, b with b, else f. */
function unify(a: Rendered, b: Rendered): [string, string, ValueType] {
  if (a.t === b.t) return [a.code, b.code, a.t];
  if (a.t !== "f" && b.t !== "f") return [toI(a), toI(b), "i"];
  return [toF(a), toF(b), "f"];
}

/** Converts a rendered value for a store into a buffer of element type `s` holding `dtype`. */
export function renderStore(r: Rendered, dtype: string): string {
  switch (dtype) {
    case "float32":
      return toF(r);
    case "int32":
      return toI(r);
    case "uint8":
      return r.t === "f" ? `f2u8(${r.code})` : `(bitcast<u32>(${toI(r)}) & 0xffu)`;
    case "bool":
      // (a Uint8Array store: the low 8 bits of the number)
      return r.t === "b" ? `select(0u, 1u, ${r.code})` : r.t === "i" ? `(bitcast<u32>(${r.code}) & 0xffu)` : `f2u8(${r.code})`;
    default:
      throw new Error(`no WGSL store for ${dtype}`);
  }
}

/** The rendered value of a loaded element of a buffer of `dtype`. */
export function loadedValue(code: string, s: WgslScalar): Rendered {
  return s === "f32" ? { code, t: "f" } : s === "i32" ? { code, t: "i" } : { code: `i32(${code})`, t: "i" };
}

/** WGSL versions of the scalar functions templates call (see backends/cpu/scalar-math.ts). */
export const MATH_HELPERS = `
fn truthy_f(x: f32) -> bool { return x != 0.0 && !is_nan(x); }
// floor(p / q) of integers; q = 0 gives +-Infinity or NaN, as JavaScript's float division does.
fn floordiv_i(p: i32, q: i32) -> f32 {
  if (q == 0) { if (p == 0) { return nan_f32(); } return select(-inf_f32(), inf_f32(), p > 0); }
  if (p == -2147483647 - 1 && q == -1) { return 2147483648.0; }
  var d = p / q;
  if ((p % q != 0) && ((p < 0) != (q < 0))) { d = d - 1; }
  return f32(d);
}
fn log1p_f32(x: f32) -> f32 {
  if (x < -1.0) { return nan_f32(); }
  if (x == -1.0) { return -inf_f32(); }
  let u = 1.0 + x;
  if (u == 1.0) { return x; }
  if (is_inf(u)) { return u; }
  return log(u) * (x / (u - 1.0));
}
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) < 1e-5) { return x + 0.5 * x * x; }
  let u = exp(x);
  if (is_inf(u)) { return u; }
  let um1 = u - 1.0;
  if (um1 == -1.0) { return -1.0; }
  return um1 * (x / log(u));
}
fn ne_f32(a: f32, b: f32) -> bool { return (a != b) || is_nan(a) || is_nan(b); }
fn is_odd_int(b: f32) -> bool { return b == trunc(b) && abs(b) < 16777216.0 && (i32(abs(b)) & 1) == 1; }
// a^n for an integer n by squaring (pow's exp2(n log2 a) is off by ulps even for small integers).
fn powi_f32(a: f32, n: f32) -> f32 {
  var e = u32(abs(n));
  var base = a;
  var r = 1.0;
  loop {
    if ((e & 1u) == 1u) { r = r * base; }
    e = e >> 1u;
    if (e == 0u) { break; }
    base = base * base;
  }
  return select(r, 1.0 / r, n < 0.0);
}
// Math.pow: negative bases with integer exponents, signed zeros and infinities as JavaScript.
fn pow_f32(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (is_nan(a) || is_nan(b)) { return nan_f32(); }
  let odd = is_odd_int(b);
  if (a == 0.0 || is_inf(a)) {
    let neg = bitcast<u32>(a) >= 0x80000000u && odd;
    let big = (a == 0.0) == (b < 0.0);
    let m = select(0.0, inf_f32(), big);
    return select(m, -m, neg);
  }
  if (b == trunc(b) && abs(b) < 16777216.0) { return powi_f32(a, b); }
  if (a < 0.0) {
    if (!is_inf(b)) { return nan_f32(); }
    return pow(-a, b);
  }
  return pow(a, b);
}
// Math.pow of integers, stored as int32: exact (wrapping) powers; negative exponents truncate.
fn pow_i(a: i32, b: i32) -> i32 {
  if (b < 0) {
    if (a == 1) { return 1; }
    if (a == -1) { return select(1, -1, (b & 1) == 1); }
    return 0;
  }
  var e = u32(b);
  var base = a;
  var r = 1i;
  loop {
    if (e == 0u) { break; }
    if ((e & 1u) == 1u) { r = r * base; }
    e = e >> 1u;
    base = base * base;
  }
  return r;
}
// Inverse trigonometric functions (Cephes' single-precision polynomials): GPUs' builtins are
// allowed errors of 1e-4 and more.
fn atan_f32(x0: f32) -> f32 {
  if (is_nan(x0)) { return x0; }
  let ax = abs(x0);
  var y0 = 0.0;
  var x = ax;
  if (ax > 2.414213562373095) { y0 = 1.5707963267948966; x = -1.0 / ax; }
  else if (ax > 0.4142135623730950) { y0 = 0.7853981633974483; x = (ax - 1.0) / (ax + 1.0); }
  let z = x * x;
  let y = y0 + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * x + x);
  return select(y, -y, x0 < 0.0);
}
fn atan2_f32(y: f32, x: f32) -> f32 {
  if (is_nan(x) || is_nan(y)) { return nan_f32(); }
  let sy = select(1.0, -1.0, bitcast<u32>(y) >= 0x80000000u);
  let xneg = bitcast<u32>(x) >= 0x80000000u;
  if (y == 0.0) { return sy * select(0.0, 3.141592653589793, xneg); }
  if (x == 0.0) { return sy * 1.5707963267948966; }
  if (is_inf(x)) {
    if (is_inf(y)) { return sy * select(0.7853981633974483, 2.356194490192345, xneg); }
    return sy * select(0.0, 3.141592653589793, xneg);
  }
  if (is_inf(y)) { return sy * 1.5707963267948966; }
  let a = atan_f32(abs(y / x));
  return sy * select(a, 3.141592653589793 - a, xneg);
}
fn asin_core(ax: f32) -> f32 {
  // ax in [0, 1]
  if (ax > 0.5) {
    let z = 0.5 * (1.0 - ax);
    let s = sqrt(z);
    return 1.5707963267948966 - 2.0 * (s + s * z * ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z + 1.6666752422e-1));
  }
  let z = ax * ax;
  return ax + ax * z * ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z + 1.6666752422e-1);
}
fn asin_f32(x: f32) -> f32 {
  if (is_nan(x) || abs(x) > 1.0) { return nan_f32(); }
  let r = asin_core(abs(x));
  return select(r, -r, x < 0.0);
}
fn acos_f32(x: f32) -> f32 {
  if (is_nan(x) || abs(x) > 1.0) { return nan_f32(); }
  if (x < -0.5) { return 3.141592653589793 - 2.0 * asin_core(sqrt(0.5 * (1.0 + x))); }
  if (x > 0.5) { return 2.0 * asin_core(sqrt(0.5 * (1.0 - x))); }
  return 1.5707963267948966 - asin_f32(x);
}
// tanh (float32 outputs use the op's own float32 form, ops/tanh-f32.ts; this serves the general
// form): 1 - 2 / (exp(2|x|) + 1), with the small-|x| and overflow ends handled.
fn tanh_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let ax = abs(x);
  if (ax < 0.0004) { return x; }
  if (ax > 9.0) { return sign(x); }
  let e = exp(2.0 * ax);
  return sign(x) * (1.0 - 2.0 / (e + 1.0));
}
// erf in float32: a Maclaurin polynomial below 0.5, 1 - erfc (Numerical Recipes' erfcc, relative
// error < 1.2e-7) above.
fn erf_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (is_nan(x)) { return x; }
  if (ax < 0.5) {
    let y = x * x;
    return x * (1.1283791670955126 + y * (-0.37612638903183754 + y * (0.11283791670955126 + y * (-0.026866170645131252 + y * (0.005223977625442188 + y * -0.0008548327023450853)))));
  }
  if (ax > 4.0) { return sign(x); }
  let t = 1.0 / (1.0 + 0.5 * ax);
  let erfc = t * exp(-ax * ax - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return sign(x) * (1.0 - erfc);
}
// C's integer division and remainder (a zero divisor gives 0; i32 min / -1 wraps, as ToInt32 of 2^31).
fn truncdiv_i(p: i32, q: i32) -> i32 {
  if (q == 0) { return 0; }
  if (q == -1) { return -p; }
  return p / q;
}
fn fmod_i(p: i32, q: i32) -> i32 {
  if (q == 0 || q == -1) { return 0; }
  return p % q;
}
// JavaScript's x % y on floats, exactly (the remainder of two float32 values is a float32 value):
// subtract the largest y * 2^k not above the rest until it is below |y| (each subtraction is exact).
fn fmod_f32(x: f32, y: f32) -> f32 {
  if (is_nan(x) || is_nan(y) || is_inf(x) || y == 0.0) { return nan_f32(); }
  if (is_inf(y)) { return x; }
  let m = abs(y);
  var r = abs(x);
  if (r < m) { return x; }
  for (var it = 0; it < 320; it++) {
    if (r < m) { break; }
    let k = frexp(r).exp - frexp(m).exp;
    var t = ldexp(m, k);
    if (t > r) { t = ldexp(m, k - 1); }
    r = r - t;
  }
  return select(r, -r, x < 0.0);
}
// The inverse hyperbolic functions in float32: log1p forms near 0 and 1, log(2x) where x * x overflows.
fn asinh_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (is_nan(x) || is_inf(x) || ax == 0.0) { return x; }
  var r: f32;
  if (ax > 1e18) { r = log(ax) + 0.6931471805599453; } else { r = log1p_f32(ax + ax * ax / (1.0 + sqrt(1.0 + ax * ax))); }
  return select(r, -r, x < 0.0);
}
fn acosh_f32(x: f32) -> f32 {
  if (is_nan(x) || x < 1.0) { return nan_f32(); }
  if (is_inf(x)) { return x; }
  if (x > 1e18) { return log(x) + 0.6931471805599453; }
  let t = x - 1.0;
  return log1p_f32(t + sqrt(2.0 * t + t * t));
}
fn atanh_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (is_nan(x) || ax > 1.0) { return nan_f32(); }
  if (ax == 0.0) { return x; }
  if (ax == 1.0) { return select(inf_f32(), -inf_f32(), x < 0.0); }
  let r = 0.5 * log1p_f32(2.0 * ax / (1.0 - ax));
  return select(r, -r, x < 0.0);
}
// Shifts as JavaScript's 32-bit operators with the bitwise ops' guards (ops/bitwise.ts).
fn shl_i(a: i32, b: i32) -> i32 {
  if (b < 0 || b >= 32) { return 0; }
  return a << u32(b);
}
fn shr_i(a: i32, b: i32) -> i32 {
  if (b < 0) { return 0; }
  return a >> u32(min(b, 31));
}
fn shru_i(a: i32, b: i32) -> i32 {
  if (b < 0 || b >= 32) { return 0; }
  return bitcast<i32>(bitcast<u32>(a) >> u32(b));
}
`;
