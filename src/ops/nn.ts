/**
 * Neural-network ops: softmax, logSoftmax, conv2d, conv2dTranspose (and the registered
 * gradient op conv2dBackpropFilter), maxPool2d / avgPool2d (and their gradient ops), topK,
 * sort, argsort.
 *
 * Layouts: images are NCHW. conv2d filters are [outC, inC/groups, kH, kW]; conv2dTranspose
 * filters are [inC, outC/groups, kH, kW], as in PyTorch's ConvTranspose2d (the same tensor a
 * conv2d going the other way would use). Explicit padding is stored in attributes in ONNX order
 * [top, left, bottom, right]; "same" and "valid" are resolved when the op is called.
 *
 * Gradients close over registry ops, so derivatives of any order exist:
 *   conv2d            dx = conv2dTranspose(dy, w)        dw = conv2dBackpropFilter(x, dy)
 *   conv2dTranspose   dx = conv2d(dy, w)                 dw = conv2dBackpropFilter(dy, x)
 *   conv2dBackpropFilter(x, dy)   dx = conv2dTranspose(dy, g)   ddy = conv2d(x, g)
 *   maxPool2d         dx = maxPool2dGrad(x, dy)   (dy routed to each window's argmax)
 *   maxPool2dGrad     ddy = maxPool2dGradGrad(x, g)  (g read at each window's argmax); and back
 *   avgPool2d         dx = avgPool2dGrad(dy)          avgPool2dGrad's own VJP is avgPool2d
 *   topK, sort        dx = scatterAdd of dy at the selected / permuted positions (shape.ts)
 * Sorting order everywhere: NaN last (ascending and descending), ties in index order (stable).
 */
import { allocStorage, isFloat, type DType, type TypedArray } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { dimsCompatible, fmtShape, hasUnknownDims, normalizeAxis, sizeOf, type Shape } from "../core/shape.js";
import { Tensor, type TensorLike } from "../core/tensor.js";
import * as convKernels from "../backends/cpu/conv.js";
import * as poolKernels from "../backends/cpu/pool.js";
import { sortAxis, topKRows } from "../backends/cpu/sort.js";
import { applyOp, applyOp1, defineOp, type OpDef, type TensorType } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { exp } from "./unary.js";
import { add, mul, sub } from "./binary.js";
import { sum } from "./reduce.js";
import { expandDims, reshape, scatterAdd, transpose } from "./shape.js";
import { arange, full, oneHot } from "./creation.js";
import { where } from "./where.js";
import { cast } from "./cast.js";
import { checkOptions, optionKeys } from "../core/options.js";

// ---- softmax / logSoftmax -------------------------------------------------------------------

export interface SoftmaxAttrs {
  /** Normalized (non-negative) axis. */
  axis: number;
}

/** Dtype of a float-valued result: float inputs keep theirs, integer and bool give float32. */
function floatResult(d: DType): DType {
  return isFloat(d) ? d : "float32";
}

/** Views `shape` as [outer, shape[axis], inner]. */
function splitAt(shape: Shape, axis: number): [number, number, number] {
  let outer = 1, inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  return [outer, shape[axis]!, inner];
}

/** Numerically stable (max-shifted) softmax or log-softmax of every [outer, n, inner] slice. */
function softmaxKernel(x: TypedArray, out: TypedArray, outer: number, n: number, inner: number, log: boolean): void {
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * n * inner + i;
      const end = base + n * inner;
      let m = -Infinity;
      let nan = false;
      for (let j = base; j < end; j += inner) {
        const v = x[j]!;
        if (v > m) m = v;
        else if (v !== v) nan = true;
      }
      if (nan) m = NaN;
      let s = 0;
      if (log) {
        for (let j = base; j < end; j += inner) s += Math.exp(x[j]! - m);
        const shift = m + Math.log(s);
        for (let j = base; j < end; j += inner) out[j] = x[j]! - shift;
      } else {
        for (let j = base; j < end; j += inner) {
          const e = Math.exp(x[j]! - m);
          out[j] = e;
          s += e;
        }
        const r = 1 / s;
        for (let j = base; j < end; j += inner) out[j] = out[j]! * r;
      }
    }
  }
}

function defineSoftmax(name: "softmax" | "logSoftmax", log: boolean): OpDef<SoftmaxAttrs> {
  return defineOp<SoftmaxAttrs>({
    name,
    family: "nn",
    inputs: ["x"],
    infer(inputs, attrs): TensorType[] {
      const x = inputs[0]!;
      normalizeAxis(name, attrs.axis, x.shape.length);
      return [{ shape: x.shape, dtype: floatResult(x.dtype) }];
    },
    kernel(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      const [outer, n, inner] = splitAt(x.shape, attrs.axis);
      softmaxKernel(x.concrete(), out, outer, n, inner, log);
      return [out];
    },
    vjp(ctx, cts) {
      const y = ctx.outputs[0]!;
      const dy = cts[0]!;
      const axis = ctx.attrs.axis;
      // softmax: y * (dy - sum(dy * y)); logSoftmax: dy - exp(y) * sum(dy)
      if (log) return [sub(dy, mul(exp(y), sum(dy, axis, true)))];
      return [mul(y, sub(dy, sum(mul(dy, y), axis, true)))];
    },
  });
}

export const softmaxOp = defineSoftmax("softmax", false);
export const logSoftmaxOp = defineSoftmax("logSoftmax", true);

/** exp(x) / sum(exp(x)) along `axis` (default the last), computed with a max shift. Integer inputs give float32. */
export function softmax(x: TensorLike, axis = -1): Tensor {
  const t = toTensor(x, "softmax");
  return applyOp1(softmaxOp, [t], { axis: normalizeAxis("softmax", axis, t.rank) });
}

/** x - log(sum(exp(x))) along `axis` (default the last), computed with a max shift. */
export function logSoftmax(x: TensorLike, axis = -1): Tensor {
  const t = toTensor(x, "logSoftmax");
  return applyOp1(logSoftmaxOp, [t], { axis: normalizeAxis("logSoftmax", axis, t.rank) });
}

