/** Gradient cases for the shape family (ops/shape.ts). */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

const idx = (v: sc.NestedArray) => sc.tensor(v, "int32");

const pack = (xs: sc.Tensor[]) => sc.applyOp(sc.getOp("packResiduals"), xs, {})[0]!;
const unpack = (h: sc.Tensor, like: sc.Tensor[]) => sc.applyOp(sc.getOp("unpackResiduals"), [h], { types: like.map((t) => ({ dtype: t.dtype, shape: t.shape })) });

export const cases: GradCase[] = [
  {
    op: "stackRead",
    label: "rows read twice, second order",
    inputs: (r) => [r.tensor([3, 2])],
    fn: (s) => sc.square(sc.stackRead(s, sc.scalar(2, "int32")).add(sc.stackRead(s, sc.scalar(0, "int32")).mul(sc.stackRead(s, sc.scalar(2, "int32"))))),
    secondOrder: true,
  },
  {
    op: "packResiduals",
    label: "a record of two values, unpacked, second order",
    inputs: (r) => [r.tensor([2, 3]), r.tensor([3])],
    fn: (a, b) => {
      const [x, y] = unpack(pack([a, b]), [a, b]) as [sc.Tensor, sc.Tensor];
      return sc.square(x.mul(y.sin()));
    },
    secondOrder: true,
  },
  {
    op: "unpackResiduals",
    label: "one value kept",
    inputs: (r) => [r.tensor([4])],
    fn: (a) => sc.exp(unpack(pack([a.square()]), [a])[0]!),
    secondOrder: true,
  },
  {
    op: "stackPush",
    label: "two rows, second order",
    inputs: (r) => [r.tensor([2, 3]), r.tensor([3])],
    fn: (s, v) => sc.square(sc.stackPush(sc.stackPush(s, v), v.sin())),
    secondOrder: true,
  },
  {
    op: "stackPop",
    label: "second order",
    inputs: (r) => [r.tensor([3, 2])],
    fn: (s) => {
      const [rest, last] = sc.stackPop(s);
      return sc.concat([sc.square(rest), sc.expandDims(last.exp(), 0)], 0);
    },
    secondOrder: true,
  },
  { op: "reshape", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.reshape(x, [4, -1]) },
  { op: "broadcastTo", inputs: (r) => [r.tensor([3, 1])], fn: (x) => sc.broadcastTo(x, [2, 3, 4]) },

  { op: "transpose", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.transpose(x, [-1, 0, 1]) },
  { op: "transpose", label: "default reversed, second order", inputs: (r) => [r.tensor([3, 5])], fn: (x) => sc.square(sc.transpose(x)), secondOrder: true },
  { op: "expandDims", label: "negative axis", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.expandDims(x, [-1, 0]) },
  { op: "squeeze", inputs: (r) => [r.tensor([2, 1, 3, 1])], fn: (x) => sc.squeeze(x, -1) },
  { op: "squeeze", label: "all", inputs: (r) => [r.tensor([1, 3, 1])], fn: (x) => sc.squeeze(x) },

  {
    op: "concat",
    label: "negative axis, three inputs",
    inputs: (r) => [r.tensor([2, 1, 3]), r.tensor([2, 4, 3]), r.tensor([2, 2, 3])],
    fn: (a, b, c) => sc.square(sc.concat([a, b, c], -2)),
    secondOrder: true,
  },
  { op: "stack", label: "negative axis", inputs: (r) => [r.tensor([2, 3]), r.tensor([2, 3])], fn: (a, b) => sc.stack([a, b], -1) },
  {
    op: "unstack",
    label: "unused outputs",
    inputs: (r) => [r.tensor([2, 4, 3])],
    fn: (x) => {
      const parts = sc.unstack(x, 1);
      return sc.add(parts[0]!, sc.mul(parts[3]!, 2));
    },
  },
  {
    op: "split",
    label: "sizes with -1, one output unused",
    inputs: (r) => [r.tensor([3, 7])],
    fn: (x) => {
      const [a, , c] = sc.split(x, [2, -1, 3], -1);
      return sc.mul(sc.square(a!), c!.slice([null, 1]));
    },
    secondOrder: true,
  },

  {
    op: "slice",
    label: "negative strides and indices",
    inputs: (r) => [r.tensor([4, 5, 6])],
    fn: (x) => sc.slice(x, [-1, 1, null], [0, -1, null], [-2, 2, -3]),
  },
  { op: "slice", label: "string spec, second order", inputs: (r) => [r.tensor([3, 6])], fn: (x) => sc.square(x.slice("1:, ::-2")), secondOrder: true },
  {
    op: "sliceGrad",
    inputs: (r) => [r.tensor([2, 2])],
    fn: (dy) => sc.applyOp(sc.getOp("sliceGrad"), [dy], { shape: [5, 4], begin: [4, null], end: [null, 0], strides: [-3, -2] })[0]!,
  },

  { op: "gather", label: "duplicates, 2-D indices, axis -1", inputs: (r) => [r.tensor([2, 4])], fn: (x) => sc.gather(x, idx([[3, 0], [3, 3]]), -1) },
  { op: "gather", label: "second order", inputs: (r) => [r.tensor([4, 3])], fn: (x) => sc.square(sc.gather(x, idx([2, 0, 2]))), secondOrder: true },
  { op: "gatherND", inputs: (r) => [r.tensor([3, 4, 2])], fn: (x) => sc.gatherND(x, idx([[[2, 1], [0, 3]], [[2, 1], [1, 0]]])) },
  { op: "gatherND", label: "full index, second order", inputs: (r) => [r.tensor([3, 2])], fn: (x) => sc.square(sc.gatherND(x, idx([[2, 1], [2, 1], [0, 0]]))), secondOrder: true },
  {
    op: "scatterAdd",
    label: "duplicates, axis 1",
    inputs: (r) => [r.tensor([2, 4]), r.tensor([2, 3])],
    fn: (x, u) => sc.scatterAdd(x, idx([1, 3, 1]), u, 1),
  },
  {
    op: "scatterAdd",
    label: "broadcast updates, second order",
    inputs: (r) => [r.tensor([3, 2]), r.tensor([2])],
    fn: (x, u) => sc.square(sc.scatterAdd(x, idx([2, 2, 0]), u)),
    secondOrder: true,
  },

  { op: "pad", label: "constant", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.pad(x, [[1, 0], [2, 3]], 0.5) },
  { op: "pad", label: "reflect, second order", inputs: (r) => [r.tensor([3, 4])], fn: (x) => sc.square(sc.pad(x, [[2, 5], [3, 1]], 0, "reflect")), secondOrder: true },
  { op: "pad", label: "symmetric", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.pad(x, [[3, 2], [0, 4]], 0, "symmetric") },
  { op: "pad", label: "edge", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.pad(x, [[1, 2], [2, 0]], 0, "edge") },
  { op: "tile", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.tile(x, [2, 1, 3]) },
  { op: "tile", label: "second order", inputs: (r) => [r.tensor([3])], fn: (x) => sc.square(sc.tile(x, [2])), secondOrder: true },
  { op: "flip", label: "negative axis", inputs: (r) => [r.tensor([2, 3, 4])], fn: (x) => sc.flip(x, [0, -1]) },

  {
    op: "clip",
    label: "broadcast bounds",
    // x spans [-1.5, 1.5]; bounds near +-0.6 (away from x's values with this seed), so every
    // element is either strictly inside or strictly outside its interval.
    inputs: (r) => [r.tensor([4, 3], -1.5, 1.5), r.tensor([3], -0.7, -0.5), r.tensor([4, 1], 0.5, 0.7)],
    fn: (x, lo, hi) => sc.clip(x, lo, hi),
    secondOrder: true,
  },
  {
    op: "clip",
    label: "crossed bounds",
    inputs: (r) => [r.tensor([2, 3], -1.5, 1.5), r.tensor([2, 3], 0.6, 0.8), r.tensor([2, 3], -0.8, -0.6)],
    fn: (x, lo, hi) => sc.clip(x, lo, hi),
  },
  { op: "clip", label: "scalar bounds", inputs: (r) => [r.tensor([3, 3], -2, 2)], fn: (x) => sc.square(sc.clip(x, -1.05, 0.95)), secondOrder: true },
];
