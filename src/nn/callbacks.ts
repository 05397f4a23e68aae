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
import type { Module } from "./module.js";

/** Values logged after a step or an epoch: "loss", each metric, and "val_..." after validation. */
export type Logs = Record<string, number>;

/** What a callback can see and change of the training in progress. */
export interface FitControl {
  readonly model: Module;
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
const MODES = ["min", "max", "auto"] as const;

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
    const mode = checkChoice(op, "mode", options.mode, MODES) ?? "auto";
    this.monitor = options.monitor ?? "val_loss";
    if (typeof this.monitor !== "string" || this.monitor === "") throw new ValueError(`monitor must be the name of a logged value ("loss", "val_loss", a metric), got ${String(this.monitor)}`, op);
    this.minDelta = options.minDelta ?? 0;
    if (!(typeof this.minDelta === "number" && this.minDelta >= 0)) throw new ValueError(`minDelta must be a number >= 0, got ${String(this.minDelta)}`, op);
    this.patience = options.patience ?? 0;
    if (!(Number.isInteger(this.patience) && this.patience >= 0)) throw new ValueError(`patience must be an integer >= 0, got ${String(this.patience)}`, op);
    this.restoreBestWeights = options.restoreBestWeights ?? false;
    if (typeof this.restoreBestWeights !== "boolean") throw new ValueError(`restoreBestWeights must be a boolean, got ${typeof this.restoreBestWeights}`, op);
    this.mode = mode === "auto" ? (this.monitor.includes("acc") ? "max" : "min") : mode;
  }

  private improves(value: number): boolean {
    if (Number.isNaN(value)) return false;
    if (this.bestEpoch === 0) return true;
    return this.mode === "min" ? value + this.minDelta < this.best : value - this.minDelta > this.best;
  }

  onTrainBegin(): void {
    this.best = Number.NaN;
    this.bestEpoch = 0;
    this.stoppedEpoch = 0;
    this.wait = 0;
    this.bestWeights = null;
  }

  onEpochEnd(epoch: number, logs: Logs, control: FitControl): void {
    const value = logs[this.monitor];
    if (value === undefined) {
      throw new ValueError(`monitor ${JSON.stringify(this.monitor)} is not among the logged values (${Object.keys(logs).join(", ")})${this.monitor.startsWith("val_") ? "; val_ values need validationData or validationSplit" : ""}`, "EarlyStopping");
    }
    if (this.improves(value)) {
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