// ---- shared 2-D geometry --------------------------------------------------------------------

/** Zero padding of the two spatial dimensions: a mode, one number for all sides, [h, w], or [[top, bottom], [left, right]]. */
export type Padding2d = "valid" | "same" | number | readonly [number, number] | readonly [readonly [number, number], readonly [number, number]];

type Pair = [number, number];
type Pads = [number, number, number, number];

function isInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v);
}

/** A number or a pair of integers >= min, as a pair. */
function intPair(op: string, what: string, v: unknown, min: number): Pair {
  const pair = typeof v === "number" ? [v, v] : v;
  if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((d) => isInt(d) && d >= min)) {
    throw new ValueError(`${what} must be an integer >= ${min} or a pair of them, got ${JSON.stringify(v)}`, op);
  }
  return [pair[0], pair[1]];
}

function checkRank4(op: string, what: string, shape: Shape, layout: string): void {
  if (shape.length !== 4) {
    throw new ShapeError(`${what} must be 4-D (${layout}), got shape ${fmtShape(shape)} of rank ${shape.length}`, op);
  }
}

function checkSpatial(op: string, x: Shape): void {
  const small = (d: number) => d >= 0 && d < 1; // an unknown size (staging, -1) is checked when the graph runs
  if (small(x[2]!) || small(x[3]!)) throw new ShapeError(`input x has shape ${fmtShape(x)}: its spatial dimensions (H, W) must be at least 1`, op);
}

/** Effective extent of a dilated kernel. */
const effective = (k: number, d: number): number => d * (k - 1) + 1;

/** Output size of a strided window over a padded dimension (the window must fit). */
const windows = (size: number, before: number, after: number, keff: number, s: number): number =>
  size < 0 ? -1 : Math.floor((size + before + after - keff) / s) + 1;

/** The ShapeError of an op that needs a spatial (or other) size that is unknown while staging. */
function unknownSizeError(op: string, what: string, shape: Shape): ShapeError {
  return new ShapeError(
    `${what} needs the size of every dimension it uses, but the input has shape ${fmtShape(shape)}, where -1 is a size unknown while the ` +
      `function is staged with null inputSignature dimensions; give the inputSignature concrete sizes for them`,
    op,
  );
}

/**
 * Resolves a padding spec to explicit [top, left, bottom, right]. "same" pads (as TensorFlow)
 * so that the output has ceil(in / stride) elements, the extra element (if any) after.
 */
function resolvePads(op: string, padding: Padding2d | undefined, inHW: Pair, keff: Pair, strides: Pair, xShape: Shape): Pads {
  const p = padding ?? "valid";
  if (p === "valid") return [0, 0, 0, 0];
  if (p === "same") {
    if (inHW[0] < 0 || inHW[1] < 0) throw unknownSizeError(op, `padding "same" (whose pads depend on the input's height and width)`, xShape);
    const [t, b] = samePads(inHW[0], keff[0], strides[0]);
    const [l, r] = samePads(inHW[1], keff[1], strides[1]);
    return [t, l, b, r];
  }
  if (typeof p === "number" || (Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === "number"))) {
    const [h, w] = intPair(op, "padding", p, 0);
    return [h, w, h, w];
  }
  if (Array.isArray(p) && p.length === 2 && p.every((v) => Array.isArray(v) && v.length === 2 && v.every((d: unknown) => isInt(d) && d >= 0))) {
    const [[t, b], [l, r]] = p as [[number, number], [number, number]];
    return [t, l, b, r];
  }
  throw new ValueError(
    `padding must be "valid", "same", a non-negative integer, [h, w] or [[top, bottom], [left, right]], got ${JSON.stringify(padding)}`,
    op,
  );
}

