/** Metrics: accuracy, and running means that accumulate over batches. */
import { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { argMax, mean } from "../ops/reduce.js";
import { cast } from "../ops/cast.js";
import { equal } from "../ops/compare.js";
import { checkClassLabels } from "./labels.js";

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
