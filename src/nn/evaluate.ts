/**
 * `sc.nn.evaluate(model, options)` and `sc.nn.predict(model, options)`: the loss and metrics
 * over a whole dataset, and the outputs of a whole dataset, in eval mode (dropout off,
 * batch-norm running statistics), each batch through one staged step. `fit`'s validation runs
 * through the same code, so its "val_..." values are what `evaluate` gives on that data.
 *
 * Batch means are weighted by the batch's rows, so a short last batch counts for what it holds
 * and the result is the mean over one big batch (for mean-reduced losses and metrics).
 *
 * A batch may carry sample weights as a third tensor, [inputs, labels, sampleWeights]: the loss
 * is then the weighted one of sample-weights.ts (sum(w * l) / N, Keras's); metrics stay unweighted.
 */
import { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { stage } from "../staging/stage.js";
import { concat } from "../ops/shape/join.js";
import { isThenable } from "../data/prefetch.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { Module } from "./module.js";
import { add } from "../ops/binary.js";
import { tensor } from "../ops/creation.js";
import { Mean, isCountingMetric, type CountingMetric } from "./metrics.js";
import { checkSampleWeights, refuseSampleWeightOption, weightedLoss } from "./sample-weights.js";

/** A loss or metric of the model's output and the labels, as a scalar tensor. */
export type BatchFunction = (output: Tensor, labels: Tensor) => Tensor;

/**
 * A metric: a function averaged over the batches (weighted by their rows), or a CountingMetric
 * (Precision, Recall, F1) whose counts are summed over the batches before its value is taken.
 */
export type Metric = BatchFunction | CountingMetric;

/** What a step computes for `metric`: its value, or a CountingMetric's counts. */
export function metricStepValue(metric: Metric, output: Tensor, labels: Tensor): Tensor {
  return isCountingMetric(metric) ? metric.counts(output, labels) : metric(output, labels);
}

/** Checks that each entry of `metrics` is a function or a CountingMetric. */
export function checkMetrics(metrics: unknown, op: string): Record<string, Metric> {
  if (metrics === undefined) return {};
  if (metrics === null || typeof metrics !== "object" || Array.isArray(metrics)) throw new ValueError(`options.metrics must be an object of named metrics, got ${metrics === null ? "null" : Array.isArray(metrics) ? "an array" : typeof metrics}`, op);
  for (const [k, m] of Object.entries(metrics)) {
    if (typeof m !== "function" && !isCountingMetric(m)) throw new ValueError(`metrics.${k} must be a function (output, labels) => scalar tensor or a counting metric (sc.nn.Precision, ...), got ${typeof m}`, op);
  }
  return metrics as Record<string, Metric>;
}

/**
 * Running values over batches: a row-weighted mean for the loss and function metrics, summed
 * counts for CountingMetrics (precision over all rows is not the mean of batch precisions).
 */
export class StepTotals {
  private readonly means = new Map<string, Mean>();
  private readonly counts = new Map<string, Tensor>();
  constructor(private readonly metrics: Record<string, Metric>, private readonly prefix = "") {}

  /** The value of a step's output `t` named `name` ("loss" or a metric) on its own. */
  value(name: string, t: Tensor): number {
    const m = this.metrics[name];
    return name !== "loss" && m !== undefined && isCountingMetric(m) ? m.fromCounts(t) : (t.item() as number);
  }

  /** Adds one step's outputs, from a batch of `rows` rows. */
  update(values: Record<string, Tensor>, rows: number): void {
    for (const [name, t] of Object.entries(values)) {
      const key = `${this.prefix}${name}`;
      const m = this.metrics[name];
      if (name !== "loss" && m !== undefined && isCountingMetric(m)) {
        const sum = this.counts.get(key);
        this.counts.set(key, sum === undefined ? t : add(sum, t));
      } else {
        let mean = this.means.get(key);
        if (mean === undefined) this.means.set(key, (mean = new Mean()));
        mean.update(t, rows);
      }
    }
  }

  /**
   * The values over the steps of every rank of a data-parallel job: `sumOverRanks` sums a vector
   * over the ranks (an all-reduce), applied once to every mean's total and weight and every
   * counting metric's counts, so each value is the one a single process would get from all
   * ranks' batches (a counting metric's too, which a mean of per-rank values would not be).
   */
  resultOverRanks(sumOverRanks: (v: Float64Array) => ArrayLike<number>): Record<string, number> {
    const means = [...this.means];
    const counts = [...this.counts].map(([k, c]) => [k, c, c.dataSync()] as const);
    const v = new Float64Array(2 * means.length + counts.reduce((n, [, , d]) => n + d.length, 0));
    let at = 0;
    for (const [, m] of means) {
      v[at++] = m.count === 0 ? 0 : m.result() * m.count;
      v[at++] = m.count;
    }
    for (const [, , d] of counts) for (let i = 0; i < d.length; i++) v[at++] = Number(d[i]);
    const s = sumOverRanks(v);
    const out: Record<string, number> = {};
    at = 0;
    for (const [k] of means) {
      const total = s[at++]!;
      const weight = s[at++]!;
      out[k] = weight === 0 ? Number.NaN : total / weight;
    }
    for (const [k, c, d] of counts) {
      const summed = Array.from(d, () => s[at++]!);
      out[k] = (this.metrics[k.slice(this.prefix.length)] as CountingMetric).fromCounts(tensor(summed, c.dtype, c.shape.slice()));
    }
    return out;
  }

  /** The values so far, in the order first seen ("loss" first). */
  result(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, m] of this.means) out[k] = m.result();
    for (const [k, c] of this.counts) out[k] = (this.metrics[k.slice(this.prefix.length)] as CountingMetric).fromCounts(c);
    return out;
  }
}