function samePads(size: number, keff: number, s: number): Pair {
  const out = Math.ceil(size / s);
  const total = Math.max(0, (out - 1) * s + keff - size);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

function checkPads(op: string, pads: readonly number[]): void {
  if (!Array.isArray(pads) || pads.length !== 4 || !pads.every((d) => isInt(d) && d >= 0)) {
    throw new ValueError(`pads must be 4 non-negative integers [top, left, bottom, right], got ${JSON.stringify(pads)}`, op);
  }
}

function checkPairAttr(op: string, what: string, v: readonly number[], min: number): void {
  if (!Array.isArray(v) || v.length !== 2 || !v.every((d) => isInt(d) && d >= min)) {
    throw new ValueError(`${what} must be a pair of integers >= ${min}, got ${JSON.stringify(v)}`, op);
  }
}

/** Throws unless the (dilated) kernel fits the padded input in both spatial dimensions. */
function checkKernelFits(op: string, H: number, W: number, pads: Pads, keff: Pair, xShape: Shape, kernelDesc: string): void {
  const ph = H + pads[0] + pads[2], pw = W + pads[1] + pads[3];
  if ((H >= 0 && keff[0] > ph) || (W >= 0 && keff[1] > pw)) {
    throw new ShapeError(
      `${kernelDesc} (effective size ${keff[0]}x${keff[1]}) is larger than the padded input ` +
        `(${ph}x${pw}: input shape ${fmtShape(xShape)}, pads [top, left, bottom, right] = ${JSON.stringify(pads)})`,
      op,
    );
  }
}

// ---- convolution ----------------------------------------------------------------------------

export interface Conv2dAttrs {
  strides: Pair;
  /** Explicit zero padding [top, left, bottom, right]. */
  pads: Pads;
  dilations: Pair;
  groups: number;
}

export interface Conv2dTransposeAttrs extends Conv2dAttrs {
  /** Extra rows/columns added at the bottom/right of the output (each < its stride). */
  outputPadding: Pair;
}

export interface Conv2dBackpropFilterAttrs extends Conv2dAttrs {
  /** [kH, kW] of the filter whose gradient is computed. */
  filterSize: Pair;
}

export interface Conv2dOptions {
  /** Default 1. */
  strides?: number | readonly [number, number];
  /** Default "valid". */
  padding?: Padding2d;
  /** Default 1. */
  dilations?: number | readonly [number, number];
  /** Default 1: inC and outC must both be divisible by it. */
  groups?: number;
}

export interface Conv2dTransposeOptions extends Conv2dOptions {
  /** Default 0; each must be smaller than its stride. Not allowed with padding "same". */
  outputPadding?: number | readonly [number, number];
}

const CONV2D_OPTIONS = optionKeys<Conv2dOptions>()("strides", "padding", "dilations", "groups");
const CONV2D_TRANSPOSE_OPTIONS = optionKeys<Conv2dTransposeOptions>()("strides", "padding", "dilations", "groups", "outputPadding");

type ConvDtype = "float32" | "float64";

function checkConvDtypes(op: string, a: TensorType, b: TensorType, an: string, bn: string): ConvDtype {
  if (!isFloat(a.dtype) || !isFloat(b.dtype)) {
    throw new DtypeError(`needs float32 or float64 inputs, got ${an} ${a.dtype} and ${bn} ${b.dtype}`, op);
  }
  if (a.dtype !== b.dtype) {
    throw new DtypeError(`${an} and ${bn} must have the same dtype, got ${a.dtype} and ${b.dtype}`, op);
  }
  return a.dtype as ConvDtype;
}

function checkConvAttrs(op: string, a: Conv2dAttrs): void {
  checkPairAttr(op, "strides", a.strides, 1);
  checkPairAttr(op, "dilations", a.dilations, 1);
  checkPads(op, a.pads);
  if (!isInt(a.groups) || a.groups < 1) throw new ValueError(`groups must be a positive integer, got ${String(a.groups)}`, op);
}

function convParams(
  x: Shape, outC: number, kH: number, kW: number, outH: number, outW: number, a: Conv2dAttrs,
): convKernels.Conv2dParams {
  return {
    batch: x[0]!, inC: x[1]!, inH: x[2]!, inW: x[3]!,
    outC, kH, kW, outH, outW,
    strideH: a.strides[0], strideW: a.strides[1],
    padTop: a.pads[0], padLeft: a.pads[1],
    dilationH: a.dilations[0], dilationW: a.dilations[1],
    groups: a.groups,
  };
}

/** Shape of conv2d(x, w) under attrs; validates everything. */
function conv2dShape(op: string, x: Shape, w: Shape, a: Conv2dAttrs, wName = "filter w"): number[] {
  checkRank4(op, "input x", x, "N, C, H, W");
  checkRank4(op, wName, w, "outC, inC/groups, kH, kW");
  checkConvAttrs(op, a);
  const [N, C, H, W] = x as [number, number, number, number];
  const [O, Cg, kH, kW] = w as [number, number, number, number];
  const g = a.groups;
  if (C >= 0 && Cg >= 0 && Cg * g !== C) {
    throw new ShapeError(
      `channel mismatch: input x has shape ${fmtShape(x)} (${C} channels) but ${wName} has shape ${fmtShape(w)}, ` +
        `which with groups=${g} expects ${Cg * g} input channels (${Cg} per group)`,
      op,
    );
  }
  if (O >= 0 && O % g !== 0) throw new ShapeError(`${wName} has shape ${fmtShape(w)}: its ${O} output channels are not divisible by groups=${g}`, op);
  checkSpatial(op, x);
  if (kH < 0 || kW < 0) throw unknownSizeError(op, `the output size (which depends on the kernel size)`, w);
  const keff: Pair = [effective(kH, a.dilations[0]), effective(kW, a.dilations[1])];
  checkKernelFits(op, H, W, a.pads, keff, x, `kernel ${kH}x${kW} with dilations ${JSON.stringify(a.dilations)}`);
  return [N, O, windows(H, a.pads[0], a.pads[2], keff[0], a.strides[0]), windows(W, a.pads[1], a.pads[3], keff[1], a.strides[1])];
}

/** Leftover rows/columns a strided conv2d of `x` skipped at the bottom/right: conv2dTranspose's outputPadding to get x's size back. */
function leftover(x: Shape, kH: number, kW: number, a: Conv2dAttrs, op = "conv2d"): Pair {
  const r = (size: number, before: number, after: number, keff: number, s: number) => {
    if (s === 1) return 0;
    if (size < 0) throw unknownSizeError(op, `the gradient of a strided ${op} (which depends on the input's height and width)`, x);
    return (size + before + after - keff) % s;
  };
  return [
    r(x[2]!, a.pads[0], a.pads[2], effective(kH, a.dilations[0]), a.strides[0]),
    r(x[3]!, a.pads[1], a.pads[3], effective(kW, a.dilations[1]), a.strides[1]),
  ];
}

/** [kH, kW] of a filter, for gradient attributes (which need them known). */
function filterSizeOf(op: string, w: Shape): Pair {
  if (w[2]! < 0 || w[3]! < 0) throw unknownSizeError(op, `the gradient (whose attributes hold the filter's kH and kW)`, w);
  return [w[2]!, w[3]!];
}

const convOnly = (a: Conv2dAttrs): Conv2dAttrs => ({ strides: a.strides, pads: a.pads, dilations: a.dilations, groups: a.groups });

export const conv2dOp: OpDef<Conv2dAttrs> = defineOp<Conv2dAttrs>({
  name: "conv2d",
  family: "nn",
  inputs: ["x", "w"],
  infer(inputs, attrs) {
    const [x, w] = inputs as [TensorType, TensorType];
    const dtype = checkConvDtypes("conv2d", x, w, "x", "w");
    return [{ shape: conv2dShape("conv2d", x.shape, w.shape, attrs), dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, w] = inputs as [Tensor, Tensor];
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    if (out.length > 0 && x.size > 0 && w.size > 0) {
      const [, O, oH, oW] = o.shape as [number, number, number, number];
      convKernels.conv2d(o.dtype as ConvDtype, x.concrete(), w.concrete(), out, convParams(x.shape, O, w.shape[2]!, w.shape[3]!, oH, oW, attrs));
    }
    return [out];
  },
  vjp(ctx, cts) {
    const [x, w] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    const a = convOnly(ctx.attrs);
    const [kH, kW] = filterSizeOf("conv2d", w.shape);
    return [
      applyOp1(conv2dTransposeOp, [dy, w], { ...a, outputPadding: leftover(x.shape, kH, kW, a) }),
      applyOp1(conv2dBackpropFilterOp, [x, dy], { ...a, filterSize: [kH, kW] }),
    ];
  },
});

export const conv2dTransposeOp: OpDef<Conv2dTransposeAttrs> = defineOp<Conv2dTransposeAttrs>({
  name: "conv2dTranspose",
  family: "nn",
  inputs: ["x", "w"],
  infer(inputs, attrs) {
    const op = "conv2dTranspose";
    const [x, w] = inputs as [TensorType, TensorType];
    const dtype = checkConvDtypes(op, x, w, "x", "w");
    checkRank4(op, "input x", x.shape, "N, C, H, W");
    checkRank4(op, "filter w", w.shape, "inC, outC/groups, kH, kW");
    checkConvAttrs(op, attrs);
    checkPairAttr(op, "outputPadding", attrs.outputPadding, 0);
    const [N, C, H, W] = x.shape as [number, number, number, number];
    const [Wc, Og, kH, kW] = w.shape as [number, number, number, number];
    const g = attrs.groups;
    if (!dimsCompatible(Wc, C)) {
      throw new ShapeError(
        `channel mismatch: input x has shape ${fmtShape(x.shape)} (${C} channels) but filter w has shape ${fmtShape(w.shape)} ` +
          `(layout [inC, outC/groups, kH, kW], groups=${g}), whose first dimension expects ${Wc} input channels`,
        op,
      );
    }
    if (C >= 0 && C % g !== 0) throw new ShapeError(`input x has shape ${fmtShape(x.shape)}: its ${C} channels are not divisible by groups=${g}`, op);
    for (let i = 0; i < 2; i++) {
      if (attrs.outputPadding[i]! >= attrs.strides[i]!) {
        throw new ValueError(`outputPadding ${JSON.stringify(attrs.outputPadding)} must be smaller than strides ${JSON.stringify(attrs.strides)}`, op);
      }
    }
    checkSpatial(op, x.shape);
    const p = attrs.pads, s = attrs.strides;
    if (kH < 0 || kW < 0) throw unknownSizeError(op, `the output size (which depends on the kernel size)`, w.shape);
    // An unknown input size (staging) gives an unknown output size.
    const oH = H < 0 ? -1 : (H - 1) * s[0] - p[0] - p[2] + effective(kH, attrs.dilations[0]) + attrs.outputPadding[0];
    const oW = W < 0 ? -1 : (W - 1) * s[1] - p[1] - p[3] + effective(kW, attrs.dilations[1]) + attrs.outputPadding[1];
    if ((H >= 0 && oH < 1) || (W >= 0 && oW < 1)) {
      throw new ShapeError(
        `the output would be ${oH}x${oW}: the padding ${JSON.stringify(p)} removes more than the transposed convolution of ` +
          `input shape ${fmtShape(x.shape)} with filter shape ${fmtShape(w.shape)} produces`,
        op,
      );
    }
    return [{ shape: [N, Og < 0 ? -1 : Og * g, oH, oW], dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, w] = inputs as [Tensor, Tensor];
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    if (out.length > 0 && x.size > 0 && w.size > 0) {
      // The transpose of a conv2d from `out` (its input) to `x` (its output).
      const p = convParams(o.shape, x.shape[1]!, w.shape[2]!, w.shape[3]!, x.shape[2]!, x.shape[3]!, attrs);
      convKernels.conv2dBackpropInput(o.dtype as ConvDtype, x.concrete(), w.concrete(), out, p);
    }
    return [out];
  },
  vjp(ctx, cts) {
    const [x, w] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    const a = convOnly(ctx.attrs);
    return [
      applyOp1(conv2dOp, [dy, w], a),
      applyOp1(conv2dBackpropFilterOp, [dy, x], { ...a, filterSize: filterSizeOf("conv2dTranspose", w.shape) }),
    ];
  },
});

/**
 * The filter gradient of conv2d: given its input x [N, C, H, W] and output cotangent
 * dy [N, outC, outH, outW], returns dw [outC, C/groups, kH, kW]. Registered so that
 * conv2d's gradient is itself differentiable.
 */
export const conv2dBackpropFilterOp: OpDef<Conv2dBackpropFilterAttrs> = defineOp<Conv2dBackpropFilterAttrs>({
  name: "conv2dBackpropFilter",
  family: "nn",
  inputs: ["x", "dy"],
  infer(inputs, attrs) {
    const op = "conv2dBackpropFilter";
    const [x, dy] = inputs as [TensorType, TensorType];
    const dtype = checkConvDtypes(op, x, dy, "x", "dy");
    checkRank4(op, "input x", x.shape, "N, C, H, W");
    checkRank4(op, "dy", dy.shape, "N, outC, outH, outW");
    checkPairAttr(op, "filterSize", attrs.filterSize, 1);
    const g = attrs.groups;
    checkConvAttrs(op, attrs);
    const [N, C] = x.shape as [number, number];
    const O = dy.shape[1]!;
    if (!dimsCompatible(dy.shape[0]!, N)) throw new ShapeError(`x ${fmtShape(x.shape)} and dy ${fmtShape(dy.shape)} have different batch sizes`, op);
    if (C >= 0 && C % g !== 0) throw new ShapeError(`input x has shape ${fmtShape(x.shape)}: its ${C} channels are not divisible by groups=${g}`, op);
    const w = [O, C < 0 ? -1 : C / g, attrs.filterSize[0], attrs.filterSize[1]];
    const expected = conv2dShape(op, x.shape, w, attrs, "filter");
    if (!shapesCompatible(expected, dy.shape)) {
      throw new ShapeError(`dy has shape ${fmtShape(dy.shape)} but conv2d of x ${fmtShape(x.shape)} with a filter ${fmtShape(w)} gives ${fmtShape(expected)}`, op);
    }
    return [{ shape: w, dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, dy] = inputs as [Tensor, Tensor];
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    if (out.length > 0 && x.size > 0 && dy.size > 0) {
      const p = convParams(x.shape, dy.shape[1]!, attrs.filterSize[0], attrs.filterSize[1], dy.shape[2]!, dy.shape[3]!, attrs);
      convKernels.conv2dBackpropFilter(o.dtype as ConvDtype, x.concrete(), dy.concrete(), out, p);
    }
    return [out];
  },
  vjp(ctx, cts) {
    const [x, dy] = ctx.inputs as [Tensor, Tensor];
    const g = cts[0]!;
    const a = convOnly(ctx.attrs);
    const [kH, kW] = ctx.attrs.filterSize;
    return [
      applyOp1(conv2dTransposeOp, [dy, g], { ...a, outputPadding: leftover(x.shape, kH, kW, a) }),
      applyOp1(conv2dOp, [x, g], a),
    ];
  },
});

/** Converts x and w; a JS array meeting a tensor takes the tensor's dtype. */
function convInputs(op: string, x: TensorLike, w: TensorLike): [Tensor, Tensor] {
  const xt = x instanceof Tensor ? toTensor(x, op) : null;
  const wt = w instanceof Tensor ? toTensor(w, op) : null;
  const X = xt ?? toTensor(x, op, wt?.dtype);
  const Wt = wt ?? toTensor(w, op, X.dtype);
  return [X, Wt];
}

function convBaseAttrs(op: string, x: Tensor, w: Tensor, opts: Conv2dOptions, kernelHW: (w: Shape) => Pair, outHW?: Pair): Conv2dAttrs {
  checkRank4(op, "input x", x.shape, "N, C, H, W");
  checkRank4(op, "filter w", w.shape, op === "conv2d" ? "outC, inC/groups, kH, kW" : "inC, outC/groups, kH, kW");
  const strides = intPair(op, "strides", opts.strides ?? 1, 1);
  const dilations = intPair(op, "dilations", opts.dilations ?? 1, 1);
  const groups = opts.groups ?? 1;
  if (!isInt(groups) || groups < 1) throw new ValueError(`groups must be a positive integer, got ${String(groups)}`, op);
  const [kH, kW] = kernelHW(w.shape);
  const keff: Pair = [effective(kH, dilations[0]), effective(kW, dilations[1])];
  const pads = resolvePads(op, opts.padding, outHW ?? [x.shape[2]!, x.shape[3]!], keff, strides, x.shape);
  return { strides, pads, dilations, groups };
}

/**
 * 2-D convolution (cross-correlation, as in every ML library) of x [N, C, H, W] with
 * w [outC, C/groups, kH, kW] -> [N, outC, outH, outW]; no bias. float32 or float64.
 * padding "same" gives outH = ceil(H / stride) (TensorFlow's rule; any odd pixel goes after).
 */
export function conv2d(x: TensorLike, w: TensorLike, options: Conv2dOptions = {}): Tensor {
  checkOptions("conv2d", options, CONV2D_OPTIONS);
  const [X, W] = convInputs("conv2d", x, w);
  const attrs = convBaseAttrs("conv2d", X, W, options, (s) => [s[2]!, s[3]!]);
  return applyOp1(conv2dOp, [X, W], attrs);
}

/**
 * Transposed 2-D convolution (the gradient of conv2d with respect to its input; sometimes
 * called "deconvolution"): x [N, C, H, W] with w [C, outC/groups, kH, kW] (PyTorch's
 * ConvTranspose2d layout) -> [N, outC, outH, outW] with
 *   outH = (H - 1) * strideH - padTop - padBottom + dilationH * (kH - 1) + 1 + outputPaddingH.
 * `padding` is that of the forward conv2d being transposed (it crops the output). "same" gives
 * outH = H * strideH (TensorFlow's conv2d_transpose rule).
 */
export function conv2dTranspose(x: TensorLike, w: TensorLike, options: Conv2dTransposeOptions = {}): Tensor {
  const op = "conv2dTranspose";
  checkOptions(op, options, CONV2D_TRANSPOSE_OPTIONS);
  const [X, W] = convInputs(op, x, w);
  checkRank4(op, "input x", X.shape, "N, C, H, W");
  checkRank4(op, "filter w", W.shape, "inC, outC/groups, kH, kW");
  let outputPadding = intPair(op, "outputPadding", options.outputPadding ?? 0, 0);
  const strides = intPair(op, "strides", options.strides ?? 1, 1);
  let attrs: Conv2dAttrs;
  if (options.padding === "same") {
    if (options.outputPadding !== undefined && (outputPadding[0] !== 0 || outputPadding[1] !== 0)) {
      throw new ValueError(`outputPadding cannot be combined with padding "same" (which fixes the output size to input size * stride)`, op);
    }
    // The pads conv2d "same" would use on an input of H * stride (or, if the kernel is smaller
    // than the stride, the output padding that reaches that size).
    if (X.shape[2]! < 0 || X.shape[3]! < 0) throw unknownSizeError(op, `padding "same" (whose pads depend on the input's height and width)`, X.shape);
    const target: Pair = [X.shape[2]! * strides[0], X.shape[3]! * strides[1]];
    attrs = convBaseAttrs(op, X, W, options, (s) => [s[2]!, s[3]!], target);
    const dil = attrs.dilations;
    outputPadding = [0, 1].map((i) => Math.max(0, strides[i]! - effective(W.shape[2 + i]!, dil[i]!))) as Pair;
  } else {
    attrs = convBaseAttrs(op, X, W, options, (s) => [s[2]!, s[3]!]);
  }
  return applyOp1(conv2dTransposeOp, [X, W], { ...attrs, outputPadding });
}

// ---- pooling --------------------------------------------------------------------------------

export interface Pool2dAttrs {
  kernelSize: Pair;
  strides: Pair;
  /** Explicit padding [top, left, bottom, right]; each side smaller than the kernel. */
  pads: Pads;
}

export interface AvgPool2dGradAttrs extends Pool2dAttrs {
  /** [H, W] of the pooled input. */
  inputSize: Pair;
}

export interface Pool2dOptions {
  /** Window size (required). */
  kernelSize: number | readonly [number, number];
  /** Default: the kernel size (non-overlapping windows). */
  strides?: number | readonly [number, number];
  /** Default "valid". Padded positions never count (max ignores them; average excludes them from the count). */
  padding?: Padding2d;
}

const POOL2D_OPTIONS = optionKeys<Pool2dOptions>()("kernelSize", "strides", "padding");

/** Output shape of pooling x under attrs; validates everything. */
function poolShape(op: string, x: Shape, a: Pool2dAttrs): number[] {
  checkRank4(op, "input x", x, "N, C, H, W");
  checkPairAttr(op, "kernelSize", a.kernelSize, 1);
  checkPairAttr(op, "strides", a.strides, 1);
  checkPads(op, a.pads);
  const [N, C, H, W] = x as [number, number, number, number];
  const [kH, kW] = a.kernelSize;
  const p = a.pads;
  if (p[0] >= kH || p[2] >= kH || p[1] >= kW || p[3] >= kW) {
    throw new ValueError(`pads [top, left, bottom, right] = ${JSON.stringify(p)} must each be smaller than the kernel size ${JSON.stringify(a.kernelSize)}`, op);
  }
  checkSpatial(op, x);
  checkKernelFits(op, H, W, p, [kH, kW], x, `kernel ${kH}x${kW}`);
  return [N, C, windows(H, p[0], p[2], kH, a.strides[0]), windows(W, p[1], p[3], kW, a.strides[1])];
}

function poolParams(x: Shape, out: Shape, a: Pool2dAttrs): poolKernels.Pool2dParams {
  return {
    planes: x[0]! * x[1]!, inH: x[2]!, inW: x[3]!, outH: out[2]!, outW: out[3]!,
    kH: a.kernelSize[0], kW: a.kernelSize[1], strideH: a.strides[0], strideW: a.strides[1],
    padTop: a.pads[0], padLeft: a.pads[1],
  };
}

const poolOnly = (a: Pool2dAttrs): Pool2dAttrs => ({ kernelSize: a.kernelSize, strides: a.strides, pads: a.pads });

function checkFloat(op: string, what: string, t: TensorType): void {
  if (!isFloat(t.dtype)) throw new DtypeError(`${what} must be float32 or float64, got ${t.dtype}`, op);
}

/** Shape equality where an unknown dim (staging) matches any size. */
function shapesCompatible(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => dimsCompatible(d, b[i]!));
}

function checkSame(op: string, a: TensorType, b: TensorType, an: string, bn: string, expected: Shape): void {
  if (a.dtype !== b.dtype) throw new DtypeError(`${an} and ${bn} must have the same dtype, got ${a.dtype} and ${b.dtype}`, op);
  if (!shapesCompatible(b.shape, expected)) throw new ShapeError(`${bn} has shape ${fmtShape(b.shape)}, expected ${fmtShape(expected)} (from ${an} ${fmtShape(a.shape)})`, op);
}

export const maxPool2dOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2d",
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (x.dtype === "bool") throw new DtypeError(`does not accept bool inputs`, "maxPool2d");
    return [{ shape: poolShape("maxPool2d", x.shape, attrs), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    poolKernels.maxPool2d(x.concrete(), out, poolParams(x.shape, o.shape, attrs));
    return [out];
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    return [isFloat(x.dtype) ? applyOp1(maxPool2dGradOp, [x, cts[0]!], ctx.attrs) : null];
  },
});

/** The gradient of maxPool2d: dy [N, C, outH, outW] added at each window's argmax in x -> dx [N, C, H, W]. */
export const maxPool2dGradOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2dGrad",
  family: "nn",
  inputs: ["x", "dy"],
  infer(inputs, attrs) {
    const [x, dy] = inputs as [TensorType, TensorType];
    checkFloat("maxPool2dGrad", "x", x);
    checkSame("maxPool2dGrad", x, dy, "x", "dy", poolShape("maxPool2dGrad", x.shape, attrs));
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, dy] = inputs as [Tensor, Tensor];
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    poolKernels.maxPool2dScatter(x.concrete(), dy.concrete(), out, poolParams(x.shape, dy.shape, attrs));
    return [out];
  },
  // Piecewise constant in x (the argmax does not move under small changes); linear in dy.
  vjp(ctx, cts) {
    return [null, applyOp1(maxPool2dGradGradOp, [ctx.inputs[0]!, cts[0]!], ctx.attrs)];
  },
});

