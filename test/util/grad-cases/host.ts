/** Gradient cases for host escapes (staging/host.ts). */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
  {
    op: "hostCall",
    inputs: (r) => [r.tensor([2, 3]), r.tensor([3])],
    fn: (a, b) => sc.hostCall((x: sc.Tensor, y: sc.Tensor) => sc.sin(x).mul(y), sc.spec([2, 3], "float64"), a, b) as sc.Tensor,
    secondOrder: true,
  },
  {
    op: "customGradient",
    label: "a custom rule equal to the true derivative",
    inputs: (r) => [r.tensor([2, 3])],
    fn: (x) => sinWithCustomGradient(x) as sc.Tensor,
    secondOrder: true,
  },
];

const sinWithCustomGradient = sc.customGradient((x: sc.Tensor) => ({ value: sc.sin(x), grad: (dy: sc.Tensor) => dy.mul(sc.cos(x)) }));
