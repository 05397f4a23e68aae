/**
 * Losses. Each takes predictions and targets and reduces with `reduction`: "mean" (default),
 * "sum", or "none" (per example). The label shapes each accepts are checked by labels.ts (one
 * check for every loss and metric): softmaxCrossEntropy takes class indices [...] (int) or
 * one-hot/probabilities [..., classes] (float); the others take targets of the predictions' shape.
 */
import type { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { add, maximum, mul, sub } from "../ops/binary.js";
import { abs, exp, log1p, neg, square } from "../ops/unary.js";
import { mean, sum } from "../ops/reduce.js";
import { logSoftmax } from "../ops/nn.js";
import { oneHot } from "../ops/creation.js";
import { cast } from "../ops/cast.js";
import { less } from "../ops/compare.js";
import { where } from "../ops/where.js";
import { checkClassLabels, checkSameShape } from "./labels.js";

export type Reduction = "mean" | "sum" | "none";

export interface LossOptions {
  reduction?: Reduction;
}

export interface CrossEntropyOptions extends LossOptions {
  /** Mixes the labels with the uniform distribution: (1 - s) labels + s / classes (default 0). */
  labelSmoothing?: number;
}

export interface HuberOptions extends LossOptions {
  /** Where the loss turns from quadratic to linear (default 1). */
  delta?: number;
}

const LOSS_KEYS = optionKeys<LossOptions>()("reduction");
const CROSS_ENTROPY_KEYS = optionKeys<CrossEntropyOptions>()("reduction", "labelSmoothing");
const HUBER_KEYS = optionKeys<HuberOptions>()("reduction", "delta");

function reduce(op: string, x: Tensor, reduction: Reduction | undefined): Tensor {
  switch (checkChoice(op, "reduction", reduction, ["mean", "sum", "none"]) ?? "mean") {
    case "mean":
      return mean(x);
    case "sum":
      return sum(x);
    case "none":
      return x;
  }
}

/**
 * Softmax cross-entropy of logits [..., classes] against integer labels [...] (int32/int64),
 * or against one-hot / soft labels [..., classes] (float): -sum(labels * logSoftmax(logits)).
 * `labelSmoothing` mixes the labels with the uniform distribution.
 */
export function softmaxCrossEntropy(logits: Tensor, labels: Tensor, options: CrossEntropyOptions = {}): Tensor {
  const op = "softmaxCrossEntropy";
  checkOptions(op, options, CROSS_ENTROPY_KEYS);
  const classes = logits.shape[logits.rank - 1]!;
  const kind = checkClassLabels(op, logits, labels);
  let target = kind === "indices" ? oneHot(labels, classes, logits.dtype) : cast(labels, logits.dtype);
  const s = options.labelSmoothing ?? 0;
  if (!(s >= 0 && s <= 1)) throw new ValueError(`labelSmoothing must be in [0, 1], got ${s}`, op);
  if (s > 0) target = add(mul(target, 1 - s), s / classes);
  return reduce(op, neg(sum(mul(target, logSoftmax(logits, -1)), -1)), options.reduction);
}

/**
 * Binary cross-entropy of logits against targets in [0, 1] of the logits' shape, computed
 * stably: max(x, 0) - x z + log(1 + exp(-|x|)).
 */
export function binaryCrossEntropyWithLogits(logits: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  const op = "binaryCrossEntropyWithLogits";
  checkOptions(op, options, LOSS_KEYS);
  if (!isFloat(logits.dtype)) throw new DtypeError(`logits must be float, got ${logits.dtype}`, op);
  checkSameShape(op, logits, targets);
  const z = cast(targets, logits.dtype);
  const per = add(sub(maximum(logits, 0), mul(logits, z)), log1p(exp(neg(abs(logits)))));
  return reduce(op, per, options.reduction);
}

/** Mean squared error: (predictions - targets)^2 (targets of the predictions' shape), reduced. */
export function mse(predictions: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  checkOptions("mse", options, LOSS_KEYS);
  checkSameShape("mse", predictions, targets);
  return reduce("mse", square(sub(predictions, targets)), options.reduction);
}

/** Huber loss: 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta); e = predictions - targets (same shape). */
export function huber(predictions: Tensor, targets: Tensor, options: HuberOptions = {}): Tensor {
  const op = "huber";
  checkOptions(op, options, HUBER_KEYS);
  checkSameShape(op, predictions, targets);
  const delta = options.delta ?? 1;
  if (!(delta > 0)) throw new ValueError(`delta must be > 0, got ${delta}`, op);
  const e = abs(sub(predictions, targets));
  const per = where(less(e, delta), mul(square(e), 0.5), mul(sub(e, 0.5 * delta), delta));
  return reduce(op, per, options.reduction);
}
