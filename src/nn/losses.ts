/**
 * Losses. Each takes predictions and targets and reduces with `reduction`: "mean" (default),
 * "sum", or "none" (per example). The label shapes each accepts are checked by labels.ts (one
 * check for every loss and metric): softmaxCrossEntropy takes class indices [...] (int) or
 * one-hot/probabilities [..., classes] (float); nll takes class indices only; the others take
 * targets of the predictions' shape. Elementwise losses (mse, l1, huber, binary cross-entropy)
 * give "none" per element; row losses (cross-entropy, nll, klDivergence, cosineSimilarity) give
 * "none" per row (the class / feature axis summed away).
 */
import { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { add, maximum, mul, sub } from "../ops/binary.js";
import { abs, log, neg, rsqrt, softplus, square } from "../ops/unary.js";
import { mean, sum } from "../ops/reduce.js";
import { logSoftmax } from "../ops/nn.js";
import { oneHot } from "../ops/creation.js";
import { cast } from "../ops/cast.js";
import { greater, less } from "../ops/compare.js";
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

export interface BinaryCrossEntropyOptions extends LossOptions {
  /**
   * Weight of the positive term (PyTorch's pos_weight): a number, or a tensor broadcasting
   * against the logits (one per class of the last axis). Default 1.
   */
  posWeight?: number | Tensor;
}

const LOSS_KEYS = optionKeys<LossOptions>()("reduction");
const BCE_KEYS = optionKeys<BinaryCrossEntropyOptions>()("reduction", "posWeight");
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
 * stably: posWeight z softplus(-x) + (1 - z) softplus(x), which for posWeight 1 is
 * max(x, 0) - x z + log(1 + exp(-|x|)).
 */
export function binaryCrossEntropyWithLogits(logits: Tensor, targets: Tensor, options: BinaryCrossEntropyOptions = {}): Tensor {
  const op = "binaryCrossEntropyWithLogits";
  checkOptions(op, options, BCE_KEYS);
  if (!isFloat(logits.dtype)) throw new DtypeError(`logits must be float, got ${logits.dtype}`, op);
  checkSameShape(op, logits, targets);
  const z = cast(targets, logits.dtype);
  const pw = options.posWeight;
  let per: Tensor;
  if (pw === undefined) {
    // softplus(x) - x z (softplus's own gradient, sigmoid, is right at x = 0, unlike max(x, 0)'s)
    per = sub(softplus(logits), mul(logits, z));
  } else {
    let w: Tensor | number;
    if (typeof pw === "number") {
      if (!(pw >= 0) || !Number.isFinite(pw)) throw new ValueError(`posWeight must be a finite number >= 0, got ${pw}`, op);
      w = pw;
    } else if (pw instanceof Tensor) {
      if (pw.rank > 1 || (pw.rank === 1 && pw.shape[0]! >= 0 && logits.shape[logits.rank - 1]! >= 0 && pw.shape[0] !== 1 && pw.shape[0] !== logits.shape[logits.rank - 1])) {
        throw new ShapeError(`posWeight of shape [${pw.shape.join(", ")}] does not fit logits of shape [${logits.shape.join(", ")}]: give a scalar or one weight per class of the last axis`, op);
      }
      w = cast(pw, logits.dtype);
    } else {
      throw new ValueError(`posWeight must be a number or a tensor, got ${typeof pw}`, op);
    }
    per = add(mul(mul(z, w), softplus(neg(logits))), mul(sub(1, z), softplus(logits)));
  }
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

/** Mean absolute error (L1): |predictions - targets| (targets of the predictions' shape), reduced. */
export function l1(predictions: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  checkOptions("l1", options, LOSS_KEYS);
  checkSameShape("l1", predictions, targets);
  return reduce("l1", abs(sub(predictions, targets)), options.reduction);
}

/** The same loss as `l1`, under Keras's name. */
export function mae(predictions: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  checkOptions("mae", options, LOSS_KEYS);
  checkSameShape("mae", predictions, targets);
  return reduce("mae", abs(sub(predictions, targets)), options.reduction);
}

/**
 * Negative log-likelihood of log-probabilities [..., classes] (e.g. logSoftmax's output)
 * against class indices [...] (int32/int64): -logProbs[..., label], per row. One-hot labels
 * are refused (use softmaxCrossEntropy on logits, or klDivergence for distributions).
 */
export function nll(logProbs: Tensor, labels: Tensor, options: LossOptions = {}): Tensor {
  const op = "nll";
  checkOptions(op, options, LOSS_KEYS);
  if (checkClassLabels(op, logProbs, labels) !== "indices") {
    throw new ShapeError(`takes class indices of shape [${logProbs.shape.slice(0, -1).join(", ")}] (int32/int64), got ${labels.dtype} labels of shape [${labels.shape.join(", ")}] (one-hot labels: use softmaxCrossEntropy on logits)`, op);
  }
  const classes = logProbs.shape[logProbs.rank - 1]!;
  return reduce(op, neg(sum(mul(oneHot(labels, classes, logProbs.dtype), logProbs), -1)), options.reduction);
}

/**
 * Kullback-Leibler divergence KL(targets || predictions) per row, as PyTorch's KLDivLoss:
 * predictions are log-probabilities [..., classes], targets probabilities of that shape:
 * sum(t (log t - logProbs), -1), with 0 log 0 taken as 0.
 */
export function klDivergence(logProbs: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  const op = "klDivergence";
  checkOptions(op, options, LOSS_KEYS);
  if (!isFloat(logProbs.dtype)) throw new DtypeError(`log-probabilities must be float, got ${logProbs.dtype}`, op);
  if (logProbs.rank === 0) throw new ShapeError(`log-probabilities must have a class axis (shape [..., classes]), got a scalar`, op);
  checkSameShape(op, logProbs, targets);
  const t = cast(targets, logProbs.dtype);
  // log of t where t > 0; t = 0 contributes 0 (t * log 1)
  const logT = log(where(greater(t, 0), t, 1));
  return reduce(op, sum(mul(t, sub(logT, logProbs)), -1), options.reduction);
}

/**
 * Cosine similarity loss as Keras's: -cos(predictions, targets) along the last axis, per row
 * (-1 when they point the same way). Each row is divided by max(|row|, 1e-6), so a zero row
 * gives 0, not NaN.
 */
export function cosineSimilarity(predictions: Tensor, targets: Tensor, options: LossOptions = {}): Tensor {
  const op = "cosineSimilarity";
  checkOptions(op, options, LOSS_KEYS);
  if (!isFloat(predictions.dtype)) throw new DtypeError(`predictions must be float, got ${predictions.dtype}`, op);
  if (predictions.rank === 0) throw new ShapeError(`predictions must have a feature axis, got a scalar`, op);
  checkSameShape(op, predictions, targets);
  const y = cast(targets, predictions.dtype);
  const unit = (x: Tensor) => mul(x, rsqrt(maximum(sum(square(x), -1, true), 1e-12)));
  return reduce(op, neg(sum(mul(unit(predictions), unit(y)), -1)), options.reduction);
}
