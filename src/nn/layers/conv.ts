/** 2-D convolution and pooling layers over NCHW inputs. */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { add } from "../../ops/binary.js";
import { avgPool2d, conv2d, conv2dTranspose, maxPool2d, type Pool2dOptions, type Padding2d } from "../../ops/nn.js";
import { expandDims, reshape, squeeze } from "../../ops/shape.js";
import { Module } from "../module.js";
import { axisSize, biasInitOf, kernelInitOf, positiveInt, WEIGHT_KEYS, type WeightOptions, checkLayerOptions } from "./options.js";
import { checkOptions } from "../../core/options.js";
import { recordConfig } from "../layer-config.js";

type Pair = number | readonly [number, number];

export interface Conv2dLayerOptions extends WeightOptions {
  /** Input channels; without it they are read from the first input (the layer builds lazily). */
  inChannels?: number;
  /** Default 1. */
  strides?: Pair;
  /** "valid" (default), "same", or explicit pads as the conv2d op takes them. */
  padding?: Padding2d;
  /** Default 1. */
  dilations?: Pair;
  /** Default 1. */
  groups?: number;
}

function pairOf(layer: string, name: string, v: Pair): [number, number] {
  const p = typeof v === "number" ? [v, v] : v;
  if (!Array.isArray(p) || p.length !== 2) throw new ValueError(`${name} must be a number or a pair, got ${String(v)}`, layer);
  return [positiveInt(layer, name, p[0]), positiveInt(layer, name, p[1])];
}

/**
 * y = conv2d(x, kernel) + bias: x [N, inChannels, H, W], kernel [filters, inChannels / groups,
 * kH, kW] (the conv2d op's layout, PyTorch's), bias [filters].
 */
export class Conv2d extends Module {
  readonly filters: number;
  readonly kernelSize: [number, number];
  inChannels: number | undefined;
  kernel!: Variable;
  bias: Variable | null = null;
  private readonly options: Conv2dLayerOptions;

  constructor(filters: number, kernelSize: Pair, options: Conv2dLayerOptions = {}) {
    super();
    recordConfig(this, Conv2d, [filters, kernelSize, options]);
    checkLayerOptions("Conv2d", options, [...WEIGHT_KEYS, "inChannels", "strides", "padding", "dilations", "groups"]);
    this.filters = positiveInt("Conv2d", "filters", filters);
    this.kernelSize = pairOf("Conv2d", "kernelSize", kernelSize);
    this.options = options;
    const groups = positiveInt("Conv2d", "groups", options.groups ?? 1);
    if (filters % groups !== 0) throw new ValueError(`filters (${filters}) must be divisible by groups (${groups})`, "Conv2d");
    this.inChannels = options.inChannels === undefined ? undefined : positiveInt("Conv2d", "inChannels", options.inChannels);
    if (this.inChannels !== undefined) this.makeWeights(this.inChannels);
  }

  private makeWeights(inChannels: number): void {
    const o = this.options;
    const groups = o.groups ?? 1;
    if (inChannels % groups !== 0) throw new ValueError(`input channels (${inChannels}) must be divisible by groups (${groups})`, "Conv2d");
    const [kH, kW] = this.kernelSize;
    this.kernel = this.addWeight("kernel", [this.filters, inChannels / groups, kH, kW], kernelInitOf(o), { dtype: o.dtype });
    if (o.bias !== false) this.bias = this.addWeight("bias", [this.filters], biasInitOf(o), { dtype: o.dtype, fanIn: (inChannels / groups) * kH * kW, fanOut: this.filters * kH * kW });
  }

  protected override build(x: Tensor): void {
    if (this.inChannels === undefined) {
      this.inChannels = axisSize("Conv2d", x, 1, "channels", undefined, "the inChannels option");
      this.makeWeights(this.inChannels);
    }
  }

  forward(x: Tensor): Tensor {
    if (x.rank !== 4) throw new ValueError(`expects an NCHW input of rank 4, got shape [${x.shape.join(", ")}]`, "Conv2d");
    axisSize("Conv2d", x, 1, "channels", this.inChannels);
    const { strides, padding, dilations, groups } = this.options;
    const y = conv2d(x, this.kernel, { strides, padding, dilations, groups });
    return this.bias ? add(y, reshape(this.bias, [this.filters, 1, 1])) : y;
  }
}

