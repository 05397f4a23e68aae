/** RMSprop (Hinton's lecture 6e), in PyTorch's formulation, with optional momentum and centering. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { add, div, mul, sub } from "../ops/binary.js";
import { sqrt, square } from "../ops/unary.js";
import { checkHyper, Optimizer, type OptimizerOptions, type StepValues } from "./optimizer.js";
import { decayed } from "./weight-decay.js";
import { checkOptions, optionKeys } from "../core/options.js";

export interface RMSpropOptions extends OptimizerOptions {
  /** Default 0.01. */
  learningRate?: OptimizerOptions["learningRate"];
  /** Decay of the mean square, in [0, 1). Default 0.99 (PyTorch's alpha). */
  rho?: number;
  /** Added to the root mean square, > 0. Default 1e-8. */
  epsilon?: number;
  /** Momentum in [0, 1). Default 0 (no momentum slot). */
  momentum?: number;
  /** Divide by the variance estimate instead of the mean square. Default false. */
  centered?: boolean;
  /** Decoupled weight decay. Default 0. */
  weightDecay?: number;
}

/**
 * With gradient g and slots `meanSquare` (and `meanGrad`, `momentum`):
 *
 *     meanSquare = rho * meanSquare + (1 - rho) * g^2
 *     meanGrad   = rho * meanGrad + (1 - rho) * g                  (centered)
 *     denom      = sqrt(meanSquare - meanGrad^2) + epsilon          (centered; else sqrt(meanSquare) + epsilon)
 *     buf        = momentum * buf + g / denom;  w -= lr * buf       (momentum > 0)
 *     w -= lr * g / denom                                           (momentum = 0)
 */
export class RMSprop extends Optimizer {
  readonly rho: number;
  readonly epsilon: number;
  readonly momentum: number;
  readonly centered: boolean;
  readonly weightDecay: number;
  readonly slotNames: readonly string[];

  constructor(options: RMSpropOptions = {}) {
    checkOptions("RMSprop", options, optionKeys<RMSpropOptions>()("learningRate", "clipNorm", "rho", "epsilon", "momentum", "centered", "weightDecay"));
    super("RMSprop", options, 0.01);
    this.rho = checkHyper("RMSprop", "rho", options.rho ?? 0.99, 0, 1, false, true);
    this.epsilon = checkHyper("RMSprop", "epsilon", options.epsilon ?? 1e-8, 0, Infinity, true);
    this.momentum = checkHyper("RMSprop", "momentum", options.momentum ?? 0, 0, 1, false, true);
    this.centered = options.centered ?? false;
    this.weightDecay = checkHyper("RMSprop", "weightDecay", options.weightDecay ?? 0, 0, Infinity);
    this.slotNames = ["meanSquare", ...(this.centered ? ["meanGrad"] : []), ...(this.momentum > 0 ? ["momentum"] : [])];
  }

  protected updateOne(variable: Variable, value: Tensor, grad: Tensor, { lr }: StepValues): Tensor {
    const { rho } = this;
    const ms = add(mul(this.slot(variable, "meanSquare"), rho), mul(square(grad), 1 - rho));
    this.setSlot(variable, "meanSquare", ms);
    let variance = ms;
    if (this.centered) {
      const mg = add(mul(this.slot(variable, "meanGrad"), rho), mul(grad, 1 - rho));
      this.setSlot(variable, "meanGrad", mg);
      variance = sub(ms, square(mg));
    }
    let direction = div(grad, add(sqrt(variance), this.epsilon));
    if (this.momentum > 0) {
      direction = add(mul(this.slot(variable, "momentum"), this.momentum), direction);
      this.setSlot(variable, "momentum", direction);
    }
    return sub(decayed(value, lr, this.weightDecay), mul(direction, lr));
  }
}

/** `new RMSprop(options)` as a function. */
export const rmsprop = (options: RMSpropOptions = {}): RMSprop => new RMSprop(options);
