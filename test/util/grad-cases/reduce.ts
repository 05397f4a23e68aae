/** Gradient cases for the reduce family (ops/reduce.ts). */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

/** A [2, 3] input with the given values (for exact zeros in prod). */
const fixed = (values: number[][]) => () => [sc.tensor(values, "float64")];

export const cases: GradCase[] = [
  { op: "sum", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.sum(x, [0, 2], true) },
  { op: "sum", label: "negative axis", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.sum(x, -1), secondOrder: true },
  { op: "sum", label: "all", inputs: (r) => [r.tensor([3, 2])], fn: (x) => sc.sum(sc.mul(x, x)), secondOrder: true },

  { op: "mean", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.mean(x, [0, 2], true), secondOrder: true },
  { op: "mean", label: "all", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.mean(sc.mul(x, x)), secondOrder: true },

  { op: "prod", label: "axis", inputs: (r) => [r.awayFromZero([3, 4], 0.5, 1.5)], fn: (x) => sc.prod(x, 1), secondOrder: true },
  { op: "prod", label: "axes keepDims", inputs: (r) => [r.awayFromZero([2, 3, 2], 0.5, 1.5)], fn: (x) => sc.prod(x, [0, 2], true), secondOrder: true },
  { op: "prod", label: "one zero", inputs: fixed([[1.5, 0, -2], [0.7, 1.2, 0.9]]), fn: (x) => sc.prod(x, 1) },
  { op: "prod", label: "two zeros", inputs: fixed([[0, 0, -2], [0.5, 0, 0.9]]), fn: (x) => sc.prod(x, 1) },
  { op: "prod", label: "zero all axes", inputs: fixed([[1.5, -0.8, -2], [0.7, 0, 0.9]]), fn: (x) => sc.prod(x) },

  { op: "max", label: "axis", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.max(x, 1), secondOrder: true },
  { op: "max", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.max(x, [0, 2], true) },
  { op: "min", label: "axis", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.min(x, 0), secondOrder: true },
  { op: "min", label: "all keepDims", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.min(x, null, true) },

  { op: "logSumExp", label: "axis", inputs: (r) => [r.tensor([3, 4], -2, 2)], fn: (x) => sc.logSumExp(x, -1), secondOrder: true },
  { op: "logSumExp", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4], -2, 2)], fn: (x) => sc.logSumExp(x, [0, 2], true), secondOrder: true },

  { op: "variance", label: "axis", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.variance(x, 1), secondOrder: true },
  { op: "variance", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.variance(x, [0, 2], true), secondOrder: true },

  { op: "cumsum", label: "axis", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.cumsum(x, 1), secondOrder: true },
  { op: "cumsum", label: "exclusive reverse", inputs: (r) => [r.tensor([2, 3, 2])], fn: (x) => sc.cumsum(x, 1, { exclusive: true, reverse: true }) },
  { op: "cumsum", label: "exclusive", inputs: (r) => [r.tensor([4, 2])], fn: (x) => sc.cumsum(x, 0, { exclusive: true }) },
  { op: "cumsum", label: "reverse flattened", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.cumsum(x, null, { reverse: true }) },
  {
    op: "sumToLike",
    inputs: (r) => [r.tensor([2, 3])],
    fn: (g) => sc.applyOp(sc.getOp("sumToLike"), [g, sc.zeros([1, 3], "float64")], {})[0]!,
    secondOrder: true,
  },
];
