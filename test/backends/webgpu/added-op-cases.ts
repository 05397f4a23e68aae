/**
 * GPU-vs-CPU cases for the ops the ONNX work added, at their edges: C division and remainder of
 * integers (zero divisors, int32 min / -1) and floats (infinities, NaN, large quotients: fmod is
 * exact), the inverse hyperbolics at 0, -0, the domain ends and beyond, huge and tiny arguments,
 * the bitwise ops and shifts of int32 and uint8 (shift amounts below 0, 0, 31, 32 and past), and
 * bitcast between float32 and int32 (NaN, -0, infinities), and the element ops (duplicates, every
 * reduction, indices out of range). test/backends/webgpu/sweep.test.ts runs them with
 * the registry's cases: the GPU must give the CPU's values, or refuse with a typed error.
 */
import * as sc from "../../../src/api/index.js";
import type { StagedCase } from "../../staging/staged-cases.js";

const i32 = (v: number[]) => sc.tensor(v, "int32");
const u8 = (v: number[]) => sc.tensor(v, "uint8");
const f32 = (v: number[]) => sc.tensor(v, "float32");

const SPECIAL = [0, -0, 1, -1, 0.5, -0.5, 1e-8, -1e-8, 0.999999, 1.000001, 2, -2, 1e20, -1e20, 3e38, NaN, Infinity, -Infinity];

