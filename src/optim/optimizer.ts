/**
 * The optimizer base class: validation, the step counter, slot state, learning-rate
 * schedules and `minimize`. Concrete rules (SGD, Adam) implement `updateOne`.
 *
 * The API, in one place:
 *
 * ```ts
 * const opt = new sc.optim.Adam({ learningRate: 1e-3 });
 * // 1. compute and apply in one call
 * const loss = opt.minimize(() => lossOf(model), [w, b]);
 * // 2. or from gradients you computed yourself (same order as the variables)
 * const [l, [gw, gb]] = sc.valueAndGrad(f, { argnums: [0, 1] })(w, b);
 * opt.step([gw, gb], [w, b]);
 * // 3. or TF-style (gradient, variable) pairs
 * opt.applyGradients([[gw, w], [gb, b]]);
 * ```
 *
 * Updates replace each variable's value (never its storage: a tape or a tensor that saw the
 * old value keeps it). They are not recorded by gradient tapes. Gradients may be `null`
 * (a variable the loss does not depend on): that variable and its slots are left unchanged.
 */
import { withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, GradientError, ShapeError, ValueError } from "../core/errors.js";
import { fmtShape, shapesEqual } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { GradientTape } from "../ad/tape.js";
import { zerosLikeTensor } from "../ops/fill.js";
import "../ops/variable-updates.js";

/** A constant learning rate, or a schedule: the rate for a given step (0 for the first step). */
export type LearningRate = number | ((step: number) => number);

/** One (gradient, variable) pair, as TensorFlow's `apply_gradients` takes them. */
export type GradientPair = readonly [Tensor | null, Variable];

export interface OptimizerOptions {
  /** Step size (default depends on the optimizer), or a schedule `(step) => rate`. */
  learningRate?: LearningRate;
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

export abstract class Optimizer {
  /** Name used in error messages ("SGD", "Adam"). */
  readonly name: string;
  /** Learning rate or schedule; may be changed between steps. */
  learningRate: LearningRate;
  /** Number of completed steps (step/applyGradients/minimize calls); schedules read it. */
  iterations = 0;
  /** Slot names this optimizer keeps per variable, e.g. ["m", "v"] for Adam. */
  abstract readonly slotNames: readonly string[];
  private readonly slots = new Map<Variable, Map<string, Tensor>>();
  /** Updates applied to each variable (a variable skipped with a null gradient does not count). */
  private readonly counts = new Map<Variable, number>();

  protected constructor(name: string, options: OptimizerOptions, defaultRate: number) {
    this.name = name;
    this.learningRate = options.learningRate ?? defaultRate;
    if (typeof this.learningRate !== "function") checkHyper(name, "learningRate", this.learningRate, 0, Infinity);
  }

  /** The learning rate for the step about to run (evaluates a schedule at `iterations`). */
  currentLearningRate(): number {
    const lr = this.learningRate;
    const v = typeof lr === "function" ? lr(this.iterations) : lr;
    return checkHyper(this.name, typeof lr === "function" ? `learningRate(${this.iterations})` : "learningRate", v, 0, Infinity);
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
      if (v.isSymbolic) throw new ValueError(`variable ${v.name} has no concrete value`, op);
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
    const lr = this.currentLearningRate();
    withoutRecorders(null, () => {
      for (let i = 0; i < variables.length; i++) {
        const g = grads[i];
        if (g === null || g === undefined) continue;
        const v = variables[i]!;
        const gt = g instanceof Variable ? g.peek() : g;
        const t = (this.counts.get(v) ?? 0) + 1;
        v.assign(this.updateOne(v, v.peek(), gt, lr, t));
        this.counts.set(v, t);
      }
    });
    this.iterations++;
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
   * Returns the loss. Variables the loss does not depend on are left unchanged.
   */
  minimize(lossFn: () => Tensor, variables?: readonly Variable[]): Tensor {
    const op = `${this.name}.minimize`;
    if (typeof lossFn !== "function") throw new ValueError(`takes a loss function, got ${typeof lossFn}`, op);
    const tape = new GradientTape();
    const loss = tape.record(() => {
      if (variables) tape.watch(...variables);
      return lossFn();
    });
    if (!(loss instanceof Tensor)) throw new GradientError(`the loss function must return a tensor, got ${typeof loss}`, op);
    if (loss.size !== 1) {
      throw new ShapeError(`the loss must be a scalar (size-1) tensor, got shape ${fmtShape(loss.shape)}; reduce it (sc.mean / sc.sum) first`, op);
    }
    const vars = variables ? [...variables] : tape.watchedVariables().filter((v) => v.trainable);
    if (vars.length === 0) throw new GradientError(`the loss function read no trainable variables and none were given`, op);
    const grads = tape.gradient(loss, vars, { unconnected: "none" }) as (Tensor | null)[];
    this.step(grads, vars);
    return loss;
  }

  /** A slot tensor (e.g. Adam's "m") for a variable, or undefined before its first update. */
  getSlot(variable: Variable, slot: string): Tensor | undefined {
    if (!this.slotNames.includes(slot)) {
      throw new ValueError(`${this.name} has no slot ${JSON.stringify(slot)}; its slots are ${JSON.stringify(this.slotNames)}`, `${this.name}.getSlot`);
    }
    return this.slots.get(variable)?.get(slot);
  }

  /** How many updates `variable` has received from this optimizer. */
  updateCount(variable: Variable): number {
    return this.counts.get(variable) ?? 0;
  }

  /** Variables this optimizer has updated. */
  variables(): Variable[] {
    return [...this.counts.keys()];
  }

  /** Forgets all slot state and update counts, and resets `iterations` to 0. */
  reset(): void {
    this.slots.clear();
    this.counts.clear();
    this.iterations = 0;
  }

  /** The slot for `variable`, created as zeros on first use. */
  protected slot(variable: Variable, name: string, like: Tensor): Tensor {
    let m = this.slots.get(variable);
    if (m === undefined) this.slots.set(variable, (m = new Map()));
    let s = m.get(name);
    if (s === undefined) m.set(name, (s = zerosLikeTensor(like)));
    return s;
  }

  protected setSlot(variable: Variable, name: string, value: Tensor): void {
    this.slots.get(variable)!.set(name, value);
  }

  /**
   * The new value of one variable. `value` is its current value, `grad` its gradient (same
   * shape and dtype), `lr` this step's learning rate, `t` the 1-based number of this
   * variable's update (per variable, as PyTorch counts, so bias corrections stay right for a
   * variable that was skipped with a null gradient on earlier steps).
   */
  protected abstract updateOne(variable: Variable, value: Tensor, grad: Tensor, lr: number, t: number): Tensor;
}
