/** Unary elementwise ops. Each: expression, dtype rule, VJP written with registry ops. */
import * as E from "../core/expr.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { tanhF32 } from "./tanh-f32.js";
import { installMethods } from "./methods.js";
import { callElementwise, callElementwiseWithAttrs, defineElementwise, unaryVjp, type DtypeRule, type UnaryVjp } from "./define-elementwise.js";
import { add, div, mul, sub } from "./binary.js";
import { greater } from "./compare.js";
import { cast } from "./cast.js";
import { zerosLikeTensor } from "./fill.js";

const SQRT_2_OVER_PI_HALF = 0.3989422804014327; // 1/sqrt(2*pi)
const TWO_OVER_SQRT_PI = 1.1283791670955126;

const { a } = E;

function unary(name: string, expr: E.Expr, dtype: DtypeRule, vjp?: UnaryVjp | "zero", f32?: E.Expr) {
  return defineElementwise({
    name,
    family: "unary",
    inputs: ["x"],
    expr,
    ...(f32 ? { f32 } : {}),
    dtype,
    // (a derivative that is zero everywhere is a zero gradient, not a cut path: the source is
    // connected, as PyTorch has it; only stopGradient and unwatched tensors are unconnected)
    ...(vjp === "zero" ? { vjp: (_ctx: unknown, cts: (Tensor | null)[]) => [cts[0] ? zerosLikeTensor(cts[0]) : null] } : vjp ? { vjp: unaryVjp(vjp) } : {}),
  });
}

/** 1 where x > 0 else 0, in x's dtype (the derivative of relu). */
function step(x: Tensor): Tensor {
  return cast(greater(x, 0), x.dtype);
}

