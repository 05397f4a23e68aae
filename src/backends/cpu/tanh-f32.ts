/**
 * float32 tanh, defined once for the eager kernel's template (ops/unary.ts), the scalar helper
 * fused loops call past its range (scalar-math.ts) and the executor's SIMD code
 * (exec/wasm-elementwise.ts): the odd rational approximation of Eigen and TensorFlow, degree
 * 13/6, on (-TANH_RANGE, TANH_RANGE), evaluated in float64 and rounded once to float32 (within
 * 3 ulp of the correctly rounded value); past the range the value it reaches there
 * (TANH_EDGE), and +-1 from 9 on, where tanh rounds to +-1 in float32. Every copy evaluates the
 * same operations in the same order, so all of them give the same bits.
 */

export const TANH_RANGE = 7.90531110763549805;
/** Numerator coefficients in y = x * x, highest degree first (Horner order). */
export const TANH_P = [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-8, 1.48572235717979e-5, 6.37261928875436e-4, 4.89352455891786e-3];
/** Denominator coefficients in y = x * x, highest degree first. */
export const TANH_Q = [1.19825839466702e-6, 1.18534705686654e-4, 2.268434632439e-3, 4.89352518554385e-3];
export const TANH_EDGE = 0.9999997397382441;

/** Horner's scheme in `y` over `coefficients`, as a JS expression. */
function horner(y: string, coefficients: readonly number[]): string {
  let e = `${y} * ${coefficients[0]} + ${coefficients[1]}`;
  for (let i = 2; i < coefficients.length; i++) e = `${y} * (${e}) + ${coefficients[i]}`;
  return e;
}

/** The rational (x * P(x*x)) / Q(x*x) as a JS expression over the variable `x`. */
export function tanhRationalSource(x: string): string {
  const y = `(${x} * ${x})`;
  return `((${x} * (${horner(y, TANH_P)})) / (${horner(y, TANH_Q)}))`;
}

/** Whether the JS expression `x` lies inside the rational's range. */
export const tanhInRangeSource = (x: string): string => `(${x} > ${-TANH_RANGE} && ${x} < ${TANH_RANGE})`;

/** The scalar helper's source (for the scalar prelude). */
export const TANH_F32_FUNCTION = `function tanhF32(x) {
  if ${tanhInRangeSource("x")} return ${tanhRationalSource("x")};
  if (x !== x) return x;
  return x > 0 ? (x < 9 ? ${TANH_EDGE} : 1) : x > -9 ? ${-TANH_EDGE} : -1;
}`;

/** The template of the float32 kernel: the rational inline (fused loops inline it), the rare tail a call. */
export const TANH_F32_TEMPLATE = `(${tanhInRangeSource("a")} ? ${tanhRationalSource("a")} : tanhF32(a))`;