export interface Conv1dLayerOptions extends WeightOptions {
  /** Input channels; without it they are read from the first input (the layer builds lazily). */
  inChannels?: number;
  /** Default 1. */
  strides?: number;
  /** "valid" (default), "same", a number of zeros on both sides, or [left, right]. */
  padding?: "valid" | "same" | number | readonly [number, number];
  /** Default 1. */
  dilations?: number;
  /** Default 1. */
  groups?: number;
}

/** A Conv1d padding as the conv2d op's pads over a height of 1. */
function pads1d(padding: Conv1dLayerOptions["padding"]): Padding2d {
  if (padding === undefined || padding === "valid" || padding === "same") return padding ?? "valid";
  if (typeof padding === "number") return [[0, 0], [padding, padding]];
  if (Array.isArray(padding) && padding.length === 2) return [[0, 0], [padding[0], padding[1]]];
  throw new ValueError(`padding must be "valid", "same", a number or [left, right], got ${JSON.stringify(padding)}`, "Conv1d");
}

/**
 * y = conv1d(x, kernel) + bias over [N, inChannels, L] (PyTorch's layout): kernel [filters,
 * inChannels / groups, k], bias [filters]. Computed as a conv2d over a height of 1 (ONNX: one Conv).
 */
export class Conv1d extends Module {
  readonly filters: number;
  readonly kernelSize: number;
  inChannels: number | undefined;
  kernel!: Variable;
  bias: Variable | null = null;
  readonly options: Conv1dLayerOptions;
  private readonly pads: Padding2d;

  constructor(filters: number, kernelSize: number, options: Conv1dLayerOptions = {}) {
    super();
    recordConfig(this, Conv1d, [filters, kernelSize, options]);
    checkLayerOptions("Conv1d", options, [...WEIGHT_KEYS, "inChannels", "strides", "padding", "dilations", "groups"]);
    this.filters = positiveInt("Conv1d", "filters", filters);
    this.kernelSize = positiveInt("Conv1d", "kernelSize", kernelSize);
    for (const k of ["strides", "dilations", "groups"] as const) if (options[k] !== undefined) positiveInt("Conv1d", k, options[k]);
    this.pads = pads1d(options.padding);
    this.options = options;
    const groups = options.groups ?? 1;
    if (filters % groups !== 0) throw new ValueError(`filters (${filters}) must be divisible by groups (${groups})`, "Conv1d");
    this.inChannels = options.inChannels === undefined ? undefined : positiveInt("Conv1d", "inChannels", options.inChannels);
    if (this.inChannels !== undefined) this.makeWeights(this.inChannels);
  }

  private makeWeights(inChannels: number): void {
    const o = this.options;
    const groups = o.groups ?? 1;
    if (inChannels % groups !== 0) throw new ValueError(`input channels (${inChannels}) must be divisible by groups (${groups})`, "Conv1d");
    const k = this.kernelSize;
    this.kernel = this.addWeight("kernel", [this.filters, inChannels / groups, k], kernelInitOf(o), { dtype: o.dtype, fanIn: (inChannels / groups) * k, fanOut: this.filters * k });
    if (o.bias !== false) this.bias = this.addWeight("bias", [this.filters], biasInitOf(o), { dtype: o.dtype, fanIn: (inChannels / groups) * k, fanOut: this.filters * k });
  }

  protected override build(x: Tensor): void {
    if (this.inChannels === undefined) {
      this.inChannels = axisSize("Conv1d", x, 1, "channels", undefined, "the inChannels option");
      this.makeWeights(this.inChannels);
    }
  }

  forward(x: Tensor): Tensor {
    if (x.rank !== 3) throw new ValueError(`expects an [N, C, L] input of rank 3, got shape [${x.shape.join(", ")}]`, "Conv1d");
    axisSize("Conv1d", x, 1, "channels", this.inChannels);
    const { strides, dilations, groups } = this.options;
    const y = squeeze(conv2d(expandDims(x, 2), expandDims(this.kernel, 2), { strides: [1, strides ?? 1], padding: this.pads, dilations: [1, dilations ?? 1], groups }), 2);
    return this.bias ? add(y, reshape(this.bias, [this.filters, 1])) : y;
  }
}

export interface ConvTranspose2dLayerOptions extends WeightOptions {
  /** Input channels; without it they are read from the first input (the layer builds lazily). */
  inChannels?: number;
  /** Default 1. */
  strides?: Pair;
  /** The padding of the conv2d being transposed (it crops the output): "valid" (default), "same" (output = input * stride), or pads. */
  padding?: Padding2d;
  /** Extra rows/columns added at the end of the output (PyTorch's output_padding; default 0). */
  outputPadding?: number | readonly [number, number];
  /** Default 1. */
  dilations?: Pair;
  /** Default 1. */
  groups?: number;
}

