/**
 * IEEE 754 binary16 (float16) conversions. A float16 tensor stores its values in a
 * Float32Array, each value exactly a float16 number: kernels compute in float32 (or float64)
 * and round their results to float16 (`roundToFloat16`), as onnxruntime's CPU kernels do.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The value of float16 bits. */
export function halfBitsToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** The float16 bits nearest to `x` (round to nearest, ties to even; NaN stays NaN). */
export function floatToHalfBits(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let frac = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (frac !== 0 ? 0x200 : 0);
  // Round the float64 value directly (x, not its float32 rounding) to avoid double rounding.
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // rounds to infinity
  if (a < 2 ** -14) {
    // subnormal: multiples of 2^-24
    const m = roundHalfEven(a * 2 ** 24);
    return sign | m; // m may be 1024: the smallest normal, which is what those bits mean
  }
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  let m = roundHalfEven((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  frac = m;
  return sign | ((e + 15) << 10) | frac;
}

function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * Source of `roundF16(x)`: x rounded to the nearest float16 value (ties to even; beyond the
 * largest float16 to infinity; NaN and the sign of zero kept). Generated kernels inline it
 * (backends/cpu/js-expr.ts); `roundToFloat16` is the same function.
 */
export const ROUND_F16_SOURCE = `
function roundF16(x) {
  const a = Math.abs(x);
  if (!(a < 65520)) return a !== a ? x : (x > 0 ? Infinity : -Infinity);
  if (a === 0) return x;
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--; else if (2 ** (e + 1) <= a) e++;
  const q = 2 ** (Math.max(e, -14) - 10);
  const m = a / q;
  const f = Math.floor(m);
  const r = m - f > 0.5 || (m - f === 0.5 && f % 2 !== 0) ? f + 1 : f;
  return x < 0 ? -(r * q) : r * q;
}`;

/** `x` rounded to the nearest float16 value (as a JS number). */
export const roundToFloat16 = new Function(`${ROUND_F16_SOURCE}\nreturn roundF16;`)() as (x: number) => number;

/** Rounds every element of a float16 tensor's storage in place. */
export function roundStorageToFloat16(a: Float32Array | Float64Array): void {
  for (let i = 0; i < a.length; i++) a[i] = roundToFloat16(a[i]!);
}
