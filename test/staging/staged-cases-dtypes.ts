/**
 * Eager-vs-staged cases for what the ONNX work added: truncDiv (no gradient), the scatter
 * reductions without gradients, and the dtypes float16, int8, int16, uint16, uint32, uint64
 * through elementwise chains (fused and rounded per step in the compiled executor), casts,
 * reductions, matmul and shape ops. test/staging/sweep.test.ts runs them with the other cases.
 */
import * as sc from "../../src/api/index.js";
import type { Rng } from "../util/rng.js";
import type { StagedCase } from "./staged-cases.js";

const ints = (rng: Rng, shape: number[], lo: number, hi: number, dtype: sc.DType) =>
  sc.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.int(lo, hi)), dtype, shape);
const idx = (v: sc.NestedArray) => sc.tensor(v, "int32");

export const cases: StagedCase[] = [
  {
    op: "truncDiv",
    label: "int32 and float32, both signs",
    inputs: (r) => [ints(r, [2, 4], -20, 20, "int32"), sc.tensor([3, -3, 7, -2], "int32"), r.tensor([2, 4], -5, 5, "float32")],
    fn: (a, b, f) => [sc.truncDiv(a, b), sc.fmod(a, b), sc.truncDiv(f, 1.5), sc.fmod(f, -1.5)],
  },
  {
    op: "scatterElements",
    label: "mul, max and min reductions",
    inputs: (r) => [r.tensor([3, 4], -2, 2, "float32"), r.tensor([2, 2], -2, 2, "float32")],
    fn: (x, u) => [sc.scatterElements(x, idx([[1, 1], [0, 3]]), u, 1, "mul"), sc.scatterElements(x, idx([[1, 1], [0, 3]]), u, 1, "max"), sc.scatterElements(x, idx([[2, 0], [2, 1]]), u, 0, "min")],
  },
  {
    op: "scatterND",
    label: "mul and max reductions, int32",
    inputs: (r) => [ints(r, [3, 2], -5, 5, "int32"), ints(r, [2], -5, 5, "int32")],
    fn: (x, u) => [sc.scatterND(x, idx([[2, 1], [2, 1]]), u, "mul"), sc.scatterND(x, idx([[0, 0], [1, 1]]), u, "max")],
  },
  {
    op: "gatherElements",
    label: "int8 and bool data",
    inputs: (r) => [ints(r, [3, 4], -100, 100, "int8"), sc.tensor([[true, false], [false, true]], "bool")],
    fn: (x, b) => [sc.gatherElements(x, idx([[3, 0, 1]]), 1), sc.gatherElements(b, idx([[1, 0]]), 0)],
  },
  {
    op: "cast",
    label: "float16: rounding to nearest even, overflow to infinity, a fused chain rounded per step",
    inputs: (r) => [r.tensor([2, 5], -3, 3, "float32"), sc.tensor([65504, 65520, 1e-8, 3e-8, -0.1], "float32")],
    fn: (x, edge) => {
      const h = sc.cast(x, "float16");
      const chain = sc.add(sc.mul(sc.exp(h), 1.001), sc.div(h, 3)); // every step rounds to float16
      return [h, sc.cast(edge, "float16"), chain, sc.cast(chain, "float64"), sc.sum(chain, 1), sc.matmul(h, sc.transpose(h))];
    },
  },
  {
    op: "add",
    label: "narrow integer dtypes wrap as C does",
    inputs: (r) => [ints(r, [2, 3], -128, 128, "int8"), ints(r, [2, 3], -32768, 32768, "int16"), ints(r, [2, 3], 0, 65536, "uint16"), ints(r, [2, 3], 0, 2 ** 32, "uint32")],
    fn: (a, b, c, d) => [sc.add(a, a), sc.mul(b, 3), sc.sub(c, 60000), sc.add(d, 2 ** 31), sc.neg(a), sc.maximum(c, 1000)],
  },
  {
    op: "cast",
    label: "between the integer widths and floats",
    inputs: (r) => [r.tensor([2, 4], -300, 300, "float32"), ints(r, [2, 4], -1000, 1000, "int32")],
    fn: (f, i) => [sc.cast(f, "int8"), sc.cast(f, "uint8"), sc.cast(f, "int16"), sc.cast(i, "uint16"), sc.cast(i, "uint32"), sc.cast(f, "uint64"), sc.cast(sc.cast(i, "int8"), "float16")],
  },
  {
    op: "sum",
    label: "uint64, int16 and float16 reductions",
    inputs: (r) => [ints(r, [3, 4], 0, 1000, "uint64"), ints(r, [3, 4], -1000, 1000, "int16"), r.tensor([3, 4], -2, 2, "float16")],
    fn: (a, b, h) => [sc.sum(a, 0), sc.sum(b, 1), sc.max(b), sc.sum(h, 0), sc.mean(h, 1)],
  },
  {
    op: "reshape",
    label: "shape ops keep the new dtypes",
    inputs: (r) => [ints(r, [2, 3], -100, 100, "int8"), r.tensor([2, 3], -2, 2, "float16"), ints(r, [2, 3], 0, 60000, "uint16")],
    fn: (a, h, u) => [sc.reshape(a, [3, 2]), sc.transpose(h), sc.concat([u, u], 0), sc.slice(a, [0, 1], [2, 3]), sc.where(sc.greater(h, 0), h, 0)],
  },
  ...(["bitwiseAnd", "bitwiseOr", "bitwiseXor"] as const).map(
    (op): StagedCase => ({
      op,
      label: "int8, uint32, int64 beyond 32 bits, uint64",
      inputs: (r) => [ints(r, [2, 3], -128, 128, "int8"), ints(r, [2, 3], 0, 2 ** 32, "uint32"), sc.tensor([2 ** 40 + 5, -(2 ** 35) - 3, 7], "int64"), sc.tensor([2 ** 45 + 9, 12, 2 ** 33], "uint64")],
      fn: (a, b, c, d) => {
        const f = (sc as unknown as Record<string, (x: sc.Tensor, y: sc.Tensor) => sc.Tensor>)[op]!;
        return [f(a, sc.flip(a, 1)), f(b, sc.flip(b, 0)), f(c, sc.tensor([2 ** 41 - 1, -1, 5], "int64")), f(d, sc.tensor([2 ** 46 - 1, 10, 2 ** 33 + 1], "uint64"))];
      },
    }),
  ),
  {
    op: "bitwiseNot",
    label: "signed and unsigned widths",
    inputs: (r) => [ints(r, [2, 3], -128, 128, "int8"), ints(r, [2, 3], 0, 65536, "uint16"), ints(r, [2, 3], 0, 2 ** 32, "uint32"), sc.tensor([5, -(2 ** 40)], "int64")],
    fn: (a, b, c, d) => [sc.bitwiseNot(a), sc.bitwiseNot(b), sc.bitwiseNot(c), sc.bitwiseNot(d)],
  },
  {
    op: "bitShiftLeft",
    label: "shifts by 0 to past the width",
    inputs: () => [sc.tensor([1, 255, 16, 3], "uint8"), sc.tensor([0, 1, 4, 9], "uint8"), sc.tensor([1, 2 ** 31, 12345, 7], "uint32"), sc.tensor([0, 1, 20, 33], "uint32"), sc.tensor([1, 3, 2 ** 20, 5], "uint64"), sc.tensor([0, 40, 20, 64], "uint64")],
    fn: (a, s, b, t, c, u) => [sc.bitShiftLeft(a, s), sc.bitShiftRight(a, s), sc.bitShiftLeft(b, t), sc.bitShiftRight(b, t), sc.bitShiftLeft(c, u), sc.bitShiftRight(c, u)],
  },
  {
    op: "bitShiftRight",
    label: "signed types keep the sign",
    inputs: () => [sc.tensor([-128, -1, 64, 100], "int8"), sc.tensor([1, 3, 2, 8], "int8"), sc.tensor([-(2 ** 40), 2 ** 40, -5, 9], "int64"), sc.tensor([3, 3, 1, 70], "int64")],
    fn: (a, s, b, t) => [sc.bitShiftRight(a, s), sc.bitShiftRight(b, t)],
  },
  {
    op: "bitcast",
    label: "between same-width dtypes",
    inputs: (r) => [r.tensor([2, 3], -3, 3, "float32"), ints(r, [2, 3], -128, 128, "int8"), sc.tensor([1.5, -0.25, 1e300], "float64"), sc.tensor([1, 0, 1], "bool"), r.tensor([4], -2, 2, "float16")],
    fn: (f, i8, d, b, h) => [sc.bitcast(f, "int32"), sc.bitcast(sc.bitcast(f, "uint32"), "float32"), sc.bitcast(i8, "uint8"), sc.bitcast(d, "int64"), sc.bitcast(b, "uint8"), sc.bitcast(h, "int16")],
  },
];