/** Batches of [inputs, labels] (a Dataset or any iterable of them). */
export type Batches = Iterable<readonly Tensor[]>;

export interface EvaluateOptions {
  /** Batches of [inputs, labels], or [inputs, labels, sampleWeights] for a weighted loss (sample-weights.ts). */
  data: Batches;
  loss: BatchFunction;
  /** Named metrics of (output, labels), averaged over the data weighted by batch rows (CountingMetrics: counts summed). */
  metrics?: Record<string, Metric>;
  /** Stage the step (default true). */
  stage?: boolean;
}

export interface PredictOptions {
  /** Batches of inputs: tensors, or [inputs, ...] arrays (labels, if any, are ignored). */
  data: Iterable<Tensor | readonly Tensor[]>;
  /** Stage the step (default true). */
  stage?: boolean;
}

const EVALUATE_KEYS = optionKeys<EvaluateOptions>()("data", "loss", "metrics", "stage");
const PREDICT_KEYS = optionKeys<PredictOptions>()("data", "stage");

/** Loss (weighted by `weights` when given) and metrics of a batch (the model's mode is the caller's). */
function evalStep(model: Module, loss: BatchFunction, metrics: Record<string, Metric>, x: Tensor, y: Tensor, weights: Tensor | null): Record<string, Tensor> {
  const output = model.call(x) as Tensor;
  const out: Record<string, Tensor> = { loss: weights === null ? loss(output, y) : weightedLoss("evaluate", loss, output, y, weights) };
  for (const [name, m] of Object.entries(metrics)) out[name] = metricStepValue(m, output, y);
  return out;
}

function predictStep(model: Module, x: Tensor): Tensor {
  return model.call(x) as Tensor;
}

/** The batch step for loss and metrics, staged or not: what evaluate and fit's validation call. */
export function makeEvalStep(staged: boolean): typeof evalStep {
  return staged ? stage(evalStep, { name: "fit_eval_step", autograph: false }) : evalStep;
}

/** Runs `body` with every module of `model` in eval mode, then puts each back in its mode. */
export function inEvalMode<T>(model: Module, body: () => T): T {
  const restoreModes = model.saveModes();
  model.eval();
  try {
    return body();
  } finally {
    restoreModes();
  }
}

