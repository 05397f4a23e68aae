/**
 * Gradient cases for the ops added for ONNX import: fmod, asinh, acosh, atanh (elementwise)
 * and gatherElements, scatterElements, scatterND (element-wise indexing).
 */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

const idx = (v: sc.NestedArray) => sc.tensor(v, "int32");

export const cases: GradCase[] = [
  { op: "fmod", label: "signs of both", inputs: (r) => [r.tensor([2, 3], 0.1, 0.9).mul(sc.tensor([1, -1, 1])), r.tensor([3], 1.1, 1.9).mul(sc.tensor([1, 1, -1]))], fn: sc.fmod, secondOrder: true },
  { op: "asinh", inputs: (r) => [r.tensor([2, 3], -2, 2)], fn: (x) => sc.asinh(x), secondOrder: true },
  { op: "acosh", inputs: (r) => [r.tensor([2, 3], 1.2, 3)], fn: (x) => sc.acosh(x), secondOrder: true },
  { op: "atanh", inputs: (r) => [r.tensor([2, 3], -0.8, 0.8)], fn: (x) => sc.atanh(x), secondOrder: true },
  {
    op: "gatherElements",
    label: "axis 1, repeated indices",
    inputs: (r) => [r.tensor([3, 4])],
    fn: (x) => sc.gatherElements(x, idx([[3, 3, 0], [1, 2, 1]]), 1),
  },
  { op: "gatherElements", label: "axis 0, second order", inputs: (r) => [r.tensor([3, 2])], fn: (x) => sc.square(sc.gatherElements(x, idx([[2, 0], [2, 1]]), 0)), secondOrder: true },
  {
    op: "scatterElements",
    label: "none: overwritten entries of x get no gradient",
    inputs: (r) => [r.tensor([3, 4]), r.tensor([2, 2])],
    fn: (x, u) => sc.scatterElements(x, idx([[1, 3], [0, 2]]), u, 1),
  },
  {
    op: "scatterElements",
    label: "add, duplicates, axis 0",
    inputs: (r) => [r.tensor([3, 2]), r.tensor([2, 2])],
    fn: (x, u) => sc.square(sc.scatterElements(x, idx([[2, 0], [2, 1]]), u, 0, "add")),
    secondOrder: true,
  },
  {
    op: "scatterND",
    label: "none, slices",
    inputs: (r) => [r.tensor([3, 4]), r.tensor([2, 4])],
    fn: (x, u) => sc.scatterND(x, idx([[2], [0]]), u),
  },
  {
    op: "scatterND",
    label: "add, element tuples with a duplicate",
    inputs: (r) => [r.tensor([3, 2]), r.tensor([3])],
    fn: (x, u) => sc.square(sc.scatterND(x, idx([[2, 1], [0, 0], [2, 1]]), u, "add")),
    secondOrder: true,
  },
];
