/**
 * Metrics: accuracy, top-k accuracy, precision/recall/F1 (binary or macro), MAE/MSE, and
 * running means that accumulate over batches. Each metric function returns a float scalar
 * tensor (they stage); Precision/Recall/F1 are counting metrics summed over an epoch.
 */
import { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { argMax, mean, sum } from "../ops/reduce.js";
import { add, div, mul, sub } from "../ops/binary.js";
import { abs, sigmoid, square } from "../ops/unary.js";
import { cast } from "../ops/cast.js";
import { oneHot } from "../ops/creation.js";
import { equal, greater, less } from "../ops/compare.js";
import { where } from "../ops/where.js";
import { reshape } from "../ops/shape.js";
import { slice } from "../ops/shape/slice.js";
import { stack } from "../ops/shape/join.js";
import { checkClassLabels, checkSameShape } from "./labels.js";

/**
 * The fraction of rows whose largest logit is the label: logits [..., classes] against class
 * indices [...] (int32/int64) or one-hot/probabilities [..., classes] (float; the label is their
 * argmax). Other label shapes ([N, 1] indices) are a ShapeError (labels.ts). A float32 scalar
 * tensor (stages).
 */
export function accuracy(logits: Tensor, labels: Tensor): Tensor {
  const ids = checkClassLabels("accuracy", logits, labels) === "dense" ? argMax(labels, -1) : labels;
  return mean(cast(equal(argMax(logits, -1), cast(ids, "int32")), "float32"));
}

/** A running (optionally weighted) mean of numbers or scalar tensors, as Keras's `Mean` metric. */
export class Mean {
  private total = 0;
  private weight = 0;

  /** Adds `value` with weight `count` (e.g. a batch's mean loss and its size). */
  update(value: number | Tensor, count = 1): this {
    const v = value instanceof Tensor ? (value.item() as number) : value;
    if (typeof v !== "number" || !(count >= 0)) throw new ValueError(`update takes a number or a scalar tensor and a count >= 0, got ${String(v)}, ${count}`, "Mean");
    this.total += v * count;
    this.weight += count;
    return this;
  }

  /** The mean so far (NaN before any update). */
  result(): number {
    return this.weight === 0 ? Number.NaN : this.total / this.weight;
  }

  /** How much weight has been added. */
  get count(): number {
    return this.weight;
  }

  reset(): void {
    this.total = 0;
    this.weight = 0;
  }
}

/** Mean absolute error of predictions against targets of their shape (a float scalar tensor). */
export function meanAbsoluteError(predictions: Tensor, targets: Tensor): Tensor {
  checkSameShape("meanAbsoluteError", predictions, targets);
  return mean(abs(sub(predictions, cast(targets, predictions.dtype))));
}

/** Mean squared error of predictions against targets of their shape (a float scalar tensor). */
export function meanSquaredError(predictions: Tensor, targets: Tensor): Tensor {
  checkSameShape("meanSquaredError", predictions, targets);
  return mean(square(sub(predictions, cast(targets, predictions.dtype))));
}

export interface TopKOptions {
  /** How many of the largest logits count as a hit (default 5). */
  k?: number;
}
const TOP_K_KEYS = optionKeys<TopKOptions>()("k");

/**
 * The fraction of rows whose label is among the k largest logits (labels as `accuracy` takes
 * them). Ties count as hits, as Keras's in_top_k: a row is a hit when fewer than k logits are
 * strictly larger than the label's.
 */
export function topKAccuracy(logits: Tensor, labels: Tensor, options: TopKOptions = {}): Tensor {
  const op = "topKAccuracy";
  checkOptions(op, options, TOP_K_KEYS);
  const k = options.k ?? 5;
  if (!Number.isInteger(k) || k < 1) throw new ValueError(`k must be a positive integer, got ${k}`, op);
  const classes = logits.shape[logits.rank - 1]!;
  const ids = checkClassLabels(op, logits, labels) === "dense" ? argMax(labels, -1) : labels;
  const labelLogit = sum(mul(oneHot(cast(ids, "int32"), classes, logits.dtype), logits), -1, true);
  const larger = sum(cast(greater(logits, labelLogit), "float32"), -1);
  return mean(cast(less(larger, k), "float32"));
}

export interface ClassificationMetricOptions {
  /**
   * "binary" (default): predictions are probabilities (or logits, with fromLogits) of the
   * targets' shape, targets 0/1, positive where the prediction > threshold. "macro": logits
   * [..., classes] against class labels (as `accuracy`), the metric per class (predicted class =
   * argmax) averaged over the classes.
   */
  average?: "binary" | "macro";
  /** Binary: the probability above which a prediction is positive (default 0.5). */
  threshold?: number;
  /** Binary: predictions are logits (sigmoid applied first). Default false. */
  fromLogits?: boolean;
}
const CLASSIFICATION_KEYS = optionKeys<ClassificationMetricOptions>()("average", "threshold", "fromLogits");
const AVERAGES = ["binary", "macro"] as const;

type Ratio = "precision" | "recall" | "f1";

/** True positives, false positives and false negatives, [3, classes] float32 (classes = 1 when binary). */
function confusionCounts(op: string, predictions: Tensor, labels: Tensor, options: ClassificationMetricOptions): Tensor {
  checkOptions(op, options, CLASSIFICATION_KEYS);
  const average = checkChoice(op, "average", options.average, AVERAGES) ?? "binary";
  let pred: Tensor;
  let truth: Tensor;
  if (average === "macro") {
    if (options.threshold !== undefined || options.fromLogits !== undefined) throw new ValueError(`threshold and fromLogits are binary options; average "macro" takes the argmax`, op);
    const classes = predictions.shape[predictions.rank - 1]!;
    if (!(classes > 0)) throw new ShapeError(`average "macro" needs a known class axis, got predictions of shape [${predictions.shape.join(", ")}]`, op);
    const ids = checkClassLabels(op, predictions, labels) === "dense" ? argMax(labels, -1) : labels;
    pred = reshape(oneHot(argMax(predictions, -1), classes, "float32"), [-1, classes]);
    truth = reshape(oneHot(cast(ids, "int32"), classes, "float32"), [-1, classes]);
  } else {
    if (!isFloat(predictions.dtype)) throw new DtypeError(`predictions must be float, got ${predictions.dtype}`, op);
    checkSameShape(op, predictions, labels);
    const threshold = options.threshold ?? 0.5;
    if (!(threshold >= 0 && threshold <= 1)) throw new ValueError(`threshold must be in [0, 1], got ${threshold}`, op);
    const p = options.fromLogits ? sigmoid(predictions) : predictions;
    pred = reshape(cast(greater(p, threshold), "float32"), [-1, 1]);
    truth = reshape(cast(greater(cast(labels, "float32"), 0.5), "float32"), [-1, 1]);
  }
  const tp = sum(mul(pred, truth), 0);
  const fp = sum(mul(pred, sub(1, truth)), 0);
  const fn = sum(mul(sub(1, pred), truth), 0);
  return stack([tp, fp, fn], 0);
}

/** The ratio of counts [3, classes], per class (0 where its denominator is 0), averaged over the classes. */
function ratioOf(kind: Ratio, counts: Tensor): Tensor {
  const tp = slice(counts, [0], [1]);
  const fp = slice(counts, [1], [2]);
  const fn = slice(counts, [2], [3]);
  const num = kind === "f1" ? mul(tp, 2) : tp;
  const den = kind === "precision" ? add(tp, fp) : kind === "recall" ? add(tp, fn) : add(add(mul(tp, 2), fp), fn);
  const positive = greater(den, 0);
  return mean(where(positive, div(num, where(positive, den, 1)), 0));
}

/** Precision tp / (tp + fp) of one batch (see ClassificationMetricOptions; 0 when nothing is predicted positive). */
export function precision(predictions: Tensor, labels: Tensor, options: ClassificationMetricOptions = {}): Tensor {
  return ratioOf("precision", confusionCounts("precision", predictions, labels, options));
}

/** Recall tp / (tp + fn) of one batch (0 when there are no positives). */
export function recall(predictions: Tensor, labels: Tensor, options: ClassificationMetricOptions = {}): Tensor {
  return ratioOf("recall", confusionCounts("recall", predictions, labels, options));
}

/** F1 = 2 tp / (2 tp + fp + fn) of one batch (the harmonic mean of precision and recall; 0 when both are 0). */
export function f1(predictions: Tensor, labels: Tensor, options: ClassificationMetricOptions = {}): Tensor {
  return ratioOf("f1", confusionCounts("f1", predictions, labels, options));
}

/**
 * A metric computed from counts summed over batches rather than a mean of per-batch values
 * (precision over an epoch is not the mean of the batches' precisions). `fit` and `evaluate`
 * sum `counts` over the batches (it stages) and report `fromCounts` of the totals.
 */
export interface CountingMetric {
  counts(output: Tensor, labels: Tensor): Tensor;
  fromCounts(totals: Tensor): number;
}

abstract class ConfusionMetric implements CountingMetric {
  protected abstract readonly kind: Ratio;
  private readonly options: ClassificationMetricOptions;
  constructor(options: ClassificationMetricOptions = {}) {
    checkOptions(this.constructor.name, options, CLASSIFICATION_KEYS);
    checkChoice(this.constructor.name, "average", options.average, AVERAGES);
    this.options = { ...options };
  }
  counts(output: Tensor, labels: Tensor): Tensor {
    return confusionCounts(this.kind, output, labels, this.options);
  }
  fromCounts(totals: Tensor): number {
    return ratioOf(this.kind, totals).item() as number;
  }
}

/** Precision over all the batches of an epoch (or of `evaluate`), for `metrics` of fit/evaluate. */
export class Precision extends ConfusionMetric {
  protected readonly kind = "precision";
}
/** Recall over all the batches of an epoch (or of `evaluate`). */
export class Recall extends ConfusionMetric {
  protected readonly kind = "recall";
}
/** F1 over all the batches of an epoch (or of `evaluate`). */
export class F1 extends ConfusionMetric {
  protected readonly kind = "f1";
}

/** Whether a `metrics` entry is a CountingMetric (an object with counts/fromCounts) rather than a function. */
export function isCountingMetric(m: unknown): m is CountingMetric {
  return typeof m === "object" && m !== null && typeof (m as CountingMetric).counts === "function" && typeof (m as CountingMetric).fromCounts === "function";
}
