/** Stochastic gradient descent, with optional (Nesterov) momentum and decoupled weight decay. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { ValueError } from "../core/errors.js";
import { add, mul, sub } from "../ops/binary.js";
import { checkHyper, Optimizer, type OptimizerOptions, type StepValues } from "./optimizer.js";
import { decayed } from "./weight-decay.js";
import { checkOptions, optionKeys } from "../core/options.js";

export interface SGDOptions extends OptimizerOptions {
  /** Default 0.01. */
  learningRate?: OptimizerOptions["learningRate"];
  /** Momentum coefficient in [0, 1); 0 (the default) is plain SGD and keeps no slot. */
  momentum?: number;
  /** Nesterov momentum (needs momentum > 0). Default false. */
  nesterov?: boolean;
  /** Decoupled weight decay: each step also does `w -= lr * weightDecay * w`. Default 0. */
  weightDecay?: number;
}

/**
 * SGD. With gradient g, learning rate lr and velocity slot `velocity` (zeros at first):
 *
 *     velocity = momentum * velocity + g
 *     w -= lr * (nesterov ? g + momentum * velocity : velocity)      (momentum > 0)
 *     w -= lr * g                                                    (momentum = 0)
 *
 * (PyTorch's formulation; for a constant learning rate it equals Keras's
 * `velocity = momentum * velocity - lr * g; w += velocity`.) Weight decay is decoupled:
 * `w *= 1 - lr * weightDecay` before the update.
 */
export class SGD extends Optimizer {
  readonly momentum: number;
  readonly nesterov: boolean;
  readonly weightDecay: number;
  readonly slotNames: readonly string[];

  constructor(options: SGDOptions = {}) {
    checkOptions("SGD", options, optionKeys<SGDOptions>()("learningRate", "clipNorm", "momentum", "nesterov", "weightDecay"));
    super("SGD", options, 0.01);
    this.momentum = checkHyper("SGD", "momentum", options.momentum ?? 0, 0, 1, false, true);
    this.nesterov = options.nesterov ?? false;
    this.weightDecay = checkHyper("SGD", "weightDecay", options.weightDecay ?? 0, 0, Infinity);
    if (this.nesterov && this.momentum === 0) {
      throw new ValueError("nesterov needs momentum > 0", "SGD");
    }
    this.slotNames = this.momentum > 0 ? ["velocity"] : [];
  }

  protected updateOne(variable: Variable, value: Tensor, grad: Tensor, { lr }: StepValues): Tensor {
    const w = decayed(value, lr, this.weightDecay);
    if (this.momentum === 0) return sub(w, mul(grad, lr));
    const velocity = add(mul(this.slot(variable, "velocity"), this.momentum), grad);
    this.setSlot(variable, "velocity", velocity);
    const direction = this.nesterov ? add(grad, mul(velocity, this.momentum)) : velocity;
    return sub(w, mul(direction, lr));
  }
}

/** `new SGD(options)` as a function. */
export const sgd = (options: SGDOptions = {}): SGD => new SGD(options);
