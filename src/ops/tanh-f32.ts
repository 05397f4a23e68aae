/**
 * float32 tanh as an elementwise expression (tanh's float32 form, ops/unary.ts): the odd rational
 * approximation of Eigen and TensorFlow, degree 13/6, on (-TANH_RANGE, TANH_RANGE), evaluated in
 * float64 and rounded once to float32 (within 3 ulp of the correctly rounded value); past the
 * range the value it reaches there (TANH_EDGE), and +-1 from 9 on, where tanh rounds to +-1 in
 * float32. Every backend renders these same operations in the same order, so all of them give
 * the same bits.
 */
import * as E from "../core/expr.js";

export const TANH_RANGE = 7.90531110763549805;
/** Numerator coefficients in y = x * x, highest degree first (Horner order). */
export const TANH_P = [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-8, 1.48572235717979e-5, 6.37261928875436e-4, 4.89352455891786e-3];
/** Denominator coefficients in y = x * x, highest degree first. */
export const TANH_Q = [1.19825839466702e-6, 1.18534705686654e-4, 2.268434632439e-3, 4.89352518554385e-3];
export const TANH_EDGE = 0.9999997397382441;

/** Horner's scheme in `y` over `coefficients`: (y * c0 + c1), then y * (.) + c_i. */
function horner(y: E.Expr, coefficients: readonly number[]): E.Expr {
  let e: E.Expr = E.add(E.mul(y, coefficients[0]!), coefficients[1]!);
  for (let i = 2; i < coefficients.length; i++) e = E.add(E.mul(y, e), coefficients[i]!);
  return e;
}

/** tanh(x) accurate to float32: the rational inside the range, the edge values outside it, NaN kept. */
export function tanhF32(x: E.Expr): E.Expr {
  const y = E.mul(x, x);
  const rational = E.div(E.mul(x, horner(y, TANH_P)), horner(y, TANH_Q));
  const inRange = E.and(E.gt(x, -TANH_RANGE), E.lt(x, TANH_RANGE));
  const outside = E.select(E.ne(x, x), x, E.select(E.gt(x, 0), E.select(E.lt(x, 9), TANH_EDGE, 1), E.select(E.gt(x, -9), -TANH_EDGE, -1)));
  return E.select(inRange, rational, outside);
}
