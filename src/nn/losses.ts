/**
 * Losses. Each takes predictions and targets and reduces with `reduction`: "mean" (default),
 * "sum", or "none" (per example).
 */
import type { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { add, maximum, mul, sub } from "../ops/binary.js";
import { abs, exp, log1p, neg, square } from "../ops/unary.js";
import { mean, sum } from "../ops/reduce.js";
import { logSoftmax } from "../ops/nn.js";
import { oneHot } from "../ops/creation.js";
import { cast } from "../ops/cast.js";
import { less } from "../ops/compare.js";
import { where } from "../ops/where.js";

export type Reduction = "mean" | "sum" | "none";

export interface LossOptions {
  reduction?: Reduction;
}

function reduce(op: string, x: Tensor, reduction: Reduction | undefined): Tensor {
  switch (reduction ?? "mean") {
    case "mean":
      return mean(x);
    case "sum":
      return sum(x);
    case "none":
      return x;
    default:
      throw new ValueError(`reduction must be "mean", "sum" or "none", got ${String(reduction)}`, op);
  }
}

function sameShape(op: string, a: Tensor, b: Tensor, what: string): void {
  if (a.rank !== b.rank || a.shape.some((d, i) => d >= 0 && b.shape[i]! >= 0 && d !== b.shape[i])) {
    throw new ShapeError(`predictions of shape [${a.shape.join(", ")}] and ${what} of shape [${b.shape.join(", ")}] must have the same shape`, op);
  }
}

/**
 * Softmax cross-entropy of logits [..., classes] against integer labels [...] (int32/int64),
 * or against one-hot / soft labels [..., classes] (float): -sum(labels * logSoftmax(logits)).
 * `labelSmoothing` mixes the labels with the uniform distribution.
 */
export function softmaxCrossEntropy(logits: Tensor, labels: Tensor, options: LossOptions & { labelSmoothing?: number } = {}): Tensor {
  const op = "softmaxCrossEntropy";
  if (!isFloat(logits.dtype)) throw new DtypeError(`logits must be float, got ${logits.dtype}`, op);
  const classes = logits.shape[logits.rank - 1]!;
  let target: Tensor;
  if (labels.dtype === "int32" || labels.dtype === "int64") {
    if (labels.rank !== logits.rank - 1 || labels.shape.some((d, i) => d >= 0 && logits.shape[i]! >= 0 && d !== logits.shape[i])) {
      throw new ShapeError(`integer labels of shape [${labels.shape.join(", ")}] must have the logits' shape [${logits.shape.join(", ")}] without its class axis`, op);
    }
    target = oneHot(labels, classes, logits.dtype);
  } else if (isFloat(labels.dtype)) {
    sameShape(op, logits, labels, "one-hot/soft labels");
    target = cast(labels, logits.dtype);
  } else throw new DtypeError(`labels must be integer class ids or float (one-hot/soft) labels, got ${labels.dtype}`, op);
  const s = options.labelSmoothing ?? 0;
  if (!(s >= 0 && s <= 1)) throw new ValueError(`labelSmoothing must be in [0, 1], got ${s}`, op);
  if (s > 0) target = add(mul(target, 1 - s), s / classes);
  return reduce(op, neg(sum(mul(target, logSoftmax(logits, -1)), -1)), options.reduction);
}

/**
 * Binary cross-entropy of logits against targets in [0, 1], computed stably:
 * max(x, 0) - x z + log(1 + exp(-|x|)).
 */
export function binaryCrossEntropyWithLogits(logits: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  const op = "binaryCrossEntropyWithLogits";
  if (!isFloat(logits.dtype)) throw new DtypeError(`logits must be float, got ${logits.dtype}`, op);
  sameShape(op, logits, targets, "targets");
  const z = cast(targets, logits.dtype);
  const per = add(sub(maximum(logits, 0), mul(logits, z)), log1p(exp(neg(abs(logits)))));
  return reduce(op, per, options.reduction);
}

/** Mean squared error: (predictions - targets)^2, reduced. */
export function mse(predictions: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  sameShape("mse", predictions, targets, "targets");
  return reduce("mse", square(sub(predictions, targets)), options.reduction);
}

/** Huber loss: 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta); e = predictions - targets. */
export function huber(predictions: Tensor, targets: Tensor, options: LossOptions & { delta?: number } = {}): Tensor {
  const op = "huber";
  sameShape(op, predictions, targets, "targets");
  const delta = options.delta ?? 1;
  if (!(delta > 0)) throw new ValueError(`delta must be > 0, got ${delta}`, op);
  const e = abs(sub(predictions, targets));
  const per = where(less(e, delta), mul(square(e), 0.5), mul(sub(e, 0.5 * delta), delta));
  return reduce(op, per, options.reduction);
}
