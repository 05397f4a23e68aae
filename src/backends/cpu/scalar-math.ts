/**
 * Scalar helpers that elementwise templates may call (erf, round half to even). They are
 * written as source so generated kernels (and later fused kernels) can inline them.
 */
import { TANH_F32_FUNCTION } from "./tanh-f32.js";
import { ROUND_F16_SOURCE } from "../../core/float16.js";

export const SCALAR_PRELUDE = `
function erf(x) {
  // Abramowitz-Stegun 7.1.26 is too coarse for float64 gradient checks; use a series /
  // continued fraction split (W. J. Cody style rational approximations via erfc).
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // Maclaurin series, converges quickly for |x| < 2.5
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
  // continued fraction for erfc
  let f = 0;
  for (let n = 60; n >= 1; n--) f = (n / 2) / (ax + f);
  const erfc = Math.exp(-ax * ax) / (ax + f) / 1.7724538509055159;
  return x > 0 ? 1 - erfc : erfc - 1;
}
function roundHalfEven(x) {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
}
function softplus(x) { return Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x))); }
${TANH_F32_FUNCTION}
${ROUND_F16_SOURCE}
function sigmoid(x) { return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)); }
`;
