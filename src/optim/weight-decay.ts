/** Decoupled weight decay (Loshchilov & Hutter), shared by the optimizers that offer it. */
import type { Tensor } from "../core/tensor.js";
import { mul, sub } from "../ops/binary.js";

/** `w * (1 - lr * weightDecay)`, or `w` itself when weightDecay is 0. */
export function decayed(w: Tensor, lr: Tensor, weightDecay: number): Tensor {
  return weightDecay > 0 ? mul(w, sub(1, mul(lr, weightDecay))) : w;
}
