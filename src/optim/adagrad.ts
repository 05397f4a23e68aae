/** Adagrad (Duchi, Hazan & Singer, 2011), in PyTorch's formulation. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { add, div, mul, sub } from "../ops/binary.js";
import { sqrt, square } from "../ops/unary.js";
import { checkHyper, Optimizer, type OptimizerOptions, type StepValues } from "./optimizer.js";
import { decayed } from "./weight-decay.js";
import { checkOptions, optionKeys } from "../core/options.js";

export interface AdagradOptions extends OptimizerOptions {
  /** Default 0.01. */
  learningRate?: OptimizerOptions["learningRate"];
  /** The accumulator's starting value, >= 0. Default 0 (PyTorch; Keras uses 0.1). */
  initialAccumulator?: number;
  /** Added to the root of the accumulator, > 0. Default 1e-10. */
  epsilon?: number;
  /** Decoupled weight decay. Default 0. */
  weightDecay?: number;
}

/**
 * With gradient g and slot `accumulator` (initialAccumulator at first):
 *
 *     accumulator += g^2
 *     w -= lr * g / (sqrt(accumulator) + epsilon)
 */
export class Adagrad extends Optimizer {
  readonly initialAccumulator: number;
  readonly epsilon: number;
  readonly weightDecay: number;
  readonly slotNames: readonly string[] = ["accumulator"];

  constructor(options: AdagradOptions = {}) {
    checkOptions("Adagrad", options, optionKeys<AdagradOptions>()("learningRate", "clipNorm", "initialAccumulator", "epsilon", "weightDecay"));
    super("Adagrad", options, 0.01);
    this.initialAccumulator = checkHyper("Adagrad", "initialAccumulator", options.initialAccumulator ?? 0, 0, Infinity);
    this.epsilon = checkHyper("Adagrad", "epsilon", options.epsilon ?? 1e-10, 0, Infinity, true);
    this.weightDecay = checkHyper("Adagrad", "weightDecay", options.weightDecay ?? 0, 0, Infinity);
  }

  protected updateOne(variable: Variable, value: Tensor, grad: Tensor, { lr }: StepValues): Tensor {
    const acc = add(this.slot(variable, "accumulator", this.initialAccumulator), square(grad));
    this.setSlot(variable, "accumulator", acc);
    return sub(decayed(value, lr, this.weightDecay), mul(div(grad, add(sqrt(acc), this.epsilon)), lr));
  }
}

/** `new Adagrad(options)` as a function. */
export const adagrad = (options: AdagradOptions = {}): Adagrad => new Adagrad(options);
