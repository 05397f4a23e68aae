/** Batch normalization (running statistics as Variables) and layer normalization. */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { add, div, maximum, mul, sub } from "../../ops/binary.js";
import { mean, variance } from "../../ops/reduce.js";
import { concat, dimSizeOp, reshape, split } from "../../ops/shape.js";
import { cast } from "../../ops/cast.js";
import { applyOp1 } from "../../ops/registry.js";
import { rsqrt } from "../../ops/unary.js";
import { stopGradient } from "../../ops/identity.js";
import { ones, zeros } from "../init.js";
import { Module } from "../module.js";
import { axisSize, positiveInt, checkLayerOptions } from "./options.js";
import type { DType } from "../../core/dtype.js";
import { recordConfig } from "../layer-config.js";

export interface BatchNormOptions {
  /** The channel axis (default 1: NCHW images, or [N, C] features). */
  axis?: number;
  /** Channels; without it they are read from the first input. */
  numFeatures?: number;
  /** Weight of the new batch in the running statistics (default 0.1, PyTorch's). */
  momentum?: number;
  /** Added to the variance (default 1e-5). */
  epsilon?: number;
  /** Learn a scale (gamma) and offset (beta) per channel (default true). */
  affine?: boolean;
  dtype?: DType;
}

/**
 * Batch normalization (Ioffe & Szegedy). In train mode it normalizes with the batch's mean and
 * (biased) variance over every axis but the channel axis, and updates the running statistics:
 *
 *     runningMean = (1 - momentum) * runningMean + momentum * mean
 *     runningVar  = (1 - momentum) * runningVar  + momentum * variance * n / (n - 1)
 *
 * (Variables assigned by the forward pass, so a staged training step updates them on every
 * call.) In eval mode it normalizes with the running statistics.
 */
export class BatchNorm extends Module {
  readonly axis: number;
  readonly momentum: number;
  readonly epsilon: number;
  readonly affine: boolean;
  numFeatures: number | undefined;
  gamma: Variable | null = null;
  beta: Variable | null = null;
  runningMean!: Variable;
  runningVar!: Variable;
  private readonly dtype: DType;

  constructor(options: BatchNormOptions = {}) {
    super();
    recordConfig(this, BatchNorm, [options]);
    checkLayerOptions("BatchNorm", options, ["axis", "numFeatures", "momentum", "epsilon", "affine", "dtype"]);
    this.axis = options.axis ?? 1;
    this.momentum = options.momentum ?? 0.1;
    if (!(this.momentum >= 0 && this.momentum <= 1)) throw new ValueError(`momentum must be in [0, 1], got ${this.momentum}`, "BatchNorm");
    this.epsilon = options.epsilon ?? 1e-5;
    if (!(this.epsilon > 0)) throw new ValueError(`epsilon must be > 0, got ${this.epsilon}`, "BatchNorm");
    this.affine = options.affine ?? true;
    this.dtype = options.dtype ?? "float32";
    this.numFeatures = options.numFeatures === undefined ? undefined : positiveInt("BatchNorm", "numFeatures", options.numFeatures);
    if (this.numFeatures !== undefined) this.makeWeights(this.numFeatures);
  }

  private makeWeights(c: number): void {
    const dtype = this.dtype;
    if (this.affine) {
      this.gamma = this.addWeight("gamma", [c], ones(), { dtype });
      this.beta = this.addWeight("beta", [c], zeros(), { dtype });
    }
    this.runningMean = this.addWeight("runningMean", [c], zeros(), { dtype, trainable: false });
    this.runningVar = this.addWeight("runningVar", [c], ones(), { dtype, trainable: false });
  }

  protected override build(x: Tensor): void {
    if (this.numFeatures === undefined) {
      this.numFeatures = axisSize("BatchNorm", x, this.axis, "channels", undefined, "the numFeatures option");
      this.makeWeights(this.numFeatures);
    }
  }

