/** Pooling: maxPool2d and avgPool2d, with their gradient ops (maxPool2dGrad, maxPool2dGradGrad, avgPool2dGrad). */
import { allocStorage, isFloat } from "../../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape, sizeOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import * as poolKernels from "../../backends/cpu/pool.js";
import { applyOp1, defineOp, type OpDef, type TensorType } from "../registry.js";
import { toTensor } from "../convert.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { type Pair, type Pads, intPair, checkRank4, checkSpatial, windows, unknownSizeError, resolvePads, checkPads, checkPairAttr, checkKernelFits, shapesCompatible, type Padding2d } from "./window.js";
import { mathGpu } from "../../backends/webgpu/op-kernels/math.js";
import { mergeBatch, perExample } from "../batching.js";

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
function checkSame(op: string, a: TensorType, b: TensorType, an: string, bn: string, expected: Shape): void {
  if (a.dtype !== b.dtype) throw new DtypeError(`${an} and ${bn} must have the same dtype, got ${a.dtype} and ${b.dtype}`, op);
  if (!shapesCompatible(b.shape, expected)) throw new ShapeError(`${bn} has shape ${fmtShape(b.shape)}, expected ${fmtShape(expected)} (from ${an} ${fmtShape(a.shape)})`, op);
}

export const maxPool2dOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2d",
  batch: mergeBatch([0]),
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (x.dtype === "bool") throw new DtypeError(`does not accept bool inputs`, "maxPool2d");
    return [{ shape: poolShape("maxPool2d", x.shape, attrs), dtype: x.dtype }];
  },
  kernels: {
    webgpu: mathGpu.maxPool2d,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      poolKernels.maxPool2d(x.concrete(), out, poolParams(x.shape, o.shape, attrs));
      return [out];
    },
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    return [isFloat(x.dtype) ? applyOp1(maxPool2dGradOp, [x, cts[0]!], ctx.attrs) : null];
  },
});

/** The gradient of maxPool2d: dy [N, C, outH, outW] added at each window's argmax in x -> dx [N, C, H, W]. */
export const maxPool2dGradOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2dGrad",
  batch: perExample,
  family: "nn",
  inputs: ["x", "dy"],
  infer(inputs, attrs) {
    const [x, dy] = inputs as [TensorType, TensorType];
    checkFloat("maxPool2dGrad", "x", x);
    checkSame("maxPool2dGrad", x, dy, "x", "dy", poolShape("maxPool2dGrad", x.shape, attrs));
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: mathGpu.maxPool2dGrad,
    cpu(inputs, attrs, outs) {
      const [x, dy] = inputs as [Tensor, Tensor];
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      poolKernels.maxPool2dScatter(x.concrete(), dy.concrete(), out, poolParams(x.shape, dy.shape, attrs));
      return [out];
    },
  },
  // Piecewise constant in x (the argmax does not move under small changes); linear in dy.
  vjp(ctx, cts) {
    return [null, applyOp1(maxPool2dGradGradOp, [ctx.inputs[0]!, cts[0]!], ctx.attrs)];
  },
});

/** The adjoint of maxPool2dGrad in dy: g [N, C, H, W] read at each window's argmax in x -> [N, C, outH, outW]. */
export const maxPool2dGradGradOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "maxPool2dGradGrad",
  batch: perExample,
  family: "nn",
  inputs: ["x", "g"],
  infer(inputs, attrs) {
    const [x, g] = inputs as [TensorType, TensorType];
    checkFloat("maxPool2dGradGrad", "x", x);
    checkSame("maxPool2dGradGrad", x, g, "x", "g", x.shape);
    return [{ shape: poolShape("maxPool2dGradGrad", x.shape, attrs), dtype: x.dtype }];
  },
  kernels: {
    webgpu: mathGpu.maxPool2dGradGrad,
    cpu(inputs, attrs, outs) {
      const [x, g] = inputs as [Tensor, Tensor];
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      poolKernels.maxPool2dGather(x.concrete(), g.concrete(), out, poolParams(x.shape, o.shape, attrs));
      return [out];
    },
  },
  vjp(ctx, cts) {
    return [null, applyOp1(maxPool2dGradOp, [ctx.inputs[0]!, cts[0]!], ctx.attrs)];
  },
});

export const avgPool2dOp: OpDef<Pool2dAttrs> = defineOp<Pool2dAttrs>({
  name: "avgPool2d",
  batch: mergeBatch([0]),
  family: "nn",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    checkFloat("avgPool2d", "x", x);
    return [{ shape: poolShape("avgPool2d", x.shape, attrs), dtype: x.dtype }];
  },
  kernels: {
    webgpu: mathGpu.avgPool2d,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      poolKernels.avgPool2d(x.concrete(), out, poolParams(x.shape, o.shape, attrs));
      return [out];
    },
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
  batch: perExample,
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
  kernels: {
    webgpu: mathGpu.avgPool2dGrad,
    cpu(inputs, attrs, outs) {
      const dy = inputs[0]!;
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      poolKernels.avgPool2dScatter(dy.concrete(), out, poolParams(o.shape, dy.shape, attrs));
      return [out];
    },
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
