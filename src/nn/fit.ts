/**
 * `sc.nn.fit(model, options)`: the common training loop (model, loss, optimizer, dataset,
 * epochs, metrics), with the step staged by default, progress output, callbacks, and a history.
 *
 * ```ts
 * const history = sc.nn.fit(model, {
 *   data: sc.data.Dataset.fromTensorSlices([x, y]).shuffle(8000, { seed: 0 }).batch(64),
 *   loss: sc.nn.softmaxCrossEntropy,
 *   optimizer: new sc.optim.Adam(),
 *   epochs: 3,
 *   metrics: { accuracy: sc.nn.accuracy },
 * });
 * ```
 */
import { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { stage } from "../staging/stage.js";
import type { Optimizer } from "../optim/optimizer.js";
import type { Dataset } from "../data/dataset.js";
import { isThenable } from "../data/prefetch.js";
import { Module } from "./module.js";
import { Mean } from "./metrics.js";
import { Progress, PROGRESS_MODES, type ProgressOptions } from "./progress.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";

/** A loss or metric of the model's output and the labels, as a scalar tensor. */
export type BatchFunction = (output: Tensor, labels: Tensor) => Tensor;

/** Values logged after a step or an epoch: "loss", each metric, and "val_..." after validation. */
export type Logs = Record<string, number>;

export interface FitCallbacks {
  /** After every step: the 1-based step number (over all epochs) and the batch's values. */
  onStepEnd?(step: number, logs: Logs): void;
  /** After every epoch: the 1-based epoch and the epoch's mean values (and validation values). */
  onEpochEnd?(epoch: number, logs: Logs): void;
}

export interface FitOptions {
  /** Batches of [inputs, labels]. */
  data: Iterable<readonly Tensor[]> | Dataset<readonly Tensor[]>;
  loss: BatchFunction;
  optimizer: Optimizer;
  /** Default 1. */
  epochs?: number;
  /** Named metrics of (output, labels), averaged over each epoch. */
  metrics?: Record<string, BatchFunction>;
  /** Batches to evaluate after each epoch (in eval mode). */
  validationData?: Iterable<readonly Tensor[]>;
  /** Stage the training step (default true). */
  stage?: boolean;
  /** Progress output (default "auto": a bar in a terminal, lines otherwise). */
  progress?: ProgressOptions["mode"];
  callbacks?: FitCallbacks | FitCallbacks[];
}

export interface History {
  /** Per epoch: mean loss, metrics, and validation values. */
  epochs: Logs[];
  /** Per step: the batch's loss and metrics. */
  steps: Logs[];
  /** Steps per second of each epoch (the first includes tracing). */
  stepsPerSecond: number[];
}

const FIT_KEYS = optionKeys<FitOptions>()("data", "loss", "optimizer", "epochs", "metrics", "validationData", "stage", "progress", "callbacks");
const CALLBACK_KEYS = optionKeys<FitCallbacks>()("onStepEnd", "onEpochEnd");

/** One step: loss and metrics of the batch, after the optimizer's update. */
function trainStep(model: Module, optimizer: Optimizer, loss: BatchFunction, metrics: Record<string, BatchFunction>, x: Tensor, y: Tensor): Record<string, Tensor> {
  let output: Tensor | null = null;
  const value = optimizer.minimize(() => {
    output = model.call(x) as Tensor;
    return loss(output, y);
  }, () => model.parameters());
  const out: Record<string, Tensor> = { loss: value };
  for (const [name, f] of Object.entries(metrics)) out[name] = f(output!, y);
  return out;
}

/** Loss and metrics of a batch in eval mode. */
function evalStep(model: Module, loss: BatchFunction, metrics: Record<string, BatchFunction>, x: Tensor, y: Tensor): Record<string, Tensor> {
  const output = model.call(x) as Tensor;
  const out: Record<string, Tensor> = { loss: loss(output, y) };
  for (const [name, f] of Object.entries(metrics)) out[name] = f(output, y);
  return out;
}

/** Trains `model` and returns the history. The model is left in train mode. */
export function fit(model: Module, options: FitOptions): History {
  const op = "fit";
  if (!(model instanceof Module)) throw new ValueError(`takes an nn.Module, got ${typeof model}`, op);
  if (options === null || typeof options !== "object") throw new ValueError(`takes an options object`, op);
  checkOptions(op, options, FIT_KEYS);
  const { data, loss, optimizer } = options;
  if (typeof loss !== "function") throw new ValueError(`options.loss must be a function (output, labels) => scalar tensor`, op);
  if (!optimizer || typeof optimizer.minimize !== "function") throw new ValueError(`options.optimizer must be an optimizer (sc.optim.*)`, op);
  if (!data || typeof (data as Iterable<unknown>)[Symbol.iterator] !== "function") throw new ValueError(`options.data must be a dataset of [inputs, labels] batches`, op);
  // (a tensor iterates over its rows, which are not batches)
  if (data instanceof Tensor) throw new ValueError(`options.data must be a dataset of [inputs, labels] batches, got a tensor: make one with sc.data.Dataset.fromTensorSlices([x, y]).batch(n)`, op);
  const epochs = options.epochs ?? 1;
  if (!Number.isInteger(epochs) || epochs < 1) throw new ValueError(`epochs must be a positive integer, got ${epochs}`, op);
  const metrics = options.metrics ?? {};
  checkChoice(op, "progress", options.progress, PROGRESS_MODES);
  const callbacks = options.callbacks === undefined ? [] : Array.isArray(options.callbacks) ? options.callbacks : [options.callbacks];
  for (const c of callbacks) {
    checkOptions(`${op}: callbacks`, c, CALLBACK_KEYS);
    for (const k of CALLBACK_KEYS) if (c[k] !== undefined && typeof c[k] !== "function") throw new ValueError(`callbacks.${k} must be a function, got ${typeof c[k]}`, op);
  }
  const staged = options.stage ?? true;
  const train = staged ? stage(trainStep, { name: "fit_train_step", autograph: false }) : trainStep;
  const evaluate = staged ? stage(evalStep, { name: "fit_eval_step", autograph: false }) : evalStep;
  const size = (data as { size?: number }).size;
  const history: History = { epochs: [], steps: [], stepsPerSecond: [] };
  let step = 0;
  for (let epoch = 1; epoch <= epochs; epoch++) {
    model.train();
    const progress = new Progress({ label: `epoch ${epoch}/${epochs}`, total: size !== undefined && Number.isFinite(size) ? size : 0, mode: options.progress });
    const means: Record<string, Mean> = {};
    let batches = 0;
    const started = performance.now();
    for (const batch of data) {
      if (isThenable(batch)) {
        throw new ValueError(`batch ${batches} is a promise (an async map's): fit trains on values; take an async pipeline with for await (see Dataset.prefetch) and call a staged step`, op);
      }
      if (!Array.isArray(batch) || batch.length !== 2 || !(batch[0] instanceof Tensor) || !(batch[1] instanceof Tensor)) {
        throw new ValueError(`each batch must be [inputs, labels] tensors`, op);
      }
      const values = train(model, optimizer, loss, metrics, batch[0], batch[1]);
      const logs: Logs = {};
      for (const [k, t] of Object.entries(values)) {
        logs[k] = t.item() as number;
        (means[k] ??= new Mean()).update(logs[k], batch[0].shape[0]);
      }
      step++;
      batches++;
      history.steps.push(logs);
      progress.update(batches, logs);
      for (const c of callbacks) c.onStepEnd?.(step, logs);
    }
    progress.stop();
    history.stepsPerSecond.push(batches / ((performance.now() - started) / 1000));
    const epochLogs: Logs = Object.fromEntries(Object.entries(means).map(([k, m]) => [k, m.result()]));
    if (options.validationData) {
      model.eval();
      const val: Record<string, Mean> = {};
      for (const [x, y] of options.validationData) {
        if (!(x instanceof Tensor) || !(y instanceof Tensor)) throw new ValueError(`each validation batch must be [inputs, labels] tensors`, op);
        for (const [k, t] of Object.entries(evaluate(model, loss, metrics, x, y))) (val[`val_${k}`] ??= new Mean()).update(t, x.shape[0]);
      }
      model.train();
      for (const [k, m] of Object.entries(val)) epochLogs[k] = m.result();
    }
    history.epochs.push(epochLogs);
    if (options.progress !== "off") {
      console.log(`epoch ${epoch}/${epochs}: ${Object.entries(epochLogs).map(([k, v]) => `${k} ${v.toFixed(4)}`).join("  ")}`);
    }
    for (const c of callbacks) c.onEpochEnd?.(epoch, epochLogs);
  }
  return history;
}
