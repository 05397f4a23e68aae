/** Gradient cases for the nn family (ops/nn.ts). */
import * as sc from "../../../src/api/index.js";
import type { Rng } from "../rng.js";
import type { GradCase } from "./types.js";

/** Distinct values (spaced >= 0.05 apart, shuffled): no near-ties, so argmax / sort order is stable under finite differences. */
function distinct(shape: number[]) {
  return (rng: Rng): sc.Tensor[] => {
    const n = shape.reduce((a, b) => a * b, 1);
    const vals = Array.from({ length: n }, (_, i) => (i - n / 2) * 0.1 + rng.uniform(-0.025, 0.025));
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(0, i + 1);
      [vals[i], vals[j]] = [vals[j]!, vals[i]!];
    }
    return [sc.tensor(vals, "float64", shape)];
  };
}

const op = (name: string, inputs: sc.Tensor[], attrs: unknown): sc.Tensor => sc.applyOp(sc.getOp(name), inputs, attrs)[0]!;

// attrs for the internal gradient ops, as the public functions would produce them
const convAttrs = { strides: [2, 1], pads: [1, 0, 1, 1], dilations: [1, 2], groups: 2 };
const poolAttrs = { kernelSize: [3, 2], strides: [2, 1], pads: [1, 0, 1, 1] };

export const cases: GradCase[] = [
  { op: "softmax", label: "axis -1", inputs: (r) => [r.tensor([2, 3, 4], -2, 2)], fn: (x) => sc.softmax(x), secondOrder: true },
  { op: "softmax", label: "axis 0", inputs: (r) => [r.tensor([3, 4], -2, 2)], fn: (x) => sc.softmax(x, 0), secondOrder: true },
  { op: "logSoftmax", label: "axis -1", inputs: (r) => [r.tensor([2, 5], -2, 2)], fn: (x) => sc.logSoftmax(x), secondOrder: true },
  { op: "logSoftmax", label: "axis 1 of 3", inputs: (r) => [r.tensor([2, 3, 2], -2, 2)], fn: (x) => sc.logSoftmax(x, 1), secondOrder: true },

  {
    op: "conv2d",
    label: "stride 2, same",
    inputs: (r) => [r.tensor([2, 3, 5, 6]), r.tensor([4, 3, 3, 2])],
    fn: (x, w) => sc.conv2d(x, w, { strides: 2, padding: "same" }),
  },
  {
    op: "conv2d",
    label: "dilation 2, asymmetric padding",
    inputs: (r) => [r.tensor([1, 2, 6, 5]), r.tensor([3, 2, 2, 3])],
    fn: (x, w) => sc.conv2d(x, w, { dilations: 2, padding: [[1, 0], [0, 2]] }),
  },
  {
    op: "conv2d",
    label: "groups 2, stride [2, 1]",
    inputs: (r) => [r.tensor([2, 4, 5, 4]), r.tensor([6, 2, 3, 3])],
    fn: (x, w) => sc.conv2d(x, w, { groups: 2, strides: [2, 1], padding: 1 }),
  },
  {
    op: "conv2d",
    label: "second order, stride 2, groups 2",
    inputs: (r) => [r.tensor([1, 2, 4, 5]), r.tensor([2, 1, 2, 3])],
    fn: (x, w) => sc.conv2d(x, w, { strides: 2, groups: 2, padding: "same" }),
    secondOrder: true,
  },
  {
    op: "conv2dTranspose",
    label: "stride 2, outputPadding 1, groups 2, dilation 2",
    inputs: (r) => [r.tensor([2, 4, 3, 3]), r.tensor([4, 1, 2, 3])],
    fn: (x, w) => sc.conv2dTranspose(x, w, { strides: 2, outputPadding: [1, 0], groups: 2, dilations: [1, 2], padding: [[0, 1], [1, 1]] }),
    secondOrder: true,
  },
  {
    op: "conv2dTranspose",
    label: "same",
    inputs: (r) => [r.tensor([1, 2, 3, 2]), r.tensor([2, 3, 3, 3])],
    fn: (x, w) => sc.conv2dTranspose(x, w, { strides: 2, padding: "same" }),
  },
  {
    op: "conv2dBackpropFilter",
    label: "stride [2, 1], dilation [1, 2], groups 2",
    // x [1, 4, 5, 6], filter [4, 2, 2, 2]: outH = floor((5 + 2 - 2) / 2) + 1 = 3, outW = (6 + 1 - 3) + 1 = 5
    inputs: (r) => [r.tensor([1, 4, 5, 6]), r.tensor([1, 4, 3, 5])],
    fn: (x, dy) => op("conv2dBackpropFilter", [x, dy], { ...convAttrs, filterSize: [2, 2] }),
    secondOrder: true,
  },

  { op: "maxPool2d", label: "3x3 stride 2 padding 1", inputs: distinct([2, 2, 5, 6]), fn: (x) => sc.maxPool2d(x, { kernelSize: 3, strides: 2, padding: 1 }) },
  { op: "maxPool2d", label: "same, second order", inputs: distinct([1, 2, 4, 5]), fn: (x) => sc.maxPool2d(x, { kernelSize: [2, 3], strides: [2, 1], padding: "same" }), secondOrder: true },
  {
    op: "maxPool2dGrad",
    // x [1, 2, 5, 4] pooled by 3x2 windows, strides [2, 1], pads [1, 0, 1, 1]: out [1, 2, 3, 4]
    inputs: (r) => [...distinct([1, 2, 5, 4])(r), r.tensor([1, 2, 3, 4])],
    fn: (x, dy) => op("maxPool2dGrad", [x, dy], poolAttrs),
    secondOrder: true,
  },
  {
    op: "maxPool2dGradGrad",
    inputs: (r) => [...distinct([1, 2, 5, 4])(r), r.tensor([1, 2, 5, 4])],
    fn: (x, g) => op("maxPool2dGradGrad", [x, g], poolAttrs),
    secondOrder: true,
  },
  { op: "avgPool2d", label: "3x3 stride 2 padding 1", inputs: (r) => [r.tensor([2, 2, 5, 6])], fn: (x) => sc.avgPool2d(x, { kernelSize: 3, strides: 2, padding: 1 }), secondOrder: true },
  { op: "avgPool2d", label: "same, stride [1, 2]", inputs: (r) => [r.tensor([1, 1, 4, 5])], fn: (x) => sc.avgPool2d(x, { kernelSize: [2, 3], strides: [1, 2], padding: "same" }) },
  {
    op: "avgPool2dGrad",
    inputs: (r) => [r.tensor([1, 2, 3, 4])],
    fn: (dy) => op("avgPool2dGrad", [dy], { ...poolAttrs, inputSize: [5, 4] }),
    secondOrder: true,
  },

  { op: "topK", inputs: distinct([3, 7]), fn: (x) => sc.topK(x, 3)[0], secondOrder: true },
  { op: "topK", label: "unsorted", inputs: distinct([2, 5]), fn: (x) => sc.topK(x, 4, { sorted: false })[0] },
  { op: "sort", label: "axis -1", inputs: distinct([3, 6]), fn: (x) => sc.sort(x), secondOrder: true },
  { op: "topK", label: "rank 3", inputs: distinct([2, 3, 5]), fn: (x) => sc.topK(x, 2)[0] },
  { op: "sort", label: "middle axis", inputs: distinct([2, 4, 3]), fn: (x) => sc.sort(x, { axis: 1 }), secondOrder: true },
  { op: "sort", label: "axis 0 descending", inputs: distinct([5, 2, 3]), fn: (x) => sc.sort(x, { axis: 0, descending: true }) },
];