export const cases: StagedCase[] = [
  {
    op: "truncDiv",
    label: "int32 at the edges (zero divisors, int32 min / -1), uint8, mixed with a float",
    inputs: () => [i32([7, -7, 7, -7, 0, 5, -2147483648, -2147483648, 2147483647, 13]), i32([2, 2, -2, -2, 3, 0, -1, 2, -1, 0]), u8([200, 7, 0, 255])],
    fn: (a, b, u) => [sc.truncDiv(a, b), sc.fmod(a, b), sc.truncDiv(u, u8([3, 0, 5, 16])), sc.fmod(u, u8([3, 0, 5, 16])), sc.truncDiv(a, 2.5)],
  },
  {
    op: "fmod",
    label: "float32: exact remainders, infinities, NaN, -0",
    inputs: () => [f32([5.5, -5.5, 1e30, -1e30, 3.0000002, 7, 0, -0, Infinity, NaN, 2, -6, 1e-30]), f32([2, 2, 3.3, 0.1, 1e-7, Infinity, 1, 1, 2, 2, 0, 3, 7e-31])],
    fn: (a, b) => [sc.fmod(a, b), sc.truncDiv(a, b)],
  },
  {
    op: "relu",
    label: "NaN propagates, -0 passes through, infinities (float32 and int32)",
    inputs: () => [f32(SPECIAL), i32([0, -1, 1, -2147483648, 2147483647])],
    fn: (x, k) => [sc.relu(x), sc.relu(x.mul(3).add(1)), sc.relu(k)],
  },
  {
    op: "asinh",
    label: "at special values",
    inputs: () => [f32(SPECIAL)],
    fn: (x) => [sc.asinh(x), sc.acosh(x), sc.atanh(x)],
  },
  {
    op: "acosh",
    label: "of integers, near 1 and large",
    inputs: () => [i32([1, 2, 3, 100, 0, -5]), f32([1, 1.0001, 1.5, 10, 1e10, 1e19])],
    fn: (n, x) => [sc.acosh(n), sc.asinh(n), sc.acosh(x), sc.asinh(x), sc.atanh(sc.div(x, 1e20))],
  },
  {
    op: "bitwiseAnd",
    label: "int32, uint8 and mixed, broadcast",
    inputs: () => [i32([0x7fffffff, -1, -2147483648, 12345, -98765, 0]), u8([255, 0, 170, 85, 15, 240]), i32([0x0f0f0f0f])],
    fn: (a, u, m) => [sc.bitwiseAnd(a, m), sc.bitwiseOr(a, m), sc.bitwiseXor(a, u), sc.bitwiseAnd(u, u8([15])), sc.bitwiseOr(u, u8([1])), sc.bitwiseXor(u, u8([255])), sc.bitwiseNot(a), sc.bitwiseNot(u)],
  },
  {
    op: "bitShiftLeft",
    label: "amounts below 0, 0, 31, 32 and past, int32 and uint8",
    inputs: () => [i32([1, -1, 3, -2147483648, 12345, -7, 5, 1]), i32([-1, 0, 31, 1, 32, 40, 4, 30]), u8([1, 255, 128, 3, 7, 200, 9, 1]), u8([0, 1, 7, 8, 9, 31, 32, 4])],
    fn: (a, s, u, us) => [sc.bitShiftLeft(a, s), sc.bitShiftRight(a, s), sc.bitShiftLeft(u, us), sc.bitShiftRight(u, us)],
  },
  {
    op: "bitcast",
    label: "float32 <-> int32 words (NaN, -0, infinities, denormal-free values)",
    inputs: () => [f32([1, -0, 0, Infinity, -Infinity, NaN, 3.5, -1e-20, 1e30]), i32([0, 1065353216, -1082130432, 2139095040, 2143289344, -2147483648, 123456789])],
    fn: (f, i) => [sc.bitcast(f, "int32"), sc.bitcast(i, "float32"), sc.bitcast(sc.bitcast(f, "int32"), "float32")],
  },
  {
    op: "bitcast",
    label: "the host dtypes: int64 -> float64 and uint8 -> int8 run on the host",
    inputs: () => [sc.tensor([1, -2], "int64"), u8([1, 200])],
    fn: (d, u) => [sc.bitcast(d, "float64"), sc.bitcast(u, "int8")],
  },
  {
    op: "gatherElements",
    label: "rank 3, indices smaller than x off the axis, int32 and uint8 values",
    inputs: (r) => [r.tensor([3, 4, 5], -2, 2, "float32"), i32([0, 3, 3, 1, 2, 0, 1, 1, 3, 2, 0, 0]), u8([1, 2, 3, 250, 5, 6])],
    fn: (x, i, u) => {
      const idx = sc.reshape(i, [2, 3, 2]);
      return [sc.gatherElements(x, idx, 1), sc.gatherElements(sc.cast(x, "int32"), idx, 1), sc.gatherElements(sc.reshape(u, [3, 2]), sc.reshape(i32([2, 0, 1, 1]), [2, 2]), 0)];
    },
  },
  {
    op: "scatterElements",
    label: "duplicates: none keeps the last, add and mul in index order, max/min with NaN, int32 and uint8 wrap",
    inputs: () => [f32([1, 2, 3, 4, 5, 6]), f32([10, NaN, -3, 0.5, 7, -1]), i32([2147483647, 5, 0, 7, 9, 250])],
    fn: (x, u, n) => {
      const X = sc.reshape(x, [2, 3]);
      const U = sc.reshape(u, [2, 3]);
      const idx = sc.tensor([[1, 1, 0], [0, 0, 2]], "int32");
      const N = sc.reshape(n, [2, 3]);
      const B = sc.cast(sc.reshape(n, [2, 3]), "uint8");
      return [
        ...(["none", "add", "mul", "max", "min"] as const).map((r) => sc.scatterElements(X, idx, U, 1, r)),
        sc.scatterElements(X, sc.tensor([[1, 0, 1]], "int32"), sc.reshape(f32([5, 6, 7]), [1, 3]), 0, "add"),
        ...(["add", "mul", "max"] as const).map((r) => sc.scatterElements(N, idx, N, 1, r)),
        ...(["add", "mul", "min"] as const).map((r) => sc.scatterElements(B, idx, B, 1, r)),
      ];
    },
  },
  {
    op: "scatterND",
    label: "element tuples with duplicates, row slices, every reduction",
    inputs: (r) => [r.tensor([3, 4], -2, 2, "float32"), r.tensor([4], -2, 2, "float32"), r.tensor([2, 4], -2, 2, "float32")],
    fn: (x, u, rows) => [
      ...(["none", "add", "mul", "max", "min"] as const).map((r) => sc.scatterND(x, sc.tensor([[0, 1], [2, 3], [0, 1], [1, 0]], "int32"), u, r)),
      sc.scatterND(x, sc.tensor([[2], [0]], "int32"), rows, "none"),
      sc.scatterND(sc.cast(x, "int32"), sc.tensor([[1], [1]], "int32"), sc.cast(rows, "int32"), "add"),
    ],
  },
  {
    op: "gatherElements",
    label: "an index out of range is an IndexError on both devices",
    inputs: (r) => [r.tensor([2, 3], -1, 1, "float32")],
    fn: (x) => [sc.gatherElements(x, sc.tensor([[0, 3]], "int32"), 1)],
  },
  {
    op: "cumsum",
    label: "compensated float32 sums: 1e8 then 10000 ones (uncompensated, each 1 is lost: 1e-4 off)",
    inputs: () => [f32([1e8, ...Array<number>(10000).fill(1)])],
    fn: (x) => [sc.cumsum(x), sc.cumsum(x, 0, { reverse: true })],
  },
  {
    op: "sum",
    label: "compensated float32 sums down columns: 1e8 then 5000 ones (uncompensated: 5e-5 off)",
    inputs: () => [sc.tensor([1e8, 1e8, ...Array<number>(10000).fill(1)], "float32", [5001, 2])],
    fn: (x) => [sc.sum(x, 0), sc.mean(x, 0)],
  },
  {
    op: "scatterND",
    label: "an index tuple out of range is an IndexError on both devices",
    inputs: (r) => [r.tensor([2, 3], -1, 1, "float32")],
    fn: (x) => [sc.scatterND(x, sc.tensor([[1, 0], [2, 0]], "int32"), f32([1, 2]), "add")],
  },
];

