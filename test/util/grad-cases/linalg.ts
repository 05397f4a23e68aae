/** Gradient cases for the linalg family (ops/linalg.ts). */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

export const cases: GradCase[] = [
  { op: "matmul", inputs: (r) => [r.tensor([3, 4]), r.tensor([4, 2])], fn: (a, b) => sc.matmul(a, b), secondOrder: true },
  { op: "matmul", label: "transposeA", inputs: (r) => [r.tensor([4, 3]), r.tensor([4, 2])], fn: (a, b) => sc.matmul(a, b, { transposeA: true }), secondOrder: true },
  { op: "matmul", label: "transposeB", inputs: (r) => [r.tensor([3, 4]), r.tensor([2, 4])], fn: (a, b) => sc.matmul(a, b, { transposeB: true }), secondOrder: true },
  {
    op: "matmul",
    label: "transposeA transposeB",
    inputs: (r) => [r.tensor([4, 3]), r.tensor([2, 4])],
    fn: (a, b) => sc.matmul(a, b, { transposeA: true, transposeB: true }),
    secondOrder: true,
  },
  { op: "matmul", label: "batch broadcast", inputs: (r) => [r.tensor([2, 1, 3, 4]), r.tensor([5, 4, 2])], fn: (a, b) => sc.matmul(a, b), secondOrder: true },
  {
    op: "matmul",
    label: "batch broadcast transposed",
    inputs: (r) => [r.tensor([3, 1, 4, 2]), r.tensor([2, 3, 4])],
    fn: (a, b) => sc.matmul(a, b, { transposeA: true, transposeB: true }),
  },
  { op: "matmul", label: "vector @ matrix", inputs: (r) => [r.tensor([4]), r.tensor([4, 3])], fn: (a, b) => sc.matmul(a, b), secondOrder: true },
  { op: "matmul", label: "batched matrix @ vector", inputs: (r) => [r.tensor([2, 3, 4]), r.tensor([4])], fn: (a, b) => sc.matmul(a, b), secondOrder: true },
  { op: "matmul", label: "vector @ vector", inputs: (r) => [r.tensor([5]), r.tensor([5])], fn: (a, b) => sc.matmul(a, b) },
  { op: "matmul", label: "dot 2-D", inputs: (r) => [r.tensor([2, 3]), r.tensor([3, 2])], fn: (a, b) => sc.dot(a, b) },
  { op: "matmul", label: "dot N-D", inputs: (r) => [r.tensor([2, 2, 3]), r.tensor([2, 3, 2])], fn: (a, b) => sc.dot(a, b) },
  { op: "mul", label: "outer", inputs: (r) => [r.tensor([3]), r.tensor([2, 2])], fn: (a, b) => sc.outer(a, b), secondOrder: true },
  { op: "matmul", label: "einsum ij,jk->ik", inputs: (r) => [r.tensor([3, 4]), r.tensor([4, 2])], fn: (a, b) => sc.einsum("ij,jk->ik", a, b), secondOrder: true },
  { op: "matmul", label: "einsum bij,bjk->bik", inputs: (r) => [r.tensor([2, 3, 4]), r.tensor([2, 4, 2])], fn: (a, b) => sc.einsum("bij,bjk->bik", a, b) },
  { op: "matmul", label: "einsum permuted bji,kjb->kbi", inputs: (r) => [r.tensor([2, 4, 3]), r.tensor([2, 4, 2])], fn: (a, b) => sc.einsum("bji,kjb->kbi", a, b) },
  { op: "matmul", label: "einsum three operands", inputs: (r) => [r.tensor([2, 3]), r.tensor([3, 4]), r.tensor([4, 2])], fn: (a, b, c) => sc.einsum("ij,jk,kl->il", a, b, c) },
  { op: "sum", label: "einsum trace ii->", inputs: (r) => [r.tensor([3, 3])], fn: (x) => sc.einsum("ii->", x), secondOrder: true },
  { op: "sum", label: "einsum ij->i", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.einsum("ij->i", x) },
  { op: "mul", label: "einsum i,j->ij", inputs: (r) => [r.tensor([3]), r.tensor([4])], fn: (a, b) => sc.einsum("i,j->ij", a, b), secondOrder: true },
  { op: "matmul", label: "einsum i,i->", inputs: (r) => [r.tensor([4]), r.tensor([4])], fn: (a, b) => sc.einsum("i,i->", a, b) },
  { op: "mul", label: "einsum diagonal ii->i", inputs: (r) => [r.tensor([3, 3])], fn: (x) => sc.einsum("ii->i", x) },
  { op: "matmul", label: "einsum ellipsis broadcast", inputs: (r) => [r.tensor([2, 1, 3, 4]), r.tensor([3, 4, 2])], fn: (a, b) => sc.einsum("...ij,...jk->...ik", a, b) },
];
