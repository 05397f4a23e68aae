/**
 * NaN-keeping forms of the ONNX ops whose onnxruntime kernels drop or misplace NaN.
 *
 * Our ops propagate NaN (max/min of a group with a NaN is NaN, argMax/argMin give the first NaN,
 * max pooling of a window with a NaN is NaN) and order NaN as the largest value (sort ascending
 * puts NaN last, descending and topK first). onnxruntime's ReduceMax/ReduceMin/ReduceLogSumExp,
 * ArgMax/ArgMin, MaxPool and TopK compare with `<`/`>`, so a NaN is kept or dropped depending on
 * its position. These helpers compute the NaN cases apart (IsNaN) and select them with Where,
 * NaN or the index always in Where's first value slot: onnxruntime's Where turns a -0 selected
 * from that slot into +0, so the value that may be -0 goes in the second.
 */
import { isFloat, type DType } from "../../../core/dtype.js";
import type { OnnxBuilder } from "../builder.js";

/** NaN handling applies to float values only (other dtypes have no NaN). */
export const hasNaNs = (d: DType): boolean => isFloat(d);

/** IsNaN(x) as int32 0/1 (Reduce*, ArgMax and MaxPool take no bool). */
function nanFlags(b: OnnxBuilder, x: string, as: DType = "int32"): string {
  return b.cast(b.op1("IsNaN", [x]), as);
}

/**
 * `reduced` (a reduction of `x` made by `reduce`) replaced by NaN where its group holds a NaN.
 * `reduce` applies the same Reduce*'s axes and keepdims to an int32 value.
 */
export function propagateNaN(b: OnnxBuilder, x: string, reduced: string, dtype: DType, reduce: (v: string, opType: string) => string): string {
  // (the count of NaNs, not their ReduceMax: the max of an empty group is INT32_MIN, "true")
  const any = b.cast(reduce(nanFlags(b, x), "ReduceSum"), "bool");
  return b.op1("Where", [any, b.scalar(NaN, dtype), reduced]);
}

/** ArgMax/ArgMin (`opType`) of float `x` along `axis`, where a NaN wins: the first NaN's index. */
export function argReduceNaN(b: OnnxBuilder, opType: string, x: string, axis: number, keepdims: number): string {
  const flags = nanFlags(b, x);
  const attrs = { axis, keepdims };
  const any = b.cast(b.op1("ReduceMax", [flags, b.i64([axis])], { keepdims }), "bool");
  return b.op1("Where", [any, b.op1("ArgMax", [flags], attrs), b.op1(opType, [x], attrs)]);
}

/**
 * A stable sort permutation of float `x` along `axis` with NaN as the largest value (after +Inf),
 * ties in index order; `largest` sorts descending. `k` (a 1-D int64 value) is the number of
 * entries kept. Two stable TopK passes: by IsNaN, then by the value with NaN keyed as +Inf (ONNX's
 * TopK puts equal keys in index order). Returns the values (gathered from x, bits exact) and
 * the int64 indices.
 */
export function sortNaNLargest(b: OnnxBuilder, x: string, axis: number, largest: boolean, k: string, dtype: DType): [string, string] {
  const all = b.op1("Shape", [x], { start: axis, end: axis + 1 });
  const isNan = b.op1("IsNaN", [x]);
  // pass 1: NaN apart (after the numbers ascending, before them descending), index order kept
  const [, p1] = b.op("TopK", [b.cast(isNan, "float32"), all], { axis, largest: largest ? 1 : 0, sorted: 1 }, 2) as [string, string];
  const keyed = b.op1("Where", [isNan, b.scalar(Infinity, dtype), x]);
  const k1 = b.op1("GatherElements", [keyed, p1!], { axis });
  // pass 2: by value; ties (NaN with +Inf included) keep pass 1's order
  const [, p2] = b.op("TopK", [k1, k], { axis, largest: largest ? 1 : 0, sorted: 1 }, 2) as [string, string];
  const idx = b.op1("GatherElements", [p1!, p2!], { axis });
  return [b.op1("GatherElements", [x, idx], { axis }), idx];
}

/** MaxPool's output with NaN where the window holds a NaN (onnxruntime keeps only some). */
export function maxPoolNaN(b: OnnxBuilder, x: string, pooled: string, dtype: DType, attrs: Record<string, unknown>): string {
  const any = b.op1("MaxPool", [nanFlags(b, x, dtype)], attrs as never);
  // (a window of 0/1 flags: 1 when it holds a NaN; padding is -Inf)
  return b.op1("Where", [b.op1("Greater", [any, b.scalar(0, dtype)]), b.scalar(NaN, dtype), pooled]);
}

/** MaxPool's argmax indices with the first NaN's index where the window holds a NaN. */
export function maxPoolNaNIndices(b: OnnxBuilder, x: string, idx: string, dtype: DType, attrs: Record<string, unknown>): string {
  // (MaxPool of the 0/1 flags: its index is a window's first 1 when it holds one)
  const [any, nanIdx] = b.op("MaxPool", [nanFlags(b, x, dtype)], attrs as never, 2) as [string, string];
  return b.op1("Where", [b.op1("Greater", [any, b.scalar(0, dtype)]), nanIdx, idx]);
}
