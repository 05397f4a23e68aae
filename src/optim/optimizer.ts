/**
 * The optimizer base class: validation, the step counter, slot state, learning-rate schedules,
 * gradient clipping and `minimize`. Concrete rules (SGD, Adam, RMSprop, Adagrad) implement
 * `updateOne`.
 *
 * ```ts
 * const opt = new sc.optim.Adam({ learningRate: sc.optim.cosineDecay({ initial: 1e-3, decaySteps: 1000 }) });
 * // 1. compute and apply in one call
 * const loss = opt.minimize(() => lossOf(model), model.parameters());
 * // 2. or from gradients you computed yourself (same order as the variables)
 * opt.step([gw, gb], [w, b]);
 * // 3. or TF-style (gradient, variable) pairs
 * opt.applyGradients([[gw, w], [gb, b]]);
 * ```
 *
 * All state is Variables: the step count (`iterations`, int32), the learning rate of the step
 * that ran last (`learningRateVariable`, float64), a factor on the schedule
 * (`learningRateScale`, float64, 1 at first: what ReduceLROnPlateau lowers), and the slots
 * (Adam's m and v, ...). Updates
 * are written with ops that read them, so a step gives the same numbers eagerly, inside
 * `sc.stage`, and in a staged loop over steps: nothing is a JS number read at trace time.
 * Variables the optimizer makes (slots on a variable's first update) are made eagerly, outside
 * any trace (`sc.initScope`), and are part of checkpoints (the optimizer is a Trackable).
 *
 * Updates replace each variable's value (never its storage) and are not recorded by gradient
 * tapes. A `null` gradient (a variable the loss does not depend on) leaves that variable and
 * its slots unchanged.
 */
import { withoutRecorders } from "../core/context.js";
import { isFloat, type DType } from "../core/dtype.js";
import { DtypeError, GradientError, ShapeError, ValueError } from "../core/errors.js";
import { fmtShape, shapesEqual } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import { Variable, variable } from "../core/variable.js";
import { GradientTape } from "../ad/tape.js";
import { add, mul } from "../ops/binary.js";
import { cast } from "../ops/cast.js";
import { scalar } from "../ops/creation.js";
import { zerosLikeTensor, full } from "../ops/fill.js";
import { initScope } from "../staging/host.js";
import "../ops/variable-updates.js";
import { Trackable } from "../io/trackable.js";
import { clipByGlobalNorm } from "./clip.js";
import { toSchedule, type LearningRate, type Schedule } from "./schedules.js";

/** One (gradient, variable) pair, as TensorFlow's `apply_gradients` takes them. */
export type GradientPair = readonly [Tensor | null, Variable];

export interface OptimizerOptions {
  /** Step size (default depends on the optimizer), or a schedule (see schedules.ts). */
  learningRate?: LearningRate;
  /** Clip the gradients to this global norm before each update (Keras's `global_clipnorm`). */
  clipNorm?: number;
}

/** Checks that a hyperparameter is a finite number in the given range (inclusive unless noted). */
export function checkHyper(op: string, name: string, value: unknown, lo: number, hi: number, loOpen = false, hiOpen = false): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new ValueError(`${name} must be a finite number, got ${String(value)}`, op);
  }
  const belowLo = loOpen ? value <= lo : value < lo;
  const aboveHi = hiOpen ? value >= hi : value > hi;
  if (belowLo || aboveHi) {
    throw new ValueError(`${name} must be in ${loOpen ? "(" : "["}${lo}, ${hi}${hiOpen ? ")" : "]"}, got ${value}`, op);
  }
  return value;
}

/**
 * What one step's update of one variable reads: the learning rate and the 1-based step number
 * (both scalars of the variable's dtype, computed once per step and dtype).
 */
export interface StepValues {
  lr: Tensor;
  /** The step being taken, counting from 1. */
  t: Tensor;
}

export abstract class Optimizer extends Trackable {
  /** Name used in error messages ("SGD", "Adam"). */
  readonly name: string;
  /** The learning-rate schedule (a constant rate is a constant schedule). */
  readonly schedule: Schedule;
  /** Clip gradients to this global norm first (undefined: no clipping). */
  readonly clipNorm: number | undefined;
  /** Number of completed steps (int32 Variable); schedules read it. */
  readonly iterations: Variable;
  /** The learning rate the last step used (float64 Variable; the initial rate before any step). */
  readonly learningRateVariable: Variable;
  /**
   * A factor on the schedule (float64 Variable, 1 at first): each step's rate is
   * `schedule(iterations) * learningRateScale`. A staged step reads it when it runs, so changing
   * it (setLearningRateScale, ReduceLROnPlateau) takes effect at the next step without a retrace.
   * Checkpoints hold it; one written before it existed restores it to 1.
   */
  readonly learningRateScale: Variable;
  /** Slot names this optimizer keeps per variable, e.g. ["m", "v"] for Adam. */
  abstract readonly slotNames: readonly string[];
  private readonly slots = new Map<Variable, Map<string, Variable>>();