/** The adjoint of maxPool2dGrad in dy: g [N, C, H, W] read at each window's argmax in x -> [N, C, outH, outW]. */
export const maxPool2dGradGradOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2dGradGrad",
  family: "nn",
  inputs: ["x", "g"],
  infer(inputs, attrs) {
    const [x, g] = inputs as [TensorType, TensorType];
    checkFloat("maxPool2dGradGrad", "x", x);
    checkSame("maxPool2dGradGrad", x, g, "x", "g", x.shape);
    return [{ shape: poolShape("maxPool2dGradGrad", x.shape, attrs), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const [x, g] = inputs as [Tensor, Tensor];
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    poolKernels.maxPool2dGather(x.concrete(), g.concrete(), out, poolParams(x.shape, o.shape, attrs));
    return [out];
  },
  vjp(ctx, cts) {
    return [null, applyOp1(maxPool2dGradOp, [ctx.inputs[0]!, cts[0]!], ctx.attrs)];
  },
});

export const avgPool2dOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "avgPool2d",
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    checkFloat("avgPool2d", "x", x);
    return [{ shape: poolShape("avgPool2d", x.shape, attrs), dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    poolKernels.avgPool2d(x.concrete(), out, poolParams(x.shape, o.shape, attrs));
    return [out];
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    if (x.shape[2]! < 0 || x.shape[3]! < 0) throw unknownSizeError("avgPool2d", `the gradient (whose attributes hold the input's height and width)`, x.shape);
    return [applyOp1(avgPool2dGradOp, [cts[0]!], { ...poolOnly(ctx.attrs), inputSize: [x.shape[2]!, x.shape[3]!] })];
  },
});

