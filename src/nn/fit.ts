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
 *
 * With a `sc.distributed.DistributedOptimizer` (a data-parallel job under mpirun) it also starts
 * every rank from rank 0's weights, logs epoch values over all ranks and prints on rank 0 only:
 * data-parallel.ts.
 */
import { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { stage } from "../staging/stage.js";
import { concat } from "../ops/shape/join.js";
import { slice } from "../ops/shape/slice.js";
import type { Optimizer } from "../optim/optimizer.js";
import type { Dataset } from "../data/dataset.js";
import { Module } from "./module.js";
import { Progress, PROGRESS_MODES, type ProgressOptions } from "./progress.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { batchParts, checkMetrics, inEvalMode, makeEvalStep, meanOver, metricStepValue, StepTotals, type BatchFunction, type Metric } from "./evaluate.js";
import { checkCallback, type Callback, type FitCallbacks, type FitControl, type Logs } from "./callbacks.js";
import { classWeightTable, classWeightsOf, refuseSampleWeightOption, weightedLoss, type ClassWeight } from "./sample-weights.js";
import { mul } from "../ops/binary.js";
import { anyRank, broadcastFromRoot, checkSameBatchCount, dataParallelJob, meanOverRanks, sumOverRanks } from "./data-parallel.js";

export type { BatchFunction, Metric } from "./evaluate.js";
export type { FitCallbacks, FitControl, Logs } from "./callbacks.js";
export type { ClassWeight } from "./sample-weights.js";

export interface FitOptions {
  /**
   * Batches of [inputs, labels], or [inputs, labels, sampleWeights]: the loss is then
   * sum(w * l) / rows (Keras's sample_weight; see sample-weights.ts). Metrics stay unweighted.
   */
  data: Iterable<readonly Tensor[]> | Dataset<readonly Tensor[]>;
  loss: BatchFunction;
  optimizer: Optimizer;
  /** Default 1. */
  epochs?: number;
  /** Named metrics of (output, labels), averaged over each epoch (CountingMetrics such as Precision: counts summed over it). */
  metrics?: Record<string, Metric>;
  /** Batches to evaluate after each epoch (in eval mode, as `evaluate` does): "val_loss", "val_" + each metric. */
  validationData?: Iterable<readonly Tensor[]>;
  /**
   * A fraction in (0, 1): the last rows of the data (as Keras: before any shuffling of fit's, which
   * there is none) are held out and evaluated after each epoch. The data is read once, split at
   * floor(rows * (1 - validationSplit)), and both parts are batched as the first batch was.
   */
  validationSplit?: number;
  /** Stage the training step (default true). */
  stage?: boolean;
  /** Progress output (default "auto": a bar in a terminal, lines otherwise). */
  progress?: ProgressOptions["mode"];
  /**
   * Weights by class index ({ 0: 1, 1: 5 } or [1, 5]) for the training loss (not validation, as
   * Keras's class_weight): each row weighs its label's class weight (classes not named weigh 1),
   * times its sample weight if the batch has one.
   */
  classWeight?: ClassWeight;
  /** Callbacks (EarlyStopping, TerminateOnNaN, ModelCheckpoint, ReduceLROnPlateau, or objects of hooks: see callbacks.ts). */
  callbacks?: FitCallbacks | Callback | (FitCallbacks | Callback)[];
}

export interface History {
  /** Per epoch: mean loss, metrics, and validation values. */
  epochs: Logs[];
  /** Per step: the batch's loss and metrics. */
  steps: Logs[];
  /** Steps per second of each epoch (the first includes tracing). */
  stepsPerSecond: number[];
  /** How many times the training step was traced (0 when not staged): one per kind of batch, unless something forced a retrace. */
  traceCount: number;
}

const FIT_KEYS = optionKeys<FitOptions>()("data", "loss", "optimizer", "epochs", "metrics", "validationData", "validationSplit", "stage", "progress", "classWeight", "callbacks");

/**
 * One step: loss and metrics of the batch, after the optimizer's update. With sample weights or
 * a class-weight table the loss differentiated is the weighted one (sample-weights.ts).
 */
function trainStep(model: Module, optimizer: Optimizer, loss: BatchFunction, metrics: Record<string, Metric>, x: Tensor, y: Tensor, sampleWeights: Tensor | null, classTable: Tensor | null): Record<string, Tensor> {
  let output: Tensor | null = null;
  const value = optimizer.minimize(() => {
    output = model.call(x) as Tensor;
    let w = sampleWeights;
    if (classTable !== null) {
      const byClass = classWeightsOf(classTable, y);
      w = w === null ? byClass : mul(byClass, w);
    }
    return w === null ? loss(output, y) : weightedLoss("fit", loss, output, y, w);
  }, () => model.parameters());
  const out: Record<string, Tensor> = { loss: value };
  for (const [name, m] of Object.entries(metrics)) out[name] = metricStepValue(m, output!, y);
  return out;
}

/**
 * Reads `data` once and splits its rows: the first floor(rows * (1 - fraction)) for training, the
 * rest for validation, each batched as the first batch was (Keras's validation_split).
 */
function splitRows(data: Iterable<readonly Tensor[]>, fraction: number, op: string): [train: Tensor[][], validation: Tensor[][]] {
  const parts: Tensor[][] = [[], [], []];
  let i = 0;
  for (const batch of data) {
    const [x, y, w] = batchParts(batch, i, op);
    if ((w === null) !== (parts[2]!.length === 0) && i > 0) throw new ValueError(`batch ${i} ${w === null ? "has no" : "has"} sample weights and batch 0 ${w === null ? "has" : "has none"}: validationSplit needs all or none`, op);
    parts[0]!.push(x);
    parts[1]!.push(y);
    if (w !== null) parts[2]!.push(w);
    i++;
  }
  if (i === 0) throw new ValueError(`options.data has no batches`, op);
  const whole = parts.filter((p) => p.length > 0).map((p) => (p.length === 1 ? p[0]! : concat(p, 0)));
  const rows = whole[0]!.shape[0]!;
  if (whole[1]!.shape[0] !== rows) throw new ValueError(`inputs have ${rows} rows and labels ${whole[1]!.shape[0]}: validationSplit splits rows`, op);
  const at = Math.floor(rows * (1 - fraction));
  if (at === 0 || at === rows) throw new ValueError(`validationSplit ${fraction} of ${rows} rows leaves ${at === 0 ? "no training" : "no validation"} rows`, op);
  const size = parts[0]![0]!.shape[0]!;
  const batches = (from: number, to: number): Tensor[][] => {
    const out: Tensor[][] = [];
    for (let b = from; b < to; b += size) {
      const e = Math.min(b + size, to);
      out.push(whole.map((t) => slice(t, [b], [e])));
    }
    return out;
  };
  return [batches(0, at), batches(at, rows)];
}

/** Trains `model` and returns the history. The model is left in train mode. */
export function fit(model: Module, options: FitOptions): History {
  const op = "fit";
  if (!(model instanceof Module)) throw new ValueError(`takes an nn.Module, got ${typeof model}`, op);
  if (options === null || typeof options !== "object") throw new ValueError(`takes an options object`, op);
  refuseSampleWeightOption(op, options);
  checkOptions(op, options, FIT_KEYS);
  const { loss, optimizer } = options;
  if (typeof loss !== "function") throw new ValueError(`options.loss must be a function (output, labels) => scalar tensor`, op);
  if (!optimizer || typeof optimizer.minimize !== "function") throw new ValueError(`options.optimizer must be an optimizer (sc.optim.*)`, op);
  if (!options.data || typeof (options.data as Iterable<unknown>)[Symbol.iterator] !== "function") throw new ValueError(`options.data must be a dataset of [inputs, labels] batches`, op);
  // (a tensor iterates over its rows, which are not batches)
  if (options.data instanceof Tensor) throw new ValueError(`options.data must be a dataset of [inputs, labels] batches, got a tensor: make one with sc.data.Dataset.fromTensorSlices([x, y]).batch(n)`, op);
  const epochs = options.epochs ?? 1;
  if (!Number.isInteger(epochs) || epochs < 1) throw new ValueError(`epochs must be a positive integer, got ${epochs}`, op);
  const metrics = checkMetrics(options.metrics, op);
  checkChoice(op, "progress", options.progress, PROGRESS_MODES);
  const classTable = options.classWeight === undefined ? null : classWeightTable(op, options.classWeight);
  const callbacks = (options.callbacks === undefined ? [] : Array.isArray(options.callbacks) ? options.callbacks : [options.callbacks]).map((c) => checkCallback(op, c));
  const split = options.validationSplit;
  if (split !== undefined) {
    if (!(typeof split === "number" && split > 0 && split < 1)) throw new ValueError(`validationSplit must be a number in (0, 1), got ${String(split)}`, op);
    if (options.validationData !== undefined) throw new ValueError(`takes validationData or validationSplit, not both`, op);
  }
  if (options.validationData !== undefined && (options.validationData instanceof Tensor || typeof (options.validationData as Iterable<unknown>)[Symbol.iterator] !== "function")) {
    throw new ValueError(`options.validationData must be a dataset of [inputs, labels] batches`, op);
  }
  const [data, validationData] = split === undefined ? [options.data, options.validationData] : splitRows(options.data, split, op);
  const staged = options.stage ?? true;
  const stagedTrain = staged ? stage(trainStep, { name: "fit_train_step", autograph: false }) : null;
  const train = stagedTrain ?? trainStep;
  const evaluate = makeEvalStep(staged);
  const size = (data as { size?: number }).size ?? (Array.isArray(data) ? data.length : undefined);
  // (a DistributedOptimizer: a data-parallel job, see data-parallel.ts)
  const job = dataParallelJob(optimizer);
  const everyVariable = () => [...model.variables(), ...optimizer.stateVariables()];
  // (the model's variables at the start; layers that build on their first call add theirs in step 1)
  let builtBefore = -1;
  if (job) {
    checkSameBatchCount(size, op);
    broadcastFromRoot(everyVariable());
    builtBefore = model.variables().length;
  }
  const stepHooks = callbacks.some((c) => c.onStepEnd !== undefined);
  const quiet = options.progress === "off" || (job !== null && job.rank !== 0);
  const history: History = { epochs: [], steps: [], stepsPerSecond: [], traceCount: 0 };
  const control: FitControl = { model, optimizer, stopTraining: false };
  for (const c of callbacks) c.onTrainBegin?.(control);
  let step = 0;
  // Train mode for the epochs, the children's own modes kept: a model in eval mode is put in
  // train mode, but a child the user put in eval mode (a frozen batch norm) stays so, as with
  // PyTorch's model.train() before the loop and bn.eval() after it. The modes go back after.
  const restoreModes = model.saveModes();
  if (!model.training) model.train();
  const restoreTrainModes = model.saveModes();
  for (let epoch = 1; epoch <= epochs && !control.stopTraining; epoch++) {
    restoreTrainModes();
    for (const c of callbacks) c.onEpochBegin?.(epoch, control);
    const progress = new Progress({ label: `epoch ${epoch}/${epochs}`, total: size !== undefined && Number.isFinite(size) ? size : 0, mode: quiet ? "off" : options.progress });
    const totals = new StepTotals(metrics);
    let batches = 0;
    const started = performance.now();
    for (const batch of data) {
      const [x, y, w] = batchParts(batch, batches, op);
      const values = train(model, optimizer, loss, metrics, x, y, w, classTable);
      const logs: Logs = {};
      for (const [k, t] of Object.entries(values)) logs[k] = totals.value(k, t);
      totals.update(values, x.shape[0]!);
      step++;
      batches++;
      history.steps.push(logs);
      progress.update(batches, logs);
      if (step === 1 && job && model.variables().length !== builtBefore) broadcastFromRoot(everyVariable());
      for (const c of callbacks) c.onStepEnd?.(step, logs, control);
      if (job && stepHooks) control.stopTraining = anyRank(control.stopTraining);
      if (control.stopTraining) break;
    }
    progress.stop();
    history.stepsPerSecond.push(batches / ((performance.now() - started) / 1000));
    const epochLogs: Logs = job ? totals.resultOverRanks(sumOverRanks) : totals.result();
    if (validationData) {
      const val = inEvalMode(model, () => meanOver(model, evaluate, validationData, loss, metrics, op, "val_", "validation batch"));
      Object.assign(epochLogs, job ? meanOverRanks(val) : val);
    }
    history.epochs.push(epochLogs);
    if (!quiet) {
      console.log(`epoch ${epoch}/${epochs}: ${Object.entries(epochLogs).map(([k, v]) => `${k} ${v.toFixed(4)}`).join("  ")}`);
    }
    for (const c of callbacks) c.onEpochEnd?.(epoch, epochLogs, control);
    if (job) control.stopTraining = anyRank(control.stopTraining);
  }
  history.traceCount = stagedTrain?.traceCount ?? 0;
  for (const c of callbacks) c.onTrainEnd?.(history.epochs[history.epochs.length - 1] ?? {}, control);
  restoreModes();
  return history;
}
