/** Convolution: conv2d, conv2dTranspose and the gradient op conv2dBackpropFilter. */
import { allocStorage, isFloat } from "../../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../../core/errors.js";
import { dimsCompatible, fmtShape, sizeOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import * as convKernels from "../../backends/cpu/conv.js";
import { applyOp1, defineOp, needsCotangent, type OpDef, type TensorType } from "../registry.js";
import { toTensor } from "../convert.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { type Pair, type Pads, isInt, intPair, checkRank4, checkSpatial, effective, windows, unknownSizeError, resolvePads, checkPads, checkPairAttr, checkKernelFits, shapesCompatible, type Padding2d } from "./window.js";
import { mathGpu } from "../../backends/webgpu/op-kernels/math.js";
import { mergeBatch, perExample } from "../batching.js";

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
  batch: mergeBatch([0]),
  family: "nn",
  inputs: ["x", "w"],
  infer(inputs, attrs) {
    const [x, w] = inputs as [TensorType, TensorType];
    const dtype = checkConvDtypes("conv2d", x, w, "x", "w");
    return [{ shape: conv2dShape("conv2d", x.shape, w.shape, attrs), dtype }];
  },
  kernels: {
    webgpu: mathGpu.conv2d,
    cpu(inputs, attrs, outs) {
      const [x, w] = inputs as [Tensor, Tensor];
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      if (out.length > 0 && x.size > 0 && w.size > 0) {
        const [, O, oH, oW] = o.shape as [number, number, number, number];
        convKernels.conv2d(o.dtype as ConvDtype, x.concrete(), w.concrete(), out, convParams(x.shape, O, w.shape[2]!, w.shape[3]!, oH, oW, attrs));
      }
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [x, w] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    const a = convOnly(ctx.attrs);
    const [kH, kW] = filterSizeOf("conv2d", w.shape);
    return [
      needsCotangent(ctx, 0) ? applyOp1(conv2dTransposeOp, [dy, w], { ...a, outputPadding: leftover(x.shape, kH, kW, a) }) : null,
      needsCotangent(ctx, 1) ? applyOp1(conv2dBackpropFilterOp, [x, dy], { ...a, filterSize: [kH, kW] }) : null,
    ];
  },
});

export const conv2dTransposeOp: OpDef<Conv2dTransposeAttrs> = defineOp<Conv2dTransposeAttrs>({
  name: "conv2dTranspose",
  batch: mergeBatch([0]),
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
  kernels: {
    webgpu: mathGpu.conv2dTranspose,
    cpu(inputs, attrs, outs) {
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
  },
  vjp(ctx, cts) {
    const [x, w] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    const a = convOnly(ctx.attrs);
    return [
      needsCotangent(ctx, 0) ? applyOp1(conv2dOp, [dy, w], a) : null,
      needsCotangent(ctx, 1) ? applyOp1(conv2dBackpropFilterOp, [dy, x], { ...a, filterSize: filterSizeOf("conv2dTranspose", w.shape) }) : null,
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
  batch: perExample,
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
  kernels: {
    webgpu: mathGpu.conv2dBackpropFilter,
    cpu(inputs, attrs, outs) {
      const [x, dy] = inputs as [Tensor, Tensor];
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      if (out.length > 0 && x.size > 0 && dy.size > 0) {
        const p = convParams(x.shape, dy.shape[1]!, attrs.filterSize[0], attrs.filterSize[1], dy.shape[2]!, dy.shape[3]!, attrs);
        convKernels.conv2dBackpropFilter(o.dtype as ConvDtype, x.concrete(), dy.concrete(), out, p);
      }
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [x, dy] = ctx.inputs as [Tensor, Tensor];
    const g = cts[0]!;
    const a = convOnly(ctx.attrs);
    const [kH, kW] = ctx.attrs.filterSize;
    return [
      needsCotangent(ctx, 0) ? applyOp1(conv2dTransposeOp, [dy, g], { ...a, outputPadding: leftover(x.shape, kH, kW, a) }) : null,
      needsCotangent(ctx, 1) ? applyOp1(conv2dOp, [x, g], a) : null,
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
