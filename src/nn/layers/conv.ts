/** 2-D convolution and pooling layers over NCHW inputs. */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { add } from "../../ops/binary.js";
import { avgPool2d, conv2d, maxPool2d, type Pool2dOptions, type Padding2d } from "../../ops/nn.js";
import { reshape } from "../../ops/shape.js";
import { Module } from "../module.js";
import { axisSize, biasInitOf, kernelInitOf, positiveInt, WEIGHT_KEYS, type WeightOptions, checkLayerOptions } from "./options.js";
import { checkOptions } from "../../core/options.js";

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
  }
  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.options);
  }
}

/** Average pooling over NCHW windows (padded positions excluded from the count). */
export class AvgPool2d extends Pool2d {
  constructor(kernelSize: Pair, options: Omit<Pool2dOptions, "kernelSize"> = {}) {
    super("AvgPool2d", kernelSize, options);
  }
  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.options);
  }
}