  protected constructor(name: string, options: OptimizerOptions, defaultRate: number) {
    super();
    this.name = name;
    this.schedule = toSchedule(name, options.learningRate ?? defaultRate);
    if (options.clipNorm !== undefined) checkHyper(name, "clipNorm", options.clipNorm, 0, Infinity, true);
    this.clipNorm = options.clipNorm;
    const { iterations, rate, scale } = initScope(() => ({
      iterations: variable(scalar(0, "int32"), { name: "iterations", trainable: false }),
      rate: variable(this.schedule.at(scalar(0, "float64")), { name: "learning_rate", trainable: false }),
      scale: variable(scalar(1, "float64"), { name: "learning_rate_scale", trainable: false }),
    }));
    this.iterations = iterations;
    this.learningRateVariable = rate;
    this.learningRateScale = scale;
  }

  /** The rate of the step after `done` completed steps: the schedule times the scale (float64 ops, so it stages). */
  private rateAt(done: Tensor): Tensor {
    return mul(this.schedule.at(cast(done, "float64")), this.learningRateScale.peek());
  }

  /** The learning rate of the step about to run (the schedule at `iterations`, times the scale), read eagerly. */
  currentLearningRate(): number {
    return initScope(() => this.rateAt(this.iterations.peek()).item() as number);
  }

  /**
   * Sets the factor on the schedule (`learningRateScale`) from eager code: the steps after this
   * use `schedule(iterations) * scale`, staged ones included (the scale is read when they run).
   */
  setLearningRateScale(scale: number): void {
    checkHyper(this.name, "learningRateScale", scale, 0, Infinity);
    initScope(() => this.learningRateScale.assign(scalar(scale, "float64")));
  }

  /**
   * Applies one update: `grads[i]` is the gradient of the loss with respect to
   * `variables[i]` (same shape and dtype; `null` skips that variable). Increments `iterations`.
   */
  step(grads: readonly (Tensor | null)[], variables: readonly Variable[]): void {
    const op = `${this.name}.step`;
    if (!Array.isArray(grads) || !Array.isArray(variables)) {
      throw new ValueError(`takes an array of gradients and an array of variables`, op);
    }
    if (grads.length !== variables.length) {
      throw new ValueError(`got ${grads.length} gradients for ${variables.length} variables`, op);
    }
    const seen = new Set<Variable>();
    for (let i = 0; i < variables.length; i++) {
      const v = variables[i];
      if (!(v instanceof Variable)) {
        throw new ValueError(`variables[${i}] is ${v instanceof Tensor ? "a Tensor" : typeof v}, expected a Variable (sc.variable(...))`, op);
      }
      if (seen.has(v)) throw new ValueError(`variable ${v.name} appears twice in the list`, op);
      seen.add(v);
      if (!isFloat(v.dtype)) throw new DtypeError(`variable ${v.name} has dtype ${v.dtype}; only float variables can be optimized`, op);
      const g = grads[i];
      if (g === null || g === undefined) continue;
      if (!(g instanceof Tensor)) throw new ValueError(`grads[${i}] is ${typeof g}, expected a Tensor or null`, op);
      if (!shapesEqual(g.shape, v.shape)) {
        throw new ShapeError(`gradient ${i} has shape ${fmtShape(g.shape)} but variable ${v.name} has shape ${fmtShape(v.shape)}`, op);
      }
      if (g.dtype !== v.dtype) {
        throw new DtypeError(`gradient ${i} has dtype ${g.dtype} but variable ${v.name} has dtype ${v.dtype}`, op);
      }
    }
    withoutRecorders(null, () => {
      const done = this.iterations.peek();
      const lr = this.rateAt(done);
      this.learningRateVariable.assign(lr);
      const t = cast(add(done, 1), "float64");
      this.iterations.assign(add(done, 1));
      let live = grads.map((g) => (g instanceof Variable ? g.peek() : g ?? null));
      if (this.clipNorm !== undefined) live = clipByGlobalNorm(live, this.clipNorm)[0];
      const perDtype = new Map<DType, StepValues>();
      for (let i = 0; i < variables.length; i++) {
        const g = live[i];
        if (g === null || g === undefined) continue;
        const v = variables[i]!;
        let values = perDtype.get(v.dtype);
        if (!values) perDtype.set(v.dtype, (values = { lr: cast(lr, v.dtype), t: cast(t, v.dtype) }));
        v.assign(this.updateOne(v, v.peek(), g, values));
      }
    });
  }

  /** TensorFlow-style: applies `[gradient, variable]` pairs (`null` gradients are skipped). */
  applyGradients(pairs: Iterable<GradientPair>): void {
    const grads: (Tensor | null)[] = [];
    const vars: Variable[] = [];
    for (const p of pairs) {
      if (!Array.isArray(p) || p.length !== 2) {
        throw new ValueError(`applyGradients takes [gradient, variable] pairs, got ${String(p)}`, `${this.name}.applyGradients`);
      }
      grads.push(p[0]);
      vars.push(p[1]);
    }
    this.step(grads, vars);
  }