export const negOp = unary("neg", E.neg(a), "numeric", (_x, _y, dy) => neg(dy));
export const absOp = unary("abs", E.abs(a), "numeric", (x, _y, dy) => mul(dy, sign(x)));
export const signOp = unary("sign", E.select(E.gt(a, 0), 1, E.select(E.lt(a, 0), -1, a)), "numeric", "zero");
export const expOp = unary("exp", E.fn("exp", a), "float", (_x, y, dy) => mul(dy, y));
export const logOp = unary("log", E.fn("log", a), "float", (x, _y, dy) => div(dy, x));
export const log1pOp = unary("log1p", E.fn("log1p", a), "float", (x, _y, dy) => div(dy, add(x, 1)));
export const expm1Op = unary("expm1", E.fn("expm1", a), "float", (_x, y, dy) => mul(dy, add(y, 1)));
export const sqrtOp = unary("sqrt", E.sqrt(a), "float", (_x, y, dy) => div(mul(dy, 0.5), y));
export const rsqrtOp = unary("rsqrt", E.div(1, E.sqrt(a)), "float", (x, y, dy) => mul(dy, div(mul(y, -0.5), x)));
export const squareOp = unary("square", E.mul(a, a), "same", (x, _y, dy) => mul(dy, mul(x, 2)));
export const reciprocalOp = unary("reciprocal", E.div(1, a), "float", (_x, y, dy) => neg(mul(dy, mul(y, y))));
export const sinOp = unary("sin", E.fn("sin", a), "float", (x, _y, dy) => mul(dy, cos(x)));
export const cosOp = unary("cos", E.fn("cos", a), "float", (x, _y, dy) => neg(mul(dy, sin(x))));
export const tanOp = unary("tan", E.fn("tan", a), "float", (_x, y, dy) => mul(dy, add(mul(y, y), 1)));
export const asinOp = unary("asin", E.fn("asin", a), "float", (x, _y, dy) => mul(dy, rsqrt(sub(1, mul(x, x)))));
export const acosOp = unary("acos", E.fn("acos", a), "float", (x, _y, dy) => neg(mul(dy, rsqrt(sub(1, mul(x, x))))));
export const atanOp = unary("atan", E.fn("atan", a), "float", (x, _y, dy) => div(dy, add(mul(x, x), 1)));
export const sinhOp = unary("sinh", E.fn("sinh", a), "float", (x, _y, dy) => mul(dy, cosh(x)));
export const coshOp = unary("cosh", E.fn("cosh", a), "float", (x, _y, dy) => mul(dy, sinh(x)));
export const tanhOp = unary("tanh", E.fn("tanh", a), "float", (_x, y, dy) => mul(dy, sub(1, mul(y, y))), tanhF32(a));
export const sigmoidOp = unary("sigmoid", E.select(E.ge(a, 0), E.div(1, E.add(1, E.fn("exp", E.neg(a)))), E.div(E.fn("exp", a), E.add(1, E.fn("exp", a)))), "float", (_x, y, dy) => mul(dy, mul(y, sub(1, y))));
// max(x, 0) that propagates NaN (as ONNX Relu, PyTorch, TensorFlow and JAX do: a NaN turned into
// 0 would hide a diverging model); -0 passes through, as in onnxruntime's Relu and PyTorch's.
export const reluOp = unary("relu", E.select(E.lt(a, 0), 0, a), "numeric", (x, _y, dy) => mul(dy, step(x)));
export const softplusOp = unary("softplus", E.add(E.select(E.gt(a, 0), a, 0), E.fn("log1p", E.fn("exp", E.neg(E.abs(a))))), "float", (x, _y, dy) => mul(dy, sigmoid(x)));
export const erfOp = unary("erf", E.fn("erf", a), "float", (x, _y, dy) => mul(dy, mul(exp(neg(mul(x, x))), TWO_OVER_SQRT_PI)));
export const geluOp = unary("gelu", E.mul(E.mul(0.5, a), E.add(1, E.fn("erf", E.mul(a, 0.7071067811865476)))), "float", (x, _y, dy) => {
  const cdf = mul(add(erf(mul(x, Math.SQRT1_2)), 1), 0.5);
  const pdf = mul(exp(mul(mul(x, x), -0.5)), SQRT_2_OVER_PI_HALF);
  return mul(dy, add(cdf, mul(x, pdf)));
});
export const floorOp = unary("floor", E.floor(a), "numeric", "zero");
export const ceilOp = unary("ceil", E.ceil(a), "numeric", "zero");
export const roundOp = unary("round", E.fn("roundHalfEven", a), "numeric", "zero");
export const isNaNOp = unary("isNaN", E.ne(a, a), "bool");
export const isFiniteOp = unary("isFinite", E.fn("isFinite", a), "bool");

export const leakyReluOp = defineElementwise({
  name: "leakyRelu",
  family: "unary",
  inputs: ["x"],
  expr: E.select(E.gt(a, 0), a, E.mul(a, E.attr("alpha"))),
  dtype: "float",
  vjp: (ctx, cts) => {
    const x = ctx.inputs[0]!;
    const s = step(x);
    const alpha = (ctx.attrs as { alpha: number }).alpha;
    return [mul(cts[0]!, add(s, mul(sub(1, s), alpha)))];
  },
});
export const eluOp = defineElementwise({
  name: "elu",
  family: "unary",
  inputs: ["x"],
  expr: E.select(E.gt(a, 0), a, E.mul(E.attr("alpha"), E.fn("expm1", a))),
  dtype: "float",
  vjp: (ctx, cts) => {
    const x = ctx.inputs[0]!;
    const s = step(x);
    const alpha = (ctx.attrs as { alpha: number }).alpha;
    // derivative: 1 for x > 0, alpha * exp(x) otherwise (= y + alpha)
    return [mul(cts[0]!, add(s, mul(sub(1, s), mul(exp(x), alpha))))];
  },
});