/** The [inputs, labels, sampleWeights or null] of a batch, or a ValueError naming `op` and what came instead. */
export function batchParts(batch: unknown, index: number, op: string, what = "batch"): [Tensor, Tensor, Tensor | null] {
  if (isThenable(batch)) {
    throw new ValueError(`${what} ${index} is a promise (an async map's): ${op} takes values; take an async pipeline with for await (see Dataset.prefetch) and call a staged step`, op);
  }
  if (!Array.isArray(batch) || (batch.length !== 2 && batch.length !== 3) || !batch.every((t) => t instanceof Tensor)) {
    throw new ValueError(`each ${what} must be [inputs, labels] tensors, or [inputs, labels, sampleWeights] (${what} ${index} is not)`, op);
  }
  const [x, y, w] = batch as Tensor[];
  if (w === undefined) return [x!, y!, null];
  checkSampleWeights(op, w, x!.rank > 0 ? x!.shape[0]! : 1, index, what);
  return [x!, y!, w];
}

function checkBatches(data: unknown, op: string, what: string): void {
  if (!data || typeof (data as Iterable<unknown>)[Symbol.iterator] !== "function") throw new ValueError(`${what} must be a dataset of batches`, op);
  // (a tensor iterates over its rows, which are not batches)
  if (data instanceof Tensor) throw new ValueError(`${what} must be a dataset of batches, got a tensor: make one with sc.data.Dataset.fromTensorSlices([x, y]).batch(n)`, op);
}

/**
 * The row-weighted mean loss and metrics of `step` over `data` (the caller sets the mode).
 * `prefix` names the values ("val_" for fit's validation).
 */
export function meanOver(model: Module, step: typeof evalStep, data: Batches, loss: BatchFunction, metrics: Record<string, Metric>, op: string, prefix = "", what = "batch"): Record<string, number> {
  const totals = new StepTotals(metrics, prefix);
  let i = 0;
  for (const batch of data) {
    const [x, y, w] = batchParts(batch, i++, op, what);
    totals.update(step(model, loss, metrics, x, y, w), x.shape.length > 0 ? x.shape[0]! : 1);
  }
  if (i === 0) throw new ValueError(`${what === "batch" ? "data" : what} has no batches`, op);
  return totals.result();
}

/** The loss and metrics of `model` over all of `data`, in eval mode: { loss, ...metrics }. */
export function evaluate(model: Module, options: EvaluateOptions): Record<string, number> {
  const op = "evaluate";
  if (!(model instanceof Module)) throw new ValueError(`takes an nn.Module, got ${typeof model}`, op);
  if (options === null || typeof options !== "object") throw new ValueError(`takes an options object`, op);
  refuseSampleWeightOption(op, options);
  checkOptions(op, options, EVALUATE_KEYS);
  if (typeof options.loss !== "function") throw new ValueError(`options.loss must be a function (output, labels) => scalar tensor`, op);
  checkBatches(options.data, op, "options.data");
  const step = makeEvalStep(options.stage ?? true);
  const metrics = checkMetrics(options.metrics, op);
  return inEvalMode(model, () => meanOver(model, step, options.data, options.loss, metrics, op));
}

/** The outputs of `model` on every batch of `data`, in eval mode, concatenated along the batch axis. */
export function predict(model: Module, options: PredictOptions): Tensor {
  const op = "predict";
  if (!(model instanceof Module)) throw new ValueError(`takes an nn.Module, got ${typeof model}`, op);
  if (options === null || typeof options !== "object") throw new ValueError(`takes an options object`, op);
  checkOptions(op, options, PREDICT_KEYS);
  checkBatches(options.data, op, "options.data");
  const step = (options.stage ?? true) ? stage(predictStep, { name: "predict_step", autograph: false }) : predictStep;
  const outputs = inEvalMode(model, () => {
    const out: Tensor[] = [];
    let i = 0;
    for (const batch of options.data) {
      if (isThenable(batch)) throw new ValueError(`batch ${i} is a promise (an async map's): predict takes values`, op);
      const x = batch instanceof Tensor ? batch : Array.isArray(batch) && batch[0] instanceof Tensor ? batch[0] : null;
      if (x === null) throw new ValueError(`each batch must be an inputs tensor or [inputs, ...] tensors (batch ${i} is not)`, op);
      const y = step(model, x);
      if (!(y instanceof Tensor)) throw new ValueError(`the model must return one tensor, got ${typeof y} (batch ${i})`, op);
      out.push(y);
      i++;
    }
    return out;
  });
  if (outputs.length === 0) throw new ValueError(`options.data has no batches`, op);
  return outputs.length === 1 ? outputs[0]! : concat(outputs, 0);
}
