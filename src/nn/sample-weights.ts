/**
 * Sample and class weights for `fit` and `evaluate`, as Keras's `sample_weight` and
 * `class_weight`. The per-example losses (the loss called with `{ reduction: "none" }`) are
 * multiplied by the weights and the mean is taken over the batch's rows:
 *
 *     weighted loss = sum_i w_i * l_i / N          (Keras's "sum_over_batch_size")
 *
 * not divided by sum(w), so a batch of weights 2 counts twice, and a zero weight removes its row
 * from the gradient without raising the others'. A per-example loss that is itself per element
 * ([N, d], as mse's) is averaged over its other axes first. Over batches, fit and evaluate weight
 * each batch by its rows, so an epoch's value is sum(w * l) / rows over all of it.
 *
 * Weights ride in the batches as a third tensor, [inputs, labels, sampleWeights] (one weight per
 * row, or per element of the per-example loss, e.g. per time step), so they stay with their rows
 * through shuffling: `Dataset.fromTensorSlices([x, y, w])`. `classWeight` maps class indices to
 * weights; a row's weight is its label's (classes not listed weigh 1; one-hot or probability
 * labels name the class of their largest entry, other float labels their rounded value). Both
 * together multiply.
 */
import { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { ShapeError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import { mul, maximum, minimum } from "../ops/binary.js";
import { cast } from "../ops/cast.js";
import { tensor } from "../ops/creation.js";
import { mean, argMax } from "../ops/reduce.js";
import { round } from "../ops/unary.js";
import { where } from "../ops/where.js";
import { greaterEqual, less } from "../ops/compare.js";
import { gather } from "../ops/shape/gather.js";
import { reshape } from "../ops/shape.js";
import type { BatchFunction } from "./evaluate.js";

/** Weights by class index: { 0: 1, 1: 5 } or [1, 5]. */
export type ClassWeight = Readonly<Record<number, number>> | readonly number[];

/** The most classes a classWeight may name (its table is this long at most). */
const MAX_CLASSES = 1 << 20;

/** Checks `classWeight` and returns its table: a float32 vector, entry c the weight of class c (1 when not given). */
export function classWeightTable(op: string, classWeight: unknown): Tensor {
  if (classWeight === null || typeof classWeight !== "object") throw new ValueError(`classWeight must be an object { class: weight } or an array of weights by class, got ${classWeight === null ? "null" : typeof classWeight}`, op);
  const entries = Array.isArray(classWeight) ? classWeight.map((w, c) => [String(c), w] as const) : Object.entries(classWeight);
  if (entries.length === 0) throw new ValueError(`classWeight names no class`, op);
  const table: number[] = [];
  for (const [key, w] of entries) {
    const c = Number(key);
    if (!(Number.isInteger(c) && c >= 0 && c < MAX_CLASSES && String(c) === key)) throw new ValueError(`classWeight keys must be class indices 0, 1, ..., got ${JSON.stringify(key)}`, op);
    if (typeof w !== "number" || !Number.isFinite(w) || w < 0) throw new ValueError(`classWeight[${c}] must be a finite number >= 0, got ${String(w)}`, op);
    while (table.length <= c) table.push(1);
    table[c] = w;
  }
  return tensor(table, "float32");
}

/** Each row's class weight from the labels (ops, so it stages): indices as given, one-hot by argmax, other floats rounded. */
export function classWeightsOf(table: Tensor, labels: Tensor): Tensor {
  let ids: Tensor;
  if (!isFloat(labels.dtype)) ids = cast(labels, "int32");
  else if (labels.rank >= 2 && labels.shape[labels.rank - 1]! > 1) ids = cast(argMax(labels, -1), "int32");
  else ids = cast(round(labels), "int32");
  const n = table.shape[0]!;
  const inRange = mul(cast(greaterEqual(ids, 0), "float32"), cast(less(ids, n), "float32"));
  const picked = gather(table, minimum(maximum(ids, 0), n - 1));
  return where(cast(inRange, "bool"), picked, 1);
}

/** Checks a batch's sample weights against its rows (`rows` of the inputs). */
export function checkSampleWeights(op: string, w: Tensor, rows: number, index: number, what: string): void {
  if (w.rank === 0 || w.shape[0] !== rows) {
    throw new ShapeError(`the sample weights of ${what} ${index} have shape ${fmtShape(w.shape)}, but its inputs have ${rows} rows: give one weight per row ([${rows}]) or per element of the per-example loss`, op);
  }
}

/**
 * The weighted loss of a batch: mean(l * w) with l the per-example loss (`loss` called with
 * `{ reduction: "none" }` as its third argument, as the built-in losses take it) and w the
 * weights, reshaped to broadcast against l along its leading axes.
 */
export function weightedLoss(op: string, loss: BatchFunction, output: Tensor, labels: Tensor, weights: Tensor): Tensor {
  const per = (loss as (o: Tensor, l: Tensor, options: { reduction: "none" }) => Tensor)(output, labels, { reduction: "none" });
  if (!(per instanceof Tensor)) throw new ValueError(`the loss must return a tensor, got ${typeof per}`, op);
  const rows = weights.shape[0]!;
  if (per.rank === 0 || per.shape[0] !== rows) {
    throw new ShapeError(
      `with sample or class weights the loss must give one value per row when called with { reduction: "none" } as its third argument (the built-in losses do), but it gave shape ${fmtShape(per.shape)} for ${rows} rows`,
      op,
    );
  }
  if (weights.rank > per.rank || weights.shape.some((d, i) => d !== per.shape[i])) {
    throw new ShapeError(`sample weights of shape ${fmtShape(weights.shape)} do not fit the per-example loss of shape ${fmtShape(per.shape)}: their shape must lead its shape`, op);
  }
  const w = weights.rank === per.rank ? weights : reshape(weights, [...weights.shape, ...new Array<number>(per.rank - weights.rank).fill(1)]);
  return mean(mul(per, cast(w, per.dtype)));
}

/** Keras users pass sample_weight as an argument; here the weights ride in the batches: say so rather than "unknown option". */
export function refuseSampleWeightOption(op: string, options: object): void {
  for (const key of ["sampleWeight", "sample_weight", "sampleWeights"]) {
    if (key in options) throw new ValueError(`sample weights are a third tensor of each batch, [inputs, labels, sampleWeights] (Dataset.fromTensorSlices([x, y, w]).batch(n) keeps them with their rows when shuffled), not the option ${key}`, op);
  }
}