  forward(x: Tensor): Tensor {
    const c = this.numFeatures!;
    const axis = this.axis < 0 ? x.rank + this.axis : this.axis;
    axisSize("BatchNorm", x, axis, "channels", c);
    const reduceAxes = x.shape.map((_, i) => i).filter((i) => i !== axis);
    const bshape = x.shape.map((_, i) => (i === axis ? c : 1));
    let m: Tensor;
    let v: Tensor;
    if (this.training) {
      m = mean(x, reduceAxes, true);
      v = variance(x, reduceAxes, true);
      const k = this.momentum;
      const bm = stopGradient(reshape(m, [c]));
      const bv = stopGradient(reshape(v, [c]));
      this.runningMean.assign(add(mul(this.runningMean.peek(), 1 - k), mul(bm, k)));
      this.runningVar.assign(add(mul(this.runningVar.peek(), 1 - k), mul(bv, unbiasing(x, reduceAxes, k, bv.dtype))));
    } else {
      m = reshape(this.runningMean, bshape);
      v = reshape(this.runningVar, bshape);
    }
    let y = mul(sub(x, m), rsqrt(add(v, this.epsilon)));
    if (this.gamma && this.beta) y = add(mul(y, reshape(this.gamma, bshape)), reshape(this.beta, bshape));
    return y;
  }
}

/**
 * k n / max(n - 1, 1) for the n = product of `x`'s `axes` values averaged over: a number when
 * their sizes are known, else a scalar computed from the sizes when the graph runs.
 */
function unbiasing(x: Tensor, axes: number[], k: number, dtype: DType): number | Tensor {
  const known = axes.filter((i) => x.shape[i]! >= 0).reduce((p, i) => p * x.shape[i]!, 1);
  const unknown = axes.filter((i) => x.shape[i]! < 0);
  if (unknown.length === 0) return (k * known) / Math.max(known - 1, 1);
  const n = mul(cast(unknown.map((axis) => applyOp1(dimSizeOp, [x], { axis })).reduce((p, d) => mul(p, d)), dtype), known);
  return div(mul(n, k), maximum(sub(n, 1), 1));
}

export interface LayerNormOptions {
  /** Added to the variance (default 1e-5). */
  epsilon?: number;
  /** Learn a scale and offset per normalized element (default true). */
  affine?: boolean;
  dtype?: DType;
}

/**
 * Layer normalization (Ba et al.): normalizes over the last axes (`normalizedShape`, default:
 * the last axis of the first input) with their mean and biased variance, then scales and shifts.
 */
export class LayerNorm extends Module {
  normalizedShape: number[] | undefined;
  readonly epsilon: number;
  readonly affine: boolean;
  gamma: Variable | null = null;
  beta: Variable | null = null;
  private readonly dtype: DType;

  constructor(normalizedShape?: number | number[], options: LayerNormOptions = {}) {
    super();
    recordConfig(this, LayerNorm, [normalizedShape, options]);
    checkLayerOptions("LayerNorm", options, ["epsilon", "affine", "dtype"]);
    this.epsilon = options.epsilon ?? 1e-5;
    if (!(this.epsilon > 0)) throw new ValueError(`epsilon must be > 0, got ${this.epsilon}`, "LayerNorm");
    this.affine = options.affine ?? true;
    this.dtype = options.dtype ?? "float32";
    if (normalizedShape !== undefined) {
      const s = typeof normalizedShape === "number" ? [normalizedShape] : normalizedShape;
      this.normalizedShape = s.map((d) => positiveInt("LayerNorm", "normalizedShape", d));
      this.makeWeights(this.normalizedShape);
    }
  }

  private makeWeights(shape: number[]): void {
    if (!this.affine) return;
    this.gamma = this.addWeight("gamma", shape, ones(), { dtype: this.dtype });
    this.beta = this.addWeight("beta", shape, zeros(), { dtype: this.dtype });
  }

  protected override build(x: Tensor): void {
    if (this.normalizedShape === undefined) {
      this.normalizedShape = [axisSize("LayerNorm", x, -1, "features", undefined, "the normalizedShape argument")];
      this.makeWeights(this.normalizedShape);
    }
  }

