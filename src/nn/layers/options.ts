/** Options every layer with weights takes, and shared argument checks. */
import { DTYPES, isFloat, type DType } from "../../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../../core/errors.js";
import { checkOptions } from "../../core/options.js";
import type { Tensor } from "../../core/tensor.js";
import { glorotUniform, zeros, type Initializer } from "../init.js";

export interface WeightOptions {
  /** dtype of the weights (default float32). */
  dtype?: DType;
  /** Seed of the default initializers (weight k of the layer uses seed + k). */
  seed?: number;
  /** Include a bias (default true). */
  bias?: boolean;
  /** Initializer of the main weight (default Glorot uniform, as Keras). */
  kernelInit?: Initializer;
  /** Initializer of the bias (default zeros). */
  biasInit?: Initializer;
}

/** The kernel initializer: the given one, or Glorot uniform seeded with seed + k. */
export function kernelInitOf(o: WeightOptions, k = 0): Initializer {
  return o.kernelInit ?? glorotUniform(o.seed === undefined ? {} : { seed: o.seed + k });
}

export function biasInitOf(o: WeightOptions): Initializer {
  return o.biasInit ?? zeros();
}

/** A positive integer argument of a layer. */
export function positiveInt(layer: string, name: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw new ValueError(`${name} must be a positive integer, got ${String(v)}`, layer);
  return v;
}

/**
 * Checks a layer's options object: its keys (checkOptions), and its `dtype`, a float dtype (the
 * weights' initializers draw floats). Checked here, when the layer is made: a layer that builds
 * its weights on its first call would otherwise take any string until then.
 */
export function checkLayerOptions(layer: string, options: { dtype?: DType } | undefined, known: readonly string[]): void {
  checkOptions(layer, options, known);
  const dtype = options?.dtype;
  if (dtype !== undefined && !((DTYPES as readonly unknown[]).includes(dtype) && isFloat(dtype))) {
    throw new DtypeError(`dtype (of the weights) must be a float dtype (${DTYPES.filter(isFloat).join(", ")}), got ${JSON.stringify(dtype)}`, layer);
  }
}

export const WEIGHT_KEYS = ["dtype", "seed", "bias", "kernelInit", "biasInit"] as const;

/**
 * The size of `x`'s axis `axis`, which must be known and equal `expected` when that is given.
 * `option` names what gives the size up front when creating the layer ("the inFeatures option"),
 * the advice of the error when the size is unknown; without one, only the inputSignature can.
 */
export function axisSize(layer: string, x: Tensor, axis: number, what: string, expected?: number, option?: string): number {
  const a = axis < 0 ? x.rank + axis : axis;
  if (a < 0 || a >= x.rank) throw new ShapeError(`input of shape [${x.shape.join(", ")}] has no ${what} axis (${axis})`, layer);
  const d = x.shape[a]!;
  if (d < 0) {
    const advice = option === undefined ? "give it in the inputSignature" : `give it with ${option} when creating the layer, or in the inputSignature`;
    throw new ShapeError(`the ${what} size of the input is unknown (shape [${x.shape.join(", ")}]); ${advice}`, layer);
  }
  if (expected !== undefined && d !== expected) {
    throw new ShapeError(`expects ${expected} ${what} (axis ${axis}), got an input of shape [${x.shape.join(", ")}]`, layer);
  }
  return d;
}