/** Rows for scans: leading and trailing -0, +0 among -0, infinities of both signs, NaN. */
const SCAN_ROWS = [
  [-0, -0, -0, -0],
  [-0, 0, -0, -0],
  [0, -0, -0, 0],
  [-0, 1, -1, -0],
  [Infinity, 1, -0, 2],
  [-Infinity, -0, Infinity, 1],
  [NaN, -0, 1, -0],
  [-0, -0, NaN, -0],
];

/**
 * Cases whose results must match the CPU's also in the sign of zero (sweep.test.ts compares them
 * with -0 distinct from +0, NaN equal to NaN): sum and cumsum sum from -0 (a group of -0 sums to
 * -0, a leading -0 stays -0, an exclusive scan's first entry is +0), erf(-0) is -0, logSoftmax is (x - max) - log s (a lone -0
 * gives +0), as on the CPU and in onnxruntime.
 */
export const signedZeroCases: StagedCase[] = [
  {
    op: "cumsum",
    label: "signed zeros, infinities and NaN along the last axis (inclusive, exclusive, reverse)",
    inputs: () => [sc.tensor(SCAN_ROWS.flat(), "float32", [SCAN_ROWS.length, 4])],
    fn: (x) => [sc.cumsum(x, 1), sc.cumsum(x, 1, { exclusive: true }), sc.cumsum(x, 1, { reverse: true }), sc.cumsum(x, 1, { exclusive: true, reverse: true })],
  },
  {
    op: "cumsum",
    label: "signed zeros, infinities and NaN along a leading axis (inclusive, exclusive, reverse)",
    inputs: () => [sc.tensor(SCAN_ROWS.flat(), "float32", [SCAN_ROWS.length, 4])],
    fn: (x) => {
      const t = sc.transpose(x); // [4, rows]: each scan runs down a column
      return [sc.cumsum(t, 0), sc.cumsum(t, 0, { exclusive: true }), sc.cumsum(t, 0, { reverse: true }), sc.cumsum(t, 0, { exclusive: true, reverse: true })];
    },
  },
  {
    op: "sum",
    label: "groups of -0 sum to -0 (short rows, columns, rows of 300, one long group), with +0, infinities and NaN",
    inputs: () => [sc.tensor(SCAN_ROWS.flat(), "float32", [SCAN_ROWS.length, 4]), f32(Array<number>(600).fill(-0)), f32(Array<number>(9000).fill(-0))],
    fn: (x, rows, long) => [sc.sum(x, 1), sc.sum(x, 0), sc.mean(x, 1), sc.mean(x, 0), sc.sum(sc.reshape(rows, [2, 300]), 1), sc.sum(sc.reshape(rows, [300, 2]), 0), sc.sum(long), sc.mean(long)],
  },
  {
    op: "erf",
    label: "at signed zeros, infinities and NaN",
    inputs: () => [f32(SPECIAL)],
    fn: (x) => [sc.erf(x), sc.erf(sc.neg(x))],
  },
  {
    op: "logSoftmax",
    label: "a lone -0, -0 among -Infinity, +Infinity and NaN in a group (short lines)",
    inputs: () => [sc.tensor([-0, -Infinity, -Infinity, -0, Infinity, 1, NaN, 1, -Infinity, -Infinity], "float32", [5, 2]), f32([-0])],
    fn: (rows, lone) => [sc.logSoftmax(lone), sc.logSoftmax(rows), sc.logSoftmax(sc.transpose(rows), 0), sc.softmax(rows)],
  },
  {
    op: "logSoftmax",
    label: "-0 among -Infinity in a row of 300 (a workgroup per row)",
    inputs: () => [f32(Array.from({ length: 600 }, (_, i) => (i === 7 ? -0 : i === 300 + 299 ? 0 : -Infinity)))],
    fn: (x) => [sc.logSoftmax(sc.reshape(x, [2, 300]))],
  },
];
