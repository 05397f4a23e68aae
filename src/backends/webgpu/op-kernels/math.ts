/** WebGPU kernel entries of the reductions, linear algebra, nn and random ops (their declarations in src/ops name them). */
import type { DType } from "../../../core/dtype.js";
import { reduce, type Combine } from "../kernels/reduce.js";
import { argReduce, cumsum, groupStat, softmax } from "../kernels/axis.js";
import { matmul } from "../kernels/matmul.js";
import { conv2d, conv2dBackpropFilter, conv2dBackpropInput, type ConvParams } from "../kernels/conv.js";
import { avgPool2d, avgPool2dScatter, maxPool2d, maxPool2dGather, maxPool2dScatter, type PoolParams } from "../kernels/pool.js";
import { sortAxis, topK } from "../kernels/sort.js";
import { bernoulli, categorical, draw, keyOp } from "../kernels/random.js";
import { ValueError } from "../../../core/errors.js";
import { gpuEntries, prod, view, type OutType, type WebGpuKernel } from "./types.js";

interface ReduceAttrs {
  axes: number[];
}

function reduction(c: Combine, mean = false): WebGpuKernel<ReduceAttrs> {
  return (dev, [x], a, outs) => [view(reduce(dev, x!, [...a.axes].sort((p, q) => p - q), c, outs[0]!.dtype, mean), outs[0]!.shape)];
}

/** [outer, n, inner] around `axis`. */
function around(shape: readonly number[], axis: number): [number, number, number] {
  return [prod(shape, 0, axis), shape[axis]!, prod(shape, axis + 1)];
}

interface ConvAttrs {
  strides: [number, number];
  pads: [number, number, number, number];
  dilations: [number, number];
  groups: number;
}

/** Conv geometry from the conv's input shape x, output channels/size and filter size. */
function convParams(x: readonly number[], outC: number, kH: number, kW: number, outH: number, outW: number, a: ConvAttrs): ConvParams {
  return {
    batch: x[0]!, inC: x[1]!, inH: x[2]!, inW: x[3]!, outC, kH, kW, outH, outW,
    strideH: a.strides[0], strideW: a.strides[1], padTop: a.pads[0], padLeft: a.pads[1],
    dilationH: a.dilations[0], dilationW: a.dilations[1], groups: a.groups,
  };
}

interface PoolAttrs {
  kernelSize: [number, number];
  strides: [number, number];
  pads: [number, number, number, number];
}

function poolParams(x: readonly number[], out: readonly number[], a: PoolAttrs): PoolParams {
  return {
    planes: x[0]! * x[1]!, inH: x[2]!, inW: x[3]!, outH: out[2]!, outW: out[3]!,
    kH: a.kernelSize[0], kW: a.kernelSize[1], strideH: a.strides[0], strideW: a.strides[1], padTop: a.pads[0], padLeft: a.pads[1],
  };
}

interface DrawAttrs {
  shape: number[];
  dtype: DType;
}

const out0 = (outs: readonly OutType[]) => outs[0]!;

