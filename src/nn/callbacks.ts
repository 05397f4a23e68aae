/**
 * Callbacks for `fit`: objects with hooks called at the start and end of training, of each
 * epoch and after each step. Each hook gets the training's `FitControl` last: the model, and
 * `stopTraining`, which a callback sets to end training (after the current step; the epoch's
 * end hooks still run, as Keras's `model.stop_training`).
 *
 * A plain object with some of the hooks is a callback too (its keys are checked); subclasses of
 * `Callback` keep their own state in fields, so their keys are not.
 */
import { ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import type { Tensor } from "../core/tensor.js";
import type { Optimizer } from "../optim/optimizer.js";
import { save } from "../io/checkpoint.js";
import type { Module } from "./module.js";
import { saveModel } from "./save-model.js";

/** Values logged after a step or an epoch: "loss", each metric, and "val_..." after validation. */
export type Logs = Record<string, number>;

/** What a callback can see and change of the training in progress. */
export interface FitControl {
  readonly model: Module;
  /** The optimizer fit steps with (ReduceLROnPlateau sets its learningRateScale). */
  readonly optimizer: Optimizer;
  /** Set to true to end training after the current step (the epoch's end hooks still run). */
  stopTraining: boolean;
}

export interface FitCallbacks {
  onTrainBegin?(control: FitControl): void;
  /** After the last epoch (or a stop): the last epoch's values. */
  onTrainEnd?(logs: Logs, control: FitControl): void;
  /** Before each epoch: its 1-based number. */
  onEpochBegin?(epoch: number, control: FitControl): void;
  /** After every step: the 1-based step number (over all epochs) and the batch's values. */
  onStepEnd?(step: number, logs: Logs, control: FitControl): void;
  /** After every epoch: the 1-based epoch and the epoch's mean values (and validation values). */
  onEpochEnd?(epoch: number, logs: Logs, control: FitControl): void;
}

export const CALLBACK_KEYS = optionKeys<FitCallbacks>()("onTrainBegin", "onTrainEnd", "onEpochBegin", "onStepEnd", "onEpochEnd");

/** A base for stateful callbacks: override the hooks you need. */
export abstract class Callback implements FitCallbacks {}

/** Checks one entry of fit's `callbacks` (a Callback, or a plain object of hooks). */
export function checkCallback(op: string, c: unknown): FitCallbacks {
  if (!(c instanceof Callback)) checkOptions(`${op}: callbacks`, c, CALLBACK_KEYS);
  if (c === null || typeof c !== "object") throw new ValueError(`each callback must be an object with hooks (onEpochEnd, ...), got ${c === null ? "null" : typeof c}`, op);
  for (const k of CALLBACK_KEYS) {
    const h = (c as Record<string, unknown>)[k];
    if (h !== undefined && typeof h !== "function") throw new ValueError(`callbacks.${k} must be a function, got ${typeof h}`, op);
  }
  return c as FitCallbacks;
}

const MODES = ["min", "max", "auto"] as const;

/** Checks a `monitor` option (default `fallback`). */
function checkMonitor(op: string, monitor: unknown, fallback: string): string {
  const m = monitor ?? fallback;
  if (typeof m !== "string" || m === "") throw new ValueError(`monitor must be the name of a logged value ("loss", "val_loss", a metric), got ${String(m)}`, op);
  return m;
}

/** "min" or "max" for a `mode` option: "auto" is "max" when the monitored name holds "acc" (as Keras). */
function resolveMode(op: string, mode: unknown, monitor: string): "min" | "max" {
  const m = checkChoice(op, "mode", mode as "min" | "max" | "auto" | undefined, MODES) ?? "auto";
  return m === "auto" ? (monitor.includes("acc") ? "max" : "min") : m;
}

/** The monitored value of an epoch's logs, or a ValueError naming what was logged. */
function monitored(op: string, monitor: string, logs: Logs): number {
  const value = logs[monitor];
  if (value === undefined) {
    throw new ValueError(`monitor ${JSON.stringify(monitor)} is not among the logged values (${Object.keys(logs).join(", ")})${monitor.startsWith("val_") ? "; val_ values need validationData or validationSplit" : ""}`, op);
  }
  return value;
}

/** Whether `value` improves on `best` by more than `minDelta` (NaN never does; the first value, best NaN, always does). */
function improves(mode: "min" | "max", value: number, best: number, minDelta: number): boolean {
  if (Number.isNaN(value)) return false;
  if (Number.isNaN(best)) return true;
  return mode === "min" ? value + minDelta < best : value - minDelta > best;
}

function checkCount(op: string, name: string, v: unknown, fallback: number): number {
  const n = v ?? fallback;
  if (!(Number.isInteger(n) && (n as number) >= 0)) throw new ValueError(`${name} must be an integer >= 0, got ${String(n)}`, op);
  return n as number;
}

function checkFlag(op: string, name: string, v: unknown): boolean {
  if (v !== undefined && typeof v !== "boolean") throw new ValueError(`${name} must be a boolean, got ${typeof v}`, op);
  return v ?? false;
}

export interface EarlyStoppingOptions {
  /** The logged value to watch: "loss", "val_loss" (the default, as Keras), a metric, "val_" + a metric. */
  monitor?: string;
  /** The least change that counts as an improvement (default 0). */
  minDelta?: number;
  /** Epochs without improvement after which training stops (default 0; as Keras, 0 and 1 both stop at the first such epoch). */
  patience?: number;
  /** "min", "max", or "auto" (default: "max" when the name holds "acc", "min" otherwise). */
  mode?: "min" | "max" | "auto";
  /** At the end of training, set every variable of the model to its values at the best epoch (default false). */
  restoreBestWeights?: boolean;
}

const EARLY_STOPPING_KEYS = optionKeys<EarlyStoppingOptions>()("monitor", "minDelta", "patience", "mode", "restoreBestWeights");

/** Stops training when the monitored value has not improved for `patience` epochs (Keras's EarlyStopping). */
export class EarlyStopping extends Callback {
  readonly monitor: string;
  readonly minDelta: number;
  readonly patience: number;
  readonly mode: "min" | "max";
  readonly restoreBestWeights: boolean;
  /** The best value so far, and its 1-based epoch (0 before any). */
  best = Number.NaN;
  bestEpoch = 0;
  /** The epoch training was stopped after (0 when it was not). */
  stoppedEpoch = 0;
  private wait = 0;
  private bestWeights: Tensor[] | null = null;

  constructor(options: EarlyStoppingOptions = {}) {
    super();
    const op = "EarlyStopping";
    checkOptions(op, options, EARLY_STOPPING_KEYS);
    this.monitor = checkMonitor(op, options.monitor, "val_loss");
    this.mode = resolveMode(op, options.mode, this.monitor);
    this.minDelta = options.minDelta ?? 0;
    if (!(typeof this.minDelta === "number" && this.minDelta >= 0)) throw new ValueError(`minDelta must be a number >= 0, got ${String(this.minDelta)}`, op);
    this.patience = checkCount(op, "patience", options.patience, 0);
    this.restoreBestWeights = checkFlag(op, "restoreBestWeights", options.restoreBestWeights);
  }

  onTrainBegin(): void {
    this.best = Number.NaN;
    this.bestEpoch = 0;
    this.stoppedEpoch = 0;
    this.wait = 0;
    this.bestWeights = null;
  }

  onEpochEnd(epoch: number, logs: Logs, control: FitControl): void {
    const value = monitored("EarlyStopping", this.monitor, logs);
    if (improves(this.mode, value, this.best, this.minDelta)) {
      this.best = value;
      this.bestEpoch = epoch;
      this.wait = 0;
      if (this.restoreBestWeights) this.bestWeights = control.model.variables().map((v) => v.peek());
      return;
    }
    this.wait++;
    if (this.wait >= this.patience) {
      this.stoppedEpoch = epoch;
      control.stopTraining = true;
    }
  }

  onTrainEnd(_logs: Logs, control: FitControl): void {
    if (!this.restoreBestWeights || this.bestWeights === null) return;
    const vars = control.model.variables();
    vars.forEach((v, i) => v.setValue(this.bestWeights![i]!, "EarlyStopping"));
  }
}

/** Stops training after a step whose loss is NaN or infinite (Keras's TerminateOnNaN). */
export class TerminateOnNaN extends Callback {
  /** The step whose loss was not finite (0 when none was). */
  stoppedStep = 0;
  onStepEnd(step: number, logs: Logs, control: FitControl): void {
    const loss = logs.loss;
    if (loss !== undefined && !Number.isFinite(loss)) {
      this.stoppedStep = step;
      control.stopTraining = true;
    }
  }
}

export interface ModelCheckpointOptions {
  /**
   * Where to save: a folder for saveModel (model.json + weights.safetensors), or with weightsOnly a
   * checkpoint file (sc.io.save of the model; sc.io.restore(model, path) reads it back).
   * "{epoch}" in it is replaced by the 1-based epoch, so each save can keep its own copy.
   */
  path: string;
  /** The logged value saveBestOnly watches (default "val_loss", as Keras). */
  monitor?: string;
  /** Save only when the monitored value improves on the best so far (default false: every epoch). */
  saveBestOnly?: boolean;
  /** "min", "max", or "auto" (default: "max" when the name holds "acc", "min" otherwise). */
  mode?: "min" | "max" | "auto";
  /**
   * Save the weights only, as an object-based checkpoint file (default false: the whole model by
   * saveModel, which needs built-in or registered layer classes; a Module subclass of your own
   * saves with weightsOnly).
   */
  weightsOnly?: boolean;
}

const MODEL_CHECKPOINT_KEYS = optionKeys<ModelCheckpointOptions>()("path", "monitor", "saveBestOnly", "mode", "weightsOnly");

/**
 * Saves the model at the end of each epoch, or with saveBestOnly of each epoch whose monitored
 * value improves (Keras's ModelCheckpoint). Writes are atomic per file, so an interrupted
 * training leaves the last complete save.
 */
export class ModelCheckpoint extends Callback {
  readonly path: string;
  readonly monitor: string;
  readonly saveBestOnly: boolean;
  readonly mode: "min" | "max";
  readonly weightsOnly: boolean;
  /** The best monitored value so far (NaN before any; kept with saveBestOnly only), and its 1-based epoch. */
  best = Number.NaN;
  bestEpoch = 0;
  /** The epochs saved, and the path each went to. */
  readonly saved: { epoch: number; path: string }[] = [];

  constructor(options: ModelCheckpointOptions) {
    super();
    const op = "ModelCheckpoint";
    if (options === null || typeof options !== "object") throw new ValueError(`takes an options object ({ path, monitor, saveBestOnly, mode, weightsOnly })`, op);
    checkOptions(op, options, MODEL_CHECKPOINT_KEYS);
    if (typeof options.path !== "string" || options.path === "") throw new ValueError(`path must be a non-empty string (a folder, or a file with weightsOnly), got ${String(options.path)}`, op);
    this.path = options.path;
    this.monitor = checkMonitor(op, options.monitor, "val_loss");
    this.mode = resolveMode(op, options.mode, this.monitor);
    this.saveBestOnly = checkFlag(op, "saveBestOnly", options.saveBestOnly);
    this.weightsOnly = checkFlag(op, "weightsOnly", options.weightsOnly);
  }

  onTrainBegin(): void {
    this.best = Number.NaN;
    this.bestEpoch = 0;
    this.saved.length = 0;
  }

  onEpochEnd(epoch: number, logs: Logs, control: FitControl): void {
    if (this.saveBestOnly) {
      const value = monitored("ModelCheckpoint", this.monitor, logs);
      if (!improves(this.mode, value, this.best, 0)) return;
      this.best = value;
      this.bestEpoch = epoch;
    }
    const path = this.path.replaceAll("{epoch}", String(epoch));
    if (this.weightsOnly) save(control.model, path);
    else saveModel(control.model, path);
    this.saved.push({ epoch, path });
  }
}

export interface ReduceLROnPlateauOptions {
  /** The logged value to watch (default "val_loss", as Keras). */
  monitor?: string;
  /** The rate is multiplied by this, in (0, 1) (default 0.1). */
  factor?: number;
  /** Epochs without improvement after which the rate is lowered (default 10). */
  patience?: number;
  /** "min", "max", or "auto" (default: "max" when the name holds "acc", "min" otherwise). */
  mode?: "min" | "max" | "auto";
  /** The least change that counts as an improvement (default 1e-4, as Keras). */
  minDelta?: number;
  /** Epochs after a reduction during which no epoch counts as one without improvement (default 0). */
  cooldown?: number;
  /** The rate is never lowered below this (default 0). */
  minLr?: number;
}

const REDUCE_LR_KEYS = optionKeys<ReduceLROnPlateauOptions>()("monitor", "factor", "patience", "mode", "minDelta", "cooldown", "minLr");

/**
 * Lowers the learning rate when the monitored value has not improved for `patience` epochs
 * (Keras's ReduceLROnPlateau): rate = max(rate * factor, minLr), then `cooldown` epochs of
 * rest. "The rate" is the optimizer's currentLearningRate(); the reduction is made by setting
 * the optimizer's learningRateScale, which a staged step reads when it runs (no retrace), and
 * which multiplies a schedule too (the schedule keeps its shape, scaled). Each epoch's logs (and
 * so `history.epochs`) get `learning_rate`: the rate that epoch trained with.
 */
export class ReduceLROnPlateau extends Callback {
  readonly monitor: string;
  readonly factor: number;
  readonly patience: number;
  readonly mode: "min" | "max";
  readonly minDelta: number;
  readonly cooldown: number;
  readonly minLr: number;
  /** The best value so far (NaN before any). */
  best = Number.NaN;
  /** Each reduction: the 1-based epoch after which it was made, and the rates before and after. */
  readonly reductions: { epoch: number; from: number; to: number }[] = [];
  private wait = 0;
  private cooldownLeft = 0;

  constructor(options: ReduceLROnPlateauOptions = {}) {
    super();
    const op = "ReduceLROnPlateau";
    checkOptions(op, options, REDUCE_LR_KEYS);
    this.monitor = checkMonitor(op, options.monitor, "val_loss");
    this.mode = resolveMode(op, options.mode, this.monitor);
    this.factor = options.factor ?? 0.1;
    if (!(typeof this.factor === "number" && this.factor > 0 && this.factor < 1)) throw new ValueError(`factor must be a number in (0, 1), got ${String(this.factor)}`, op);
    this.patience = checkCount(op, "patience", options.patience, 10);
    this.minDelta = options.minDelta ?? 1e-4;
    if (!(typeof this.minDelta === "number" && this.minDelta >= 0)) throw new ValueError(`minDelta must be a number >= 0, got ${String(this.minDelta)}`, op);
    this.cooldown = checkCount(op, "cooldown", options.cooldown, 0);
    this.minLr = options.minLr ?? 0;
    if (!(typeof this.minLr === "number" && this.minLr >= 0 && Number.isFinite(this.minLr))) throw new ValueError(`minLr must be a finite number >= 0, got ${String(this.minLr)}`, op);
  }

  onTrainBegin(): void {
    this.best = Number.NaN;
    this.wait = 0;
    this.cooldownLeft = 0;
    this.reductions.length = 0;
  }

  onEpochEnd(epoch: number, logs: Logs, control: FitControl): void {
    const value = monitored("ReduceLROnPlateau", this.monitor, logs);
    // Logged as Keras does: the rate this epoch trained with (before any reduction below), so
    // history.epochs shows when the rate fell.
    logs.learning_rate = control.optimizer.currentLearningRate();
    if (this.cooldownLeft > 0) {
      this.cooldownLeft--;
      this.wait = 0;
    }
    if (improves(this.mode, value, this.best, this.minDelta)) {
      this.best = value;
      this.wait = 0;
      return;
    }
    if (this.cooldownLeft > 0) return;
    this.wait++;
    if (this.wait < this.patience) return;
    const { optimizer } = control;
    const from = optimizer.currentLearningRate();
    // (relative slack: a rate set to minLr and read back through the scale may come out a rounding above it)
    if (from - this.minLr > 1e-12 * from) {
      const to = Math.max(from * this.factor, this.minLr);
      const scale = optimizer.learningRateScale.item() as number;
      optimizer.setLearningRateScale((scale * to) / from);
      this.reductions.push({ epoch, from, to });
      this.cooldownLeft = this.cooldown;
      this.wait = 0;
    }
  }
}
