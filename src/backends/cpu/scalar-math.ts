/**
 * Scalar helpers that elementwise templates may call (erf, round half to even). They are
 * written as source so generated kernels (and later fused kernels) can inline them.
 */
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
function tanhF32(x) {
  // float32 tanh (within 3 ulp of the correctly rounded value): the odd rational
  // approximation of Eigen and TensorFlow, degree 13/6, on (-7.9053, 7.9053); past it the
  // value it reaches there, and +-1 past 9, where tanh rounds to +-1 in float32. One range
  // test on the common path; about four times faster than Math.tanh.
  if (x > -7.90531110763549805 && x < 7.90531110763549805) {
    const y2 = x * x;
    let p = y2 * -2.76076847742355e-16 + 2.00018790482477e-13;
    p = y2 * p - 8.60467152213735e-11;
    p = y2 * p + 5.12229709037114e-8;
    p = y2 * p + 1.48572235717979e-5;
    p = y2 * p + 6.37261928875436e-4;
    p = y2 * p + 4.89352455891786e-3;
    let q = y2 * 1.19825839466702e-6 + 1.18534705686654e-4;
    q = y2 * q + 2.268434632439e-3;
    q = y2 * q + 4.89352518554385e-3;
    return (x * p) / q;
  }
  if (x !== x) return x;
  return x > 0 ? (x < 9 ? 0.9999997397382441 : 1) : x > -9 ? -0.9999997397382441 : -1;
}
function sigmoid(x) { return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)); }
`;
