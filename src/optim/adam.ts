/** Adam (Kingma & Ba, 2015), with optional AMSGrad; AdamW is Adam with decoupled weight decay. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { add, div, maximum, mul, pow, sub } from "../ops/binary.js";
import { sqrt, square } from "../ops/unary.js";
import { checkHyper, Optimizer, type OptimizerOptions, type StepValues } from "./optimizer.js";
import { decayed } from "./weight-decay.js";
import { checkOptions, optionKeys } from "../core/options.js";

export interface AdamOptions extends OptimizerOptions {
  /** Default 0.001. */
  learningRate?: OptimizerOptions["learningRate"];
  /** Decay of the first-moment estimate, in [0, 1). Default 0.9. */
  beta1?: number;
  /** Decay of the second-moment estimate, in [0, 1). Default 0.999. */
  beta2?: number;
  /** Added to the denominator, > 0. Default 1e-8 (the paper's; Keras uses 1e-7). */
  epsilon?: number;
  /**
   * Decoupled weight decay (AdamW, Loshchilov & Hutter): each step first does
   * `w -= lr * weightDecay * w`. Default 0 for Adam, 0.01 for AdamW.
   */
  weightDecay?: number;
  /** Use the running maximum of the second moment (AMSGrad). Default false. */
  amsgrad?: boolean;
}

const ADAM_KEYS = optionKeys<AdamOptions>()("learningRate", "clipNorm", "beta1", "beta2", "epsilon", "weightDecay", "amsgrad");

/**
 * Adam, as in Algorithm 1 of the paper. With gradient g, step t (1-based: the optimizer's
 * `iterations` after the increment), slots m and v (zeros at first):
 *
 *     m = beta1 * m + (1 - beta1) * g
 *     v = beta2 * v + (1 - beta2) * g^2
 *     w -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
 *
 * epsilon is added to the bias-corrected sqrt(v̂), as in the paper, PyTorch and optax.
 * With weightDecay > 0 this is AdamW: `w *= 1 - lr * weightDecay` before the Adam update.
 * With amsgrad, v̂ uses the running maximum of v (slot "vMax").
 */
export class Adam extends Optimizer {
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
  readonly amsgrad: boolean;
  readonly slotNames: readonly string[];

  constructor(options: AdamOptions = {}, name = "Adam", defaultWeightDecay = 0) {
    checkOptions(name, options, ADAM_KEYS);
    super(name, options, 0.001);
    this.beta1 = checkHyper(name, "beta1", options.beta1 ?? 0.9, 0, 1, false, true);
    this.beta2 = checkHyper(name, "beta2", options.beta2 ?? 0.999, 0, 1, false, true);
    this.epsilon = checkHyper(name, "epsilon", options.epsilon ?? 1e-8, 0, Infinity, true);
    this.weightDecay = checkHyper(name, "weightDecay", options.weightDecay ?? defaultWeightDecay, 0, Infinity);
    this.amsgrad = options.amsgrad ?? false;
    this.slotNames = this.amsgrad ? ["m", "v", "vMax"] : ["m", "v"];
  }

  protected updateOne(variable: Variable, value: Tensor, grad: Tensor, { lr, t }: StepValues): Tensor {
    const { beta1, beta2 } = this;
    const m = add(mul(this.slot(variable, "m"), beta1), mul(grad, 1 - beta1));
    const v = add(mul(this.slot(variable, "v"), beta2), mul(square(grad), 1 - beta2));
    this.setSlot(variable, "m", m);
    this.setSlot(variable, "v", v);
    let vUsed = v;
    if (this.amsgrad) {
      vUsed = maximum(this.slot(variable, "vMax"), v);
      this.setSlot(variable, "vMax", vUsed);
    }
    // Bias corrections from the step tensor: 1 - beta^t.
    const bc1 = sub(1, pow(beta1, t));
    const bc2 = sub(1, pow(beta2, t));
    const denom = add(sqrt(div(vUsed, bc2)), this.epsilon);
    return sub(decayed(value, lr, this.weightDecay), mul(div(div(m, bc1), denom), lr));
  }
}

/** AdamW: Adam with decoupled weight decay, default weightDecay 0.01 (as PyTorch). */
export class AdamW extends Adam {
  constructor(options: AdamOptions = {}) {
    super(options, "AdamW", 0.01);
  }
}

/** `new Adam(options)` as a function. */
export const adam = (options: AdamOptions = {}): Adam => new Adam(options);
/** `new AdamW(options)` as a function. */
export const adamw = (options: AdamOptions = {}): AdamW => new AdamW(options);