export const neg = (x: TensorLike): Tensor => callElementwise(negOp, x);
export const abs = (x: TensorLike): Tensor => callElementwise(absOp, x);
export const sign = (x: TensorLike): Tensor => callElementwise(signOp, x);
export const exp = (x: TensorLike): Tensor => callElementwise(expOp, x);
export const log = (x: TensorLike): Tensor => callElementwise(logOp, x);
export const log1p = (x: TensorLike): Tensor => callElementwise(log1pOp, x);
export const expm1 = (x: TensorLike): Tensor => callElementwise(expm1Op, x);
export const sqrt = (x: TensorLike): Tensor => callElementwise(sqrtOp, x);
export const rsqrt = (x: TensorLike): Tensor => callElementwise(rsqrtOp, x);
export const square = (x: TensorLike): Tensor => callElementwise(squareOp, x);
export const reciprocal = (x: TensorLike): Tensor => callElementwise(reciprocalOp, x);
export const sin = (x: TensorLike): Tensor => callElementwise(sinOp, x);
export const cos = (x: TensorLike): Tensor => callElementwise(cosOp, x);
export const tan = (x: TensorLike): Tensor => callElementwise(tanOp, x);
export const asin = (x: TensorLike): Tensor => callElementwise(asinOp, x);
export const acos = (x: TensorLike): Tensor => callElementwise(acosOp, x);
export const atan = (x: TensorLike): Tensor => callElementwise(atanOp, x);
export const sinh = (x: TensorLike): Tensor => callElementwise(sinhOp, x);
export const cosh = (x: TensorLike): Tensor => callElementwise(coshOp, x);
export const tanh = (x: TensorLike): Tensor => callElementwise(tanhOp, x);
export const sigmoid = (x: TensorLike): Tensor => callElementwise(sigmoidOp, x);
export const relu = (x: TensorLike): Tensor => callElementwise(reluOp, x);
export const softplus = (x: TensorLike): Tensor => callElementwise(softplusOp, x);
export const erf = (x: TensorLike): Tensor => callElementwise(erfOp, x);
export const gelu = (x: TensorLike): Tensor => callElementwise(geluOp, x);
export const floor = (x: TensorLike): Tensor => callElementwise(floorOp, x);
export const ceil = (x: TensorLike): Tensor => callElementwise(ceilOp, x);
export const round = (x: TensorLike): Tensor => callElementwise(roundOp, x);
export const isNaN = (x: TensorLike): Tensor => callElementwise(isNaNOp, x);
export const isFinite = (x: TensorLike): Tensor => callElementwise(isFiniteOp, x);
export const leakyRelu = (x: TensorLike, alpha = 0.2): Tensor => callElementwiseWithAttrs(leakyReluOp, { alpha }, x);
export const elu = (x: TensorLike, alpha = 1): Tensor => callElementwiseWithAttrs(eluOp, { alpha }, x);

declare module "../core/tensor.js" {
  interface Tensor {
    neg(): Tensor;
    abs(): Tensor;
    sign(): Tensor;
    exp(): Tensor;
    log(): Tensor;
    log1p(): Tensor;
    expm1(): Tensor;
    sqrt(): Tensor;
    rsqrt(): Tensor;
    square(): Tensor;
    reciprocal(): Tensor;
    sin(): Tensor;
    cos(): Tensor;
    tan(): Tensor;
    asin(): Tensor;
    acos(): Tensor;
    atan(): Tensor;
    sinh(): Tensor;
    cosh(): Tensor;
    tanh(): Tensor;
    sigmoid(): Tensor;
    relu(): Tensor;
    softplus(): Tensor;
    erf(): Tensor;
    gelu(): Tensor;
    floor(): Tensor;
    ceil(): Tensor;
    round(): Tensor;
    isNaN(): Tensor;
    isFinite(): Tensor;
    leakyRelu(alpha?: number): Tensor;
    elu(alpha?: number): Tensor;
  }
}
installMethods({ neg, abs, sign, exp, log, log1p, expm1, sqrt, rsqrt, square, reciprocal, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, sigmoid, relu, softplus, erf, gelu, floor, ceil, round, isNaN, isFinite, leakyRelu, elu });