/**
 * Transposed 2-D convolution (PyTorch's ConvTranspose2d): x [N, inChannels, H, W], kernel
 * [inChannels, filters / groups, kH, kW], bias [filters]; output height
 * (H - 1) * stride - pads + dilation * (kH - 1) + 1 + outputPadding.
 */
export class ConvTranspose2d extends Module {
  readonly filters: number;
  readonly kernelSize: [number, number];
  inChannels: number | undefined;
  kernel!: Variable;
  bias: Variable | null = null;
  readonly options: ConvTranspose2dLayerOptions;

  constructor(filters: number, kernelSize: Pair, options: ConvTranspose2dLayerOptions = {}) {
    super();
    recordConfig(this, ConvTranspose2d, [filters, kernelSize, options]);
    checkLayerOptions("ConvTranspose2d", options, [...WEIGHT_KEYS, "inChannels", "strides", "padding", "outputPadding", "dilations", "groups"]);
    this.filters = positiveInt("ConvTranspose2d", "filters", filters);
    this.kernelSize = pairOf("ConvTranspose2d", "kernelSize", kernelSize);
    this.options = options;
    const groups = positiveInt("ConvTranspose2d", "groups", options.groups ?? 1);
    if (filters % groups !== 0) throw new ValueError(`filters (${filters}) must be divisible by groups (${groups})`, "ConvTranspose2d");
    this.inChannels = options.inChannels === undefined ? undefined : positiveInt("ConvTranspose2d", "inChannels", options.inChannels);
    if (this.inChannels !== undefined) this.makeWeights(this.inChannels);
  }

  private makeWeights(inChannels: number): void {
    const o = this.options;
    const groups = o.groups ?? 1;
    if (inChannels % groups !== 0) throw new ValueError(`input channels (${inChannels}) must be divisible by groups (${groups})`, "ConvTranspose2d");
    const [kH, kW] = this.kernelSize;
    const fans = { fanIn: (this.filters / groups) * kH * kW, fanOut: (inChannels / groups) * kH * kW };
    this.kernel = this.addWeight("kernel", [inChannels, this.filters / groups, kH, kW], kernelInitOf(o), { dtype: o.dtype, ...fans });
    if (o.bias !== false) this.bias = this.addWeight("bias", [this.filters], biasInitOf(o), { dtype: o.dtype, ...fans });
  }

  protected override build(x: Tensor): void {
    if (this.inChannels === undefined) {
      this.inChannels = axisSize("ConvTranspose2d", x, 1, "channels", undefined, "the inChannels option");
      this.makeWeights(this.inChannels);
    }
  }

  forward(x: Tensor): Tensor {
    if (x.rank !== 4) throw new ValueError(`expects an NCHW input of rank 4, got shape [${x.shape.join(", ")}]`, "ConvTranspose2d");
    axisSize("ConvTranspose2d", x, 1, "channels", this.inChannels);
    const { strides, padding, outputPadding, dilations, groups } = this.options;
    const y = conv2dTranspose(x, this.kernel, { strides, padding, outputPadding, dilations, groups });
    return this.bias ? add(y, reshape(this.bias, [this.filters, 1, 1])) : y;
  }
}

/** Pooling over NCHW windows (strides default to the window). */
abstract class Pool2d extends Module {
  readonly options: Pool2dOptions;
  constructor(layer: string, kernelSize: Pair, options: Omit<Pool2dOptions, "kernelSize">) {
    super();
    checkOptions(layer, options, ["strides", "padding"]);
    this.options = { kernelSize, ...options };
  }
}

/** Max pooling over NCHW windows (strides default to the window). */
export class MaxPool2d extends Pool2d {
  constructor(kernelSize: Pair, options: Omit<Pool2dOptions, "kernelSize"> = {}) {
    super("MaxPool2d", kernelSize, options);
    recordConfig(this, MaxPool2d, [kernelSize, options]);
  }
  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.options);
  }
}

/** Average pooling over NCHW windows (padded positions excluded from the count). */
export class AvgPool2d extends Pool2d {
  constructor(kernelSize: Pair, options: Omit<Pool2dOptions, "kernelSize"> = {}) {
    super("AvgPool2d", kernelSize, options);
    recordConfig(this, AvgPool2d, [kernelSize, options]);
  }
  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.options);
  }
}
