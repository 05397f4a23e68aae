/** Gradient cases for the shape family (ops/shape.ts). */
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
  { op: "reshape", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.reshape(x, [4, -1]) },
  { op: "broadcastTo", inputs: (r) => [r.tensor([3, 1])], fn: (x) => sc.broadcastTo(x, [2, 3, 4]) },
];
