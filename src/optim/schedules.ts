/**
 * Learning-rate schedules, written with ops on the step count so they are computed inside a
 * staged function from the optimizer's `iterations` Variable (never a JS number frozen at
 * trace time). A schedule maps the 0-based step about to run (a float64 scalar tensor) to the
 * rate for that step (a float64 scalar tensor).
 */
import { ValueError } from "../core/errors.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { Tensor } from "../core/tensor.js";
import { add, div, maximum, minimum, mul, pow, sub } from "../ops/binary.js";
import { cast } from "../ops/cast.js";
import { scalar } from "../ops/creation.js";
import { cos, floor } from "../ops/unary.js";
import { where } from "../ops/where.js";
import { less } from "../ops/compare.js";
import { initScope } from "../staging/host.js";

export interface Schedule {
  /** The rate for step `step` (0 for the first step): float64 scalars in and out. */
  at(step: Tensor): Tensor;
  /** A readable description ("cosineDecay(0.001, 1000 steps, warm-up 100)"). */
  readonly description: string;
}

/** A constant rate, a Schedule, or a function from the step tensor (float64) to the rate, written with ops. */
export type LearningRate = number | Schedule | ((step: Tensor) => Tensor);

/** The schedule's rate at `step` as a number, computed eagerly (for plots and logs). */
export function scheduleValue(s: Schedule, step: number): number {
  return initScope(() => s.at(scalar(step, "float64")).item() as number);
}

function checkRate(op: string, name: string, v: unknown, positive = false): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (positive && v === 0)) {
    throw new ValueError(`${name} must be a finite number ${positive ? "> 0" : ">= 0"}, got ${String(v)}`, op);
  }
  return v;
}

function checkSteps(op: string, name: string, v: unknown, allowZero = false): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < (allowZero ? 0 : 1)) {
    throw new ValueError(`${name} must be an integer ${allowZero ? ">= 0" : ">= 1"}, got ${String(v)}`, op);
  }
  return v;
}

/** A schedule's options: an object (its required keys are checked one by one after) with known keys only. */
function scheduleOptions(op: string, o: unknown, known: readonly string[]): void {
  if (o === undefined) throw new ValueError(`takes an options object ({ ${known.join(", ")} })`, op);
  checkOptions(op, o, known);
}

/** Checks and wraps an optimizer's `learningRate` option. */
export function toSchedule(op: string, lr: LearningRate): Schedule {
  if (typeof lr === "number") return constant(checkRate(op, "learningRate", lr));
  if (typeof lr === "function") {
    return {
      description: `custom schedule ${lr.name || "(anonymous)"}`,
      at(step) {
        const r = lr(step);
        if (!(r instanceof Tensor)) {
          throw new ValueError(`a learning-rate function takes the step as a float64 tensor and must return a tensor (written with ops), got ${typeof r}`, op);
        }
        return cast(r, "float64");
      },
    };
  }
  if (lr !== null && typeof lr === "object" && typeof lr.at === "function") return lr;
  throw new ValueError(`learningRate must be a number, a schedule or a function of the step tensor, got ${String(lr)}`, op);
}

/** The same rate at every step. */
export function constant(rate: number): Schedule {
  checkRate("constant", "rate", rate);
  return { description: `${rate}`, at: () => scalar(rate, "float64") };
}

export interface StepDecayOptions {
  initial: number;
  /** Multiply the rate by `gamma` every `stepSize` steps. */
  stepSize: number;
  gamma: number;
}

/** initial * gamma^floor(step / stepSize) (PyTorch's StepLR). */
export function stepDecay(o: StepDecayOptions): Schedule {
  const op = "stepDecay";
  scheduleOptions(op, o, optionKeys<StepDecayOptions>()("initial", "stepSize", "gamma"));
  const initial = checkRate(op, "initial", o.initial);
  const stepSize = checkSteps(op, "stepSize", o.stepSize);
  const gamma = checkRate(op, "gamma", o.gamma);
  return {
    description: `stepDecay(${initial}, x${gamma} every ${stepSize} steps)`,
    at: (step) => mul(pow(scalar(gamma, "float64"), floor(div(step, stepSize))), initial),
  };
}

export interface ExponentialDecayOptions {
  initial: number;
  decayRate: number;
  decaySteps: number;
  /** Decay in whole intervals of decaySteps (default false: continuously). */
  staircase?: boolean;
}

/** initial * decayRate^(step / decaySteps) (Keras's ExponentialDecay). */
export function exponentialDecay(o: ExponentialDecayOptions): Schedule {
  const op = "exponentialDecay";
  scheduleOptions(op, o, optionKeys<ExponentialDecayOptions>()("initial", "decayRate", "decaySteps", "staircase"));
  const initial = checkRate(op, "initial", o.initial);
  const decayRate = checkRate(op, "decayRate", o.decayRate);
  const decaySteps = checkSteps(op, "decaySteps", o.decaySteps);
  const staircase = o.staircase ?? false;
  return {
    description: `exponentialDecay(${initial}, x${decayRate} per ${decaySteps} steps${staircase ? ", staircase" : ""})`,
    at(step) {
      const p = div(step, decaySteps);
      return mul(pow(scalar(decayRate, "float64"), staircase ? floor(p) : p), initial);
    },
  };
}

export interface CosineDecayOptions {
  /** The rate after warm-up. */
  initial: number;
  /** Steps of cosine decay after the warm-up. */
  decaySteps: number;
  /** The final rate as a fraction of `initial` (default 0). */
  alpha?: number;
  /** Steps of linear warm-up from `warmupFrom` to `initial` (default 0). */
  warmupSteps?: number;
  /** The rate at step 0 when warming up (default 0). */
  warmupFrom?: number;
}

/**
 * Linear warm-up over `warmupSteps` from `warmupFrom` to `initial`, then cosine decay over
 * `decaySteps` to `alpha * initial`, constant after (Keras's CosineDecay with warm-up):
 *
 *     step < W:  warmupFrom + (initial - warmupFrom) * step / W
 *     else:      initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step - W, D) / D)) + alpha)
 */
export function cosineDecay(o: CosineDecayOptions): Schedule {
  const op = "cosineDecay";
  scheduleOptions(op, o, optionKeys<CosineDecayOptions>()("initial", "decaySteps", "alpha", "warmupSteps", "warmupFrom"));
  const initial = checkRate(op, "initial", o.initial);
  const decaySteps = checkSteps(op, "decaySteps", o.decaySteps);
  const alpha = checkRate(op, "alpha", o.alpha ?? 0);
  if (alpha > 1) throw new ValueError(`alpha must be in [0, 1], got ${alpha}`, op);
  const warmupSteps = checkSteps(op, "warmupSteps", o.warmupSteps ?? 0, true);
  const warmupFrom = checkRate(op, "warmupFrom", o.warmupFrom ?? 0);
  return {
    description: `cosineDecay(${initial}, ${decaySteps} steps${warmupSteps > 0 ? `, warm-up ${warmupSteps} from ${warmupFrom}` : ""}${alpha > 0 ? `, alpha ${alpha}` : ""})`,
    at(step) {
      const s = minimum(maximum(sub(step, warmupSteps), 0), decaySteps);
      const decayed = mul(add(mul(add(cos(mul(div(s, decaySteps), Math.PI)), 1), 0.5 * (1 - alpha)), alpha), initial);
      if (warmupSteps === 0) return decayed;
      const warm = add(mul(div(step, warmupSteps), initial - warmupFrom), warmupFrom);
      return where(less(step, warmupSteps), warm, decayed);
    },
  };
}