export const mathGpu = gpuEntries(
  {
    sum: reduction("sum"),
    mean: reduction("sum", true),
    prod: reduction("prod"),
    max: reduction("max"),
    min: reduction("min"),
    any: reduction("any"),
    all: reduction("all"),
    logSumExp: (dev, [x], a: ReduceAttrs, outs) => [view(groupStat(dev, x!, [...a.axes].sort((p, q) => p - q), "logSumExp", out0(outs).shape), out0(outs).shape)],
    variance: (dev, [x], a: ReduceAttrs, outs) => [view(groupStat(dev, x!, [...a.axes].sort((p, q) => p - q), "variance", out0(outs).shape), out0(outs).shape)],
    argMax: (dev, [x], a: { axis: number | null }, outs) => {
      const [o, n, i] = a.axis === null ? [1, prod(x!.shape), 1] : around(x!.shape, a.axis);
      return [argReduce(dev, x!, "max", o, n, i, out0(outs).shape)];
    },
    argMin: (dev, [x], a: { axis: number | null }, outs) => {
      const [o, n, i] = a.axis === null ? [1, prod(x!.shape), 1] : around(x!.shape, a.axis);
      return [argReduce(dev, x!, "min", o, n, i, out0(outs).shape)];
    },
    cumsum: (dev, [x], a: { axis: number; exclusive: boolean; reverse: boolean }, outs) => {
      const [o, n, i] = around(x!.shape, a.axis);
      return [cumsum(dev, x!, o, n, i, a.exclusive, a.reverse, out0(outs).dtype)];
    },

    matmul: (dev, [a, b], attrs: { transposeA: boolean; transposeB: boolean }, outs) => [matmul(dev, a!, b!, attrs.transposeA, attrs.transposeB, out0(outs).shape, out0(outs).dtype)],

    softmax: (dev, [x], a: { axis: number }) => [softmax(dev, x!, ...around(x!.shape, a.axis), false)],
    logSoftmax: (dev, [x], a: { axis: number }) => [softmax(dev, x!, ...around(x!.shape, a.axis), true)],

    conv2d(dev, [x, w], a: ConvAttrs, outs) {
      const o = out0(outs);
      return [conv2d(dev, x!, w!, convParams(x!.shape, o.shape[1]!, w!.shape[2]!, w!.shape[3]!, o.shape[2]!, o.shape[3]!, a), o.shape, o.dtype)];
    },
    // The transpose of a conv2d from the output (its input) to x (its output).
    conv2dTranspose(dev, [x, w], a: ConvAttrs, outs) {
      const o = out0(outs);
      return [conv2dBackpropInput(dev, x!, w!, convParams(o.shape, x!.shape[1]!, w!.shape[2]!, w!.shape[3]!, x!.shape[2]!, x!.shape[3]!, a), o.shape, o.dtype)];
    },
    conv2dBackpropFilter(dev, [x, dy], a: ConvAttrs & { filterSize: [number, number] }, outs) {
      const o = out0(outs);
      return [conv2dBackpropFilter(dev, x!, dy!, convParams(x!.shape, dy!.shape[1]!, a.filterSize[0], a.filterSize[1], dy!.shape[2]!, dy!.shape[3]!, a), o.shape, o.dtype)];
    },

    maxPool2d: (dev, [x], a: PoolAttrs, outs) => [maxPool2d(dev, x!, poolParams(x!.shape, out0(outs).shape, a), out0(outs).shape, out0(outs).dtype)],
    avgPool2d: (dev, [x], a: PoolAttrs, outs) => [avgPool2d(dev, x!, poolParams(x!.shape, out0(outs).shape, a), out0(outs).shape, out0(outs).dtype)],
    // (x, dy) -> dx: the pooled geometry is dy's
    maxPool2dGrad: (dev, [x, dy], a: PoolAttrs, outs) => [maxPool2dScatter(dev, x!, dy!, poolParams(x!.shape, dy!.shape, a), out0(outs).shape, out0(outs).dtype)],
    // (x, g) -> g at each window's argmax
    maxPool2dGradGrad: (dev, [x, g], a: PoolAttrs, outs) => [maxPool2dGather(dev, x!, g!, poolParams(x!.shape, out0(outs).shape, a), out0(outs).shape, out0(outs).dtype)],
    avgPool2dGrad: (dev, [dy], a: PoolAttrs & { inputSize: [number, number] }, outs) => {
      const o = out0(outs);
      return [avgPool2dScatter(dev, dy!, poolParams(o.shape, dy!.shape, a), o.shape, o.dtype)];
    },

    topK(dev, [x], a: { k: number; sorted: boolean }, outs) {
      const n = x!.shape[x!.shape.length - 1]!;
      const rows = n === 0 ? 0 : prod(x!.shape) / n;
      return topK(dev, x!, rows, n, a.k, a.sorted, out0(outs).shape);
    },
    sort: (dev, [x], a: { axis: number; descending: boolean }) => [sortAxis(dev, x!, ...around(x!.shape, a.axis), a.descending, true, false).values!],
    argsort: (dev, [x], a: { axis: number; descending: boolean }) => [sortAxis(dev, x!, ...around(x!.shape, a.axis), a.descending, false, true).indices!],

    randomUniform: (dev, [key], a: DrawAttrs & { minval: number; maxval: number }) => [draw(dev, "uniform", a.shape, a.dtype, key!, a.minval, a.maxval)],
    randomNormal: (dev, [key], a: DrawAttrs & { mean: number; stddev: number }) => [draw(dev, "normal", a.shape, a.dtype, key!, a.mean, a.stddev)],
    randomBernoulli: (dev, [p, key]) => [bernoulli(dev, p!, key!)],
    randomCategorical(dev, [l, key], a: { numSamples: number }, outs) {
      const classes = l!.shape[l!.shape.length - 1]!;
      const batch = l!.shape.length === 1 ? 1 : l!.shape[0]!;
      return [categorical(dev, l!, batch, classes, a.numSamples, key!, out0(outs).shape)];
    },
    randomKey: (dev, [seed]) => keyOp(dev, "seed", seed!, null, 0),
    randomSplit: (dev, [key], a: { n: number }) => Array.from({ length: a.n }, (_, i) => keyOp(dev, "split", key!, null, i)[0]!),
    randomFoldIn: (dev, [key, data]) => keyOp(dev, "foldIn", key!, data!, 0),
    randomNextKey: (dev, [state]) => keyOp(dev, "next", state!, null, 0, () => new ValueError(`the generator has handed out all of its 2^52 keys; make a new one`, "random.Generator")),
  },
  // (random draws make float64 values on the host; int64 seeds and data are read there)
  ["randomUniform", "randomNormal", "randomBernoulli", "randomCategorical", "randomKey", "randomFoldIn"],
);
