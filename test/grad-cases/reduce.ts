/** Gradient cases for the reduce family (ops/reduce.ts). */
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
  { op: "sum", label: "axes keepDims", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.sum(x, [0, 2], true) },
];
