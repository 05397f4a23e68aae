/** Helpers the lowering tables share. */
import type { DType } from "../../../core/dtype.js";
import { elemTypeOfDtype } from "../../dtypes.js";
import type { OnnxBuilder } from "../builder.js";
import type { LowerFn } from "../lowering.js";
import { Tensor } from "../../../core/tensor.js";
import { allocStorage } from "../../../core/dtype.js";

export type Table = Record<string, LowerFn>;

export const INT64_MAX = 9223372036854775807n;

/** A normalized axis (negative counts from the end). */
export const axisOf = (axis: number, rank: number): number => (axis < 0 ? axis + rank : axis);

/** The value as dtype `to` (nothing emitted when it already is). */
export function castTo(b: OnnxBuilder, x: string, from: DType, to: DType): string {
  return from === to ? x : b.cast(x, to);
}

/** A tensor of `shape` (a 1-D int64 value) filled with `value` of `dtype`. */
export function filled(b: OnnxBuilder, shape: string, value: number, dtype: DType): string {
  const data = allocStorage(dtype, 1);
  data[0] = value;
  return b.op1("ConstantOfShape", [shape], { value: new Tensor(data, [1], dtype) });
}

/** The elem type attribute of a dtype. */
export const to = (d: DType): number => elemTypeOfDtype(d);

/** A static shape, or null when a dim is unknown. */
export function staticShape(shape: readonly number[]): number[] | null {
  return shape.every((d) => d >= 0) ? [...shape] : null;
}

/** Index outputs of ONNX (int64) as the op's index dtype (int32). */
export function indexOut(b: OnnxBuilder, x: string, dtype: DType): string {
  return castTo(b, x, "int64", dtype);
}

/** Dtypes onnxruntime's CPU Where takes. */
const WHERE_DTYPES: readonly DType[] = ["float32", "float64", "float16", "int32", "int64", "uint8"];

/** A dtype Where (and friends) take that holds every value of `d` exactly. */
export function carrierOf(d: DType): DType {
  if (d === "bool") return "uint8";
  if (d === "int8" || d === "int16" || d === "uint16") return "int32";
  if (d === "uint32" || d === "uint64") return "int64";
  return d;
}

/**
 * Where(c, t, f) of float values, keeping the sign of a zero chosen from t. onnxruntime's CPU
 * Where (1.2x, cond not a scalar) selects t in one pass and f in a second that overwrites every
 * zero of the first, so a -0 chosen from t comes out +0 (f's -0 is kept). `Where(!c, f, t)` has
 * the mirror defect. Where the first result is a zero both are zeros, and the defect only turns
 * -0 into +0, so the answer is -0 exactly when either is: -((-r) + (-m)) (IEEE: x + y is -0 only
 * when both are), right whether or not a given onnxruntime has the defect.
 */
export function signedWhere(b: OnnxBuilder, c: string, t: string, f: string, dtype: DType): string {
  const r = b.op1("Where", [c, t, f]);
  // (a negation as Xor(., true), not Not: onnxruntime's NotWhereFusion swaps Where(Not(c), t, f)
  // into Where(c, f, t), which would undo both selects below)
  const yes = b.constant([1], "bool", []);
  const mirror = b.op1("Where", [b.op1("Xor", [c, yes]), f, t]);
  const nonZero = b.op1("Xor", [b.op1("Equal", [r, b.scalar(0, dtype)]), yes]);
  const zero = b.op1("Neg", [b.op1("Sub", [b.op1("Neg", [r]), mirror])]);
  return b.op1("Where", [nonZero, r, zero]);
}

/** Where(c, t, f) for values of any dtype (onnxruntime's CPU Where lacks bool and several integer widths; float zeros keep their sign). */
export function where(b: OnnxBuilder, c: string, t: string, f: string, dtype: DType): string {
  if (dtype === "float32" || dtype === "float64" || dtype === "float16") return signedWhere(b, c, t, f, dtype);
  if (WHERE_DTYPES.includes(dtype)) return b.op1("Where", [c, t, f]);
  const k = carrierOf(dtype);
  return b.cast(b.op1("Where", [c, b.cast(t, k), b.cast(f, k)]), dtype);
}

const NARROW_BITS: Partial<Record<DType, number>> = { int8: 8, uint8: 8, int16: 16, uint16: 16, int32: 32, uint32: 32 };

/**
 * A float value stored into an integer dtype as a typed array stores it (what every CPU kernel
 * does): NaN and infinities give 0, the rest is truncated and wrapped modulo 2^bits; int64 and
 * uint64 (a Float64Array on the CPU) truncated, NaN and infinities 0, not wrapped. (A plain
 * Cast is undefined out of range.) Other dtypes: a plain Cast.
 */
export function storeFloat(b: OnnxBuilder, x: string, from: DType, dtype: DType): string {
  const bits = NARROW_BITS[dtype];
  const int64 = dtype === "int64" || dtype === "uint64";
  if ((bits === undefined && !int64) || (from !== "float32" && from !== "float64" && from !== "float16")) return castTo(b, x, from, dtype);
  const v = castTo(b, x, from, "float64");
  const finite = b.op1("Equal", [b.op1("Sub", [v, v]), b.scalar(0, "float64")]);
  const zero = b.scalar(0, "float64");
  const safe = b.op1("Where", [finite, v, zero]);
  const t = b.op1("Where", [b.op1("Less", [safe, zero]), b.op1("Ceil", [safe]), b.op1("Floor", [safe])]);
  // (int64 and uint64: ours store into a Float64Array, no wrapping: js-expr.ts storeInt64)
  if (bits === undefined) return b.cast(t, dtype);
  // Wrapped into the dtype's range in double (exact), so that the one Cast is in range: a chain
  // Cast(Cast(x, int64), int32) keeping the low bits is merged by onnxruntime's optimizer into
  // one out-of-range Cast, which gave INT32_MIN for 2147483646 + 2147483646.
  const m = 2 ** bits;
  const wrapped = b.op1("Mod", [t, b.scalar(m, "float64")], { fmod: 1 });
  const signed = dtype.startsWith("int");
  const low = signed ? -m / 2 : 0;
  const up = b.op1("Where", [b.op1("Less", [wrapped, b.scalar(low, "float64")]), b.op1("Add", [wrapped, b.scalar(m, "float64")]), wrapped]);
  if (!signed) return b.cast(up, dtype);
  const down = b.op1("Where", [b.op1("GreaterOrEqual", [up, b.scalar(m / 2, "float64")]), b.op1("Sub", [up, b.scalar(m, "float64")]), up]);
  return b.cast(down, dtype);
}
