/**
 * The largest value of a float dtype below a number: where a draw must stay below a bound that
 * rounding to the dtype could reach (a uniform draw in [minval, maxval): minval + (maxval -
 * minval) * u with u < 1 still rounds to maxval when u is within half a step of 1 at maxval's
 * precision, about once in 2^12 float16 draws).
 */
import type { DType } from "./dtype.js";
import { floatToHalfBits, halfBitsToFloat } from "./float16.js";

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** The largest `dtype` (a float) value strictly below `x` (x finite, or +Infinity: the largest finite). */
export function largestBelow(x: number, dtype: DType): number {
  if (Number.isNaN(x)) return NaN;
  if (dtype === "float16") {
    const h = floatToHalfBits(x); // (round to nearest: step down until the value is below x)
    for (let bits = h; ; ) {
      const v = halfBitsToFloat(bits);
      if (v < x) return v;
      bits = v > 0 ? bits - 1 : v === 0 ? 0x8001 : bits + 1;
    }
  }
  if (dtype === "float32") {
    f32[0] = x;
    while (f32[0]! >= x) u32[0] = f32[0]! > 0 ? u32[0]! - 1 : f32[0] === 0 ? 0x80000001 : u32[0]! + 1;
    return f32[0]!;
  }
  if (x === Infinity) return Number.MAX_VALUE;
  f64[0] = x;
  u64[0] = x > 0 ? u64[0]! - 1n : x === 0 ? 0x8000000000000001n : u64[0]! + 1n;
  return f64[0]!;
}