/** The gradient of avgPool2d: each window's dy spread evenly over its (unpadded) elements. Linear; its VJP is avgPool2d. */
export const avgPool2dGradOp: OpDef<AvgPool2dGradAttrs> = defineOp<AvgPool2dGradAttrs>({
  name: "avgPool2dGrad",
  family: "nn",
  inputs: ["dy"],
  infer(inputs, attrs) {
    const op = "avgPool2dGrad";
    const dy = inputs[0]!;
    checkFloat(op, "dy", dy);
    checkRank4(op, "dy", dy.shape, "N, C, outH, outW");
    checkPairAttr(op, "inputSize", attrs.inputSize, 0);
    const xShape = [dy.shape[0]!, dy.shape[1]!, attrs.inputSize[0], attrs.inputSize[1]];
    const expected = poolShape(op, xShape, attrs);
    if (!shapesCompatible(expected, dy.shape)) {
      throw new ShapeError(`dy has shape ${fmtShape(dy.shape)}, but pooling an input of shape ${fmtShape(xShape)} gives ${fmtShape(expected)}`, op);
    }
    return [{ shape: xShape, dtype: dy.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const dy = inputs[0]!;
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    poolKernels.avgPool2dScatter(dy.concrete(), out, poolParams(o.shape, dy.shape, attrs));
    return [out];
  },
  vjp(ctx, cts) {
    return [applyOp1(avgPool2dOp, [cts[0]!], poolOnly(ctx.attrs))];
  },
});

function poolAttrs(op: string, x: Tensor, opts: Pool2dOptions): Pool2dAttrs {
  if (opts === null || typeof opts !== "object") throw new ValueError(`options { kernelSize, strides?, padding? } are required, got ${String(opts)}`, op);
  checkRank4(op, "input x", x.shape, "N, C, H, W");
  const kernelSize = intPair(op, "kernelSize", opts.kernelSize, 1);
  const strides = intPair(op, "strides", opts.strides ?? kernelSize, 1);
  const pads = resolvePads(op, opts.padding, [x.shape[2]!, x.shape[3]!], kernelSize, strides, x.shape);
  return { kernelSize, strides, pads };
}

/**
 * Max pooling over NCHW windows. Padded positions are ignored (never the max). A window
 * holding a NaN gives NaN. The gradient goes to the first (row-major) maximal element.
 */
export function maxPool2d(x: TensorLike, options: Pool2dOptions): Tensor {
  checkOptions("maxPool2d", options, POOL2D_OPTIONS);
  const t = toTensor(x, "maxPool2d");
  return applyOp1(maxPool2dOp, [t], poolAttrs("maxPool2d", t, options));
}

/**
 * Average pooling over NCHW windows (float32/float64). Padded positions are excluded from the
 * count: a window that overhangs the border averages only the elements inside the image
 * (PyTorch's count_include_pad=false, TensorFlow's "SAME" average pooling).
 */
export function avgPool2d(x: TensorLike, options: Pool2dOptions): Tensor {
  checkOptions("avgPool2d", options, POOL2D_OPTIONS);
  const t = toTensor(x, "avgPool2d");
  return applyOp1(avgPool2dOp, [t], poolAttrs("avgPool2d", t, options));
}

// ---- topK / sort / argsort ------------------------------------------------------------------

export interface TopKAttrs {
  k: number;
  sorted: boolean;
}

export interface SortAttrs {
  /** Normalized axis. */
  axis: number;
  descending: boolean;
}

export interface SortOptions {
  /** Default -1. */
  axis?: number;
  /** Default false. */
  descending?: boolean;
}
const SORT_OPTIONS = optionKeys<SortOptions>()("axis", "descending");

/**
 * Zeros of `shape` with `updates` placed at `indices` along `axis` (take-along-axis layout:
 * indices and updates have `shape` except along the axis; positions must be distinct per slice).
 * Expressed as one flat scatterAdd, so it is differentiable (its VJP is a gather).
 */
function scatterAlongAxis(op: string, updates: Tensor, indices: Tensor, axis: number, shape: Shape): Tensor {
  if (hasUnknownDims(shape)) return scatterAlongAxisOneHot(op, updates, indices, axis, shape);
  const [outer, n, inner] = splitAt(shape, axis);
  const m = indices.shape[axis]!;
  // flat position of each update: (o * n + indices[o, j, i]) * inner + i
  const base = add(reshape(mul(arange(outer), n * inner), [outer, 1, 1]), reshape(arange(inner), [1, 1, inner]));
  const flat = add(base, mul(reshape(cast(indices, "int32"), [outer, m, inner]), inner));
  const out = scatterAdd(full([sizeOf(shape)], 0, updates.dtype), reshape(flat, [-1]), reshape(updates, [-1]), 0);
  return reshape(out, shape);
}

/**
 * scatterAlongAxis without static sizes (for unknown dims while staging; only the size of `axis`
 * must be known): out[..., p] = sum over j of (indices[..., j] == p ? updates[..., j] : 0), with
 * the axis moved last, through a one-hot mask of the positions.
 */
function scatterAlongAxisOneHot(op: string, updates: Tensor, indices: Tensor, axis: number, shape: Shape): Tensor {
  const n = shape[axis]!;
  if (n < 0) throw unknownSizeError(op, `the gradient along axis ${axis}`, shape);
  const r = shape.length;
  const perm = Array.from({ length: r }, (_, i) => i).filter((i) => i !== axis);
  perm.push(axis);
  const inv = new Array<number>(r);
  perm.forEach((p, i) => (inv[p] = i));
  const idx = transpose(indices, perm);
  const upd = transpose(updates, perm);
  const mask = oneHot(idx, n, "bool"); // [..., m, n]
  const out = sum(where(mask, expandDims(upd, -1), 0), -2); // [..., n]
  return transpose(out, inv);
}

export const topKOp: OpDef<TopKAttrs> = defineOp<TopKAttrs>({
  name: "topK",
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (x.shape.length === 0) throw new ShapeError(`needs a tensor of rank >= 1, got a scalar`, "topK");
    const n = x.shape[x.shape.length - 1]!;
    if (!isInt(attrs.k) || attrs.k < 0) throw new ValueError(`k must be a non-negative integer, got ${String(attrs.k)}`, "topK");
    if (n >= 0 && attrs.k > n) throw new ShapeError(`k = ${attrs.k} is larger than the last dimension (${n}) of shape ${fmtShape(x.shape)}`, "topK");
    const shape = [...x.shape.slice(0, -1), attrs.k];
    return [{ shape, dtype: x.dtype }, { shape, dtype: "int32" }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const n = x.shape[x.shape.length - 1]!;
    const rows = n === 0 ? 0 : x.size / n;
    const values = allocStorage(outs[0]!.dtype, sizeOf(outs[0]!.shape));
    const indices = new Int32Array(sizeOf(outs[1]!.shape));
    if (attrs.k > 0) topKRows(x.concrete(), rows, n, attrs.k, attrs.sorted, values, indices);
    return [values, indices];
  },
  vjp(ctx, cts) {
    // dx[..., indices[..., j]] = dvalues[..., j]
    const x = ctx.inputs[0]!;
    return [scatterAlongAxis("topK", cts[0]!, ctx.outputs[1]!, x.rank - 1, x.shape)];
  },
});

export const sortOp: OpDef<SortAttrs> = defineOp<SortAttrs>({
  name: "sort",
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    normalizeAxis("sort", attrs.axis, x.shape.length);
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernel(inputs, attrs, outs) {
    const x = inputs[0]!;
    const values = allocStorage(outs[0]!.dtype, x.size);
    const [outer, n, inner] = splitAt(x.shape, attrs.axis);
    sortAxis(x.concrete(), outer, n, inner, attrs.descending, values, null);
    return [values];
  },
  vjp(ctx, cts) {
    // y[i] = x[perm[i]] along the axis, so dx[perm[i]] = dy[i].
    const x = ctx.inputs[0]!;
    const perm = applyOp1(argsortOp, [x], ctx.attrs);
    return [scatterAlongAxis("sort", cts[0]!, perm, ctx.attrs.axis, x.shape)];
  },
});

export const argsortOp: OpDef<SortAttrs> = defineOp<SortAttrs>({
  name: "argsort",
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    normalizeAxis("argsort", attrs.axis, x.shape.length);
    return [{ shape: x.shape, dtype: "int32" }];
  },
  kernel(inputs, attrs) {
    const x = inputs[0]!;
    const indices = new Int32Array(x.size);
    const [outer, n, inner] = splitAt(x.shape, attrs.axis);
    sortAxis(x.concrete(), outer, n, inner, attrs.descending, null, indices);
    return [indices];
  },
});

function sortAttrs(op: string, x: Tensor, opts: SortOptions): SortAttrs {
  if (opts === null || typeof opts !== "object") throw new ValueError(`options must be an object { axis?, descending? }, got ${String(opts)}`, op);
  const descending = opts.descending ?? false;
  if (typeof descending !== "boolean") throw new ValueError(`descending must be a boolean, got ${String(descending)}`, op);
  if (x.rank === 0) throw new ShapeError(`needs a tensor of rank >= 1, got a scalar`, op);
  return { axis: normalizeAxis(op, opts.axis ?? -1, x.rank), descending };
}

/**
 * The k largest entries along the last axis and their int32 indices, largest first
 * (sorted = false: in index order). NaN counts as smaller than every number (it sorts last);
 * among equal values the lower index comes first.
 */
export function topK(x: TensorLike, k: number, options: { sorted?: boolean } = {}): [Tensor, Tensor] {
  checkOptions("topK", options, ["sorted"]);
  const t = toTensor(x, "topK");
  const sorted = options.sorted ?? true;
  if (typeof sorted !== "boolean") throw new ValueError(`sorted must be a boolean, got ${String(sorted)}`, "topK");
  if (!isInt(k) || k < 0) throw new ValueError(`k must be a non-negative integer, got ${String(k)}`, "topK");
  const [values, indices] = applyOp(topKOp, [t], { k, sorted });
  return [values!, indices!];
}

/** Sorted values along `axis` (default -1), ascending unless `descending`. NaN sorts last either way; stable. */
export function sort(x: TensorLike, options: SortOptions = {}): Tensor {
  checkOptions("sort", options, SORT_OPTIONS);
  const t = toTensor(x, "sort");
  return applyOp1(sortOp, [t], sortAttrs("sort", t, options));
}

/** The int32 permutation that sorts along `axis` (stable: equal values keep index order; NaN last). Not differentiable. */
export function argsort(x: TensorLike, options: SortOptions = {}): Tensor {
  checkOptions("argsort", options, SORT_OPTIONS);
  const t = toTensor(x, "argsort");
  return applyOp1(argsortOp, [t], sortAttrs("argsort", t, options));
}

declare module "../core/tensor.js" {
  interface Tensor {
    softmax(axis?: number): Tensor;
    logSoftmax(axis?: number): Tensor;
    topK(k: number, options?: { sorted?: boolean }): [Tensor, Tensor];
    sort(options?: SortOptions): Tensor;
    argsort(options?: SortOptions): Tensor;
  }
}
installMethods({ softmax, logSoftmax, topK, sort, argsort });