  forward(x: Tensor): Tensor {
    const s = this.normalizedShape!;
    const tail = x.shape.slice(x.rank - s.length);
    if (x.rank < s.length || tail.some((d, i) => d !== s[i])) {
      throw new ValueError(`normalizes over trailing axes [${s.join(", ")}], got an input of shape [${x.shape.join(", ")}]`, "LayerNorm");
    }
    const axes = s.map((_, i) => x.rank - s.length + i);
    const y = mul(sub(x, mean(x, axes, true)), rsqrt(add(variance(x, axes, true), this.epsilon)));
    return this.gamma && this.beta ? add(mul(y, this.gamma), this.beta) : y;
  }
}

export interface GroupNormOptions {
  /** Added to the variance (default 1e-5). */
  epsilon?: number;
  /** Learn a scale and offset per channel (default true). */
  affine?: boolean;
  dtype?: DType;
}

/**
 * Group normalization (Wu & He; PyTorch's GroupNorm): the channels (axis 1) of x [N, C, ...] are
 * split into `numGroups` groups of C / numGroups; each sample's group is normalized with its mean
 * and biased variance, then scaled and shifted per channel. Independent of the batch, so train
 * and eval modes are the same.
 */
export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly epsilon: number;
  readonly affine: boolean;
  gamma: Variable | null = null;
  beta: Variable | null = null;

  constructor(numGroups: number, numChannels: number, options: GroupNormOptions = {}) {
    super();
    recordConfig(this, GroupNorm, [numGroups, numChannels, options]);
    checkLayerOptions("GroupNorm", options, ["epsilon", "affine", "dtype"]);
    this.numGroups = positiveInt("GroupNorm", "numGroups", numGroups);
    this.numChannels = positiveInt("GroupNorm", "numChannels", numChannels);
    if (numChannels % numGroups !== 0) throw new ValueError(`numChannels (${numChannels}) must be divisible by numGroups (${numGroups})`, "GroupNorm");
    this.epsilon = options.epsilon ?? 1e-5;
    if (!(this.epsilon > 0)) throw new ValueError(`epsilon must be > 0, got ${this.epsilon}`, "GroupNorm");
    this.affine = options.affine ?? true;
    if (this.affine) {
      const dtype = options.dtype ?? "float32";
      this.gamma = this.addWeight("gamma", [numChannels], ones(), { dtype });
      this.beta = this.addWeight("beta", [numChannels], zeros(), { dtype });
    }
  }

  forward(x: Tensor): Tensor {
    if (x.rank < 2) throw new ValueError(`expects [N, C, ...], got shape [${x.shape.join(", ")}]`, "GroupNorm");
    axisSize("GroupNorm", x, 1, "channels", this.numChannels);
    const g = this.numGroups;
    const rest = x.shape.slice(2);
    const norm = (t: Tensor): Tensor => {
      const axes = t.shape.map((_, i) => i).slice(1);
      return mul(sub(t, mean(t, axes, true)), rsqrt(add(variance(t, axes, true), this.epsilon)));
    };
    let y: Tensor;
    if (rest.every((d) => d >= 0)) {
      // [N, G, C/G, ...] (only the batch may be unknown: one reshape infers it)
      const grouped = reshape(x, [x.shape[0]!, g, this.numChannels / g, ...rest]);
      const axes = grouped.shape.map((_, i) => i).slice(2);
      const ng = mul(sub(grouped, mean(grouped, axes, true)), rsqrt(add(variance(grouped, axes, true), this.epsilon)));
      y = reshape(ng, [x.shape[0]!, this.numChannels, ...rest]);
    } else {
      // unknown spatial sizes too: normalize each group's slice of the channels apiece
      y = g === 1 ? norm(x) : concat(split(x, g, 1).map(norm), 1);
    }
    if (this.gamma && this.beta) {
      const bshape = x.shape.map((_, i) => (i === 1 ? this.numChannels : 1));
      y = add(mul(y, reshape(this.gamma, bshape)), reshape(this.beta, bshape));
    }
    return y;
  }
}