  /**
   * Computes the loss with a GradientTape, differentiates it with respect to `variables`
   * (default: every trainable variable the loss function read) and applies one step.
   * `variables` may be a function, called after the loss: `() => model.parameters()` works for
   * a model that makes its variables on its first call. Returns the loss. Variables the loss
   * does not depend on are left unchanged.
   */
  minimize(lossFn: () => Tensor, variables?: readonly Variable[] | (() => readonly Variable[])): Tensor {
    const op = `${this.name}.minimize`;
    if (typeof lossFn !== "function") throw new ValueError(`takes a loss function, got ${typeof lossFn}`, op);
    const tape = new GradientTape();
    const loss = tape.record(() => {
      if (Array.isArray(variables)) tape.watch(...variables);
      return lossFn();
    });
    if (!(loss instanceof Tensor)) throw new GradientError(`the loss function must return a tensor, got ${typeof loss}`, op);
    if (loss.size !== 1) {
      throw new ShapeError(`the loss must be a scalar (size-1) tensor, got shape ${fmtShape(loss.shape)}; reduce it (sc.mean / sc.sum) first`, op);
    }
    const given = typeof variables === "function" ? variables() : variables;
    const vars = given ? [...given] : tape.watchedVariables().filter((v) => v.trainable);
    if (vars.length === 0) {
      throw new GradientError(
        given
          ? `the list of variables is empty (a model that makes its variables on its first call has none before it: pass () => model.parameters())`
          : `the loss function read no trainable variables and none were given`,
        op,
      );
    }
    const grads = tape.gradient(loss, vars, { unconnected: "none" }) as (Tensor | null)[];
    this.step(grads, vars);
    return loss;
  }

  /** A slot Variable (e.g. Adam's "m") of a variable, or undefined before its first update. */
  getSlot(variable: Variable, slot: string): Variable | undefined {
    if (!this.slotNames.includes(slot)) {
      throw new ValueError(`${this.name} has no slot ${JSON.stringify(slot)}; its slots are ${JSON.stringify(this.slotNames)}`, `${this.name}.getSlot`);
    }
    return this.slots.get(variable)?.get(slot);
  }

  /** Variables this optimizer has slots for (those it has updated, when it keeps slots). */
  variables(): Variable[] {
    return [...this.slots.keys()];
  }

  /** Every Variable the optimizer owns: iterations, learning rate and its scale, slots. */
  stateVariables(): Variable[] {
    const out = [this.iterations, this.learningRateVariable, this.learningRateScale];
    for (const m of this.slots.values()) out.push(...m.values());
    return out;
  }

  /** Sets every slot to zeros, `iterations` to 0 and the scale to 1 (keeps the slot Variables). */
  reset(): void {
    initScope(() => {
      for (const m of this.slots.values()) for (const s of m.values()) s.assign(zerosLikeTensor(s.peek()));
      this.iterations.assign(scalar(0, "int32"));
      this.learningRateScale.assign(scalar(1, "float64"));
      this.learningRateVariable.assign(this.schedule.at(scalar(0, "float64")));
    });
  }

  override trackedChildren(): Iterable<readonly [string, unknown]> {
    return [
      ["iterations", this.iterations],
      ["learning_rate", this.learningRateVariable],
      ["learning_rate_scale", this.learningRateScale],
    ];
  }

  override optionalChildren(): Iterable<readonly [string, Variable, Tensor]> {
    // (checkpoints written before the scale existed had none: their rate was the schedule's)
    return [["learning_rate_scale", this.learningRateScale, scalar(1, "float64")]];
  }

  override *trackedSlots(): Iterable<readonly [Variable, string, Variable]> {
    for (const [v, m] of this.slots) for (const [name, s] of m) yield [v, name, s];
  }

  /**
   * The slot Variable for `variable`, made on first use (eagerly, outside any trace) filled
   * with `initial` (default 0); a checkpoint restore parked for it fills it.
   */
  protected slot(variable: Variable, name: string, initial = 0): Tensor {
    let m = this.slots.get(variable);
    if (!m) this.slots.set(variable, (m = new Map()));
    let s = m.get(name);
    if (!s) {
      s = initScope(() => variable_(full(variable.shape.slice(), initial, variable.dtype), `${variable.name}/${name}`));
      m.set(name, s);
      this.slotCreated(variable, name, s);
    }
    return s.peek();
  }

  /** Stores a new value of a slot (created by `slot` earlier in the same update). */
  protected setSlot(variable: Variable, name: string, value: Tensor): void {
    this.slots.get(variable)!.get(name)!.assign(value);
  }

  /** The new value of `variable` (current value `value`) after one step with gradient `grad`. */
  protected abstract updateOne(variable: Variable, value: Tensor, grad: Tensor, step: StepValues): Tensor;
}

function variable_(init: Tensor, name: string): Variable {
  return variable(init, { name, trainable: false });
}
