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
