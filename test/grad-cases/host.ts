/** Gradient cases for host escapes (staging/host.ts). */
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
  {
    op: "hostCall",
    inputs: (r) => [r.tensor([2, 3]), r.tensor([3])],
    fn: (a, b) => sc.hostCall((x: sc.Tensor, y: sc.Tensor) => sc.sin(x).mul(y), sc.spec([2, 3], "float64"), a, b) as sc.Tensor,
    secondOrder: true,
  },
];
