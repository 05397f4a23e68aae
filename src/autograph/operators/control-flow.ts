/**
 * Control-flow operators: `if`, the conditional expression, `while` (and the loops lowered to
 * it), `for...of`, and `range`. Each decides by the condition it meets:
 * - a JS value: the construct runs natively, exactly as JavaScript would;
 * - a concrete tensor: its (scalar) value is read and the construct runs natively;
 * - a symbolic tensor: a `cond` / `while` node is staged, carrying the construct's state
 *   (the variables it modifies, as `getState`/`setState` give them): tensors, numbers and
 *   booleans, and arrays and plain objects of them. JS values equal on every path stay JS.
 */
import { Tensor } from "../../core/tensor.js";
import { ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape } from "../../core/shape.js";
import { promoteTypes, weakScalarDtype, type DType } from "../../core/dtype.js";
import { scalarOf, toTensor } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { gather, unstack } from "../../ops/shape.js";
import { add } from "../../ops/binary.js";
import { greater, less, logicalAnd, logicalOr } from "../../ops/compare.js";
import {
  AutoGraphError,
  activeTrace,
  at,
  subjectOf,
  describeValue,
  locArg,
  noSetState,
  noState,
  readIfVariable,
  restore,
  snapshot,
  type GetState,
  type SetState,
  TensorList,
} from "./state.js";
import { concreteTruth, symbolicPredicate } from "./logical.js";
import { dimSize } from "./indexing.js";
import { condValues, stagedCond } from "./cond.js";
import { stagedWhile } from "./staged-loop.js";
import { controlFlowTransform, transformedIf, transformedWhile } from "./batched.js";

// ---------------------------------------------------------------------------------------------
// dispatch on a condition

/**
 * The truth of a condition when it is known now (JS value or concrete tensor), or the bool
 * scalar predicate to stage when it is symbolic.
 */
export function dispatchCondition(c: unknown, construct: string, loc?: string | null): boolean | Tensor {
  if (!(c instanceof Tensor)) return Boolean(c);
  const t = readIfVariable(c) as Tensor;
  if (!t.isSymbolic) return concreteTruth(t, construct, loc);
  if (!activeTrace() && !controlFlowTransform()) t.concrete(`use as the condition of ${construct}`);
  return symbolicPredicate(t, construct, loc);
}


// ---------------------------------------------------------------------------------------------
// if / ?:

/**
 * `if (cond) thenFn() else elseFn()`. With a symbolic condition both branches are traced into a
 * cond node; the state (getState/setState, named by `names`) is what the branches may modify.
 */
export function ifStmt(
  cond: unknown,
  thenFn: () => void,
  elseFn?: (() => void) | null,
  getState: GetState = noState,
  setState: SetState = noSetState,
  names: readonly string[] = [],
  loc?: string | null,
): void {
  const p = dispatchCondition(cond, "if", loc);
  if (typeof p === "boolean") {
    if (p) thenFn();
    else if (elseFn) elseFn();
    return;
  }
  const tr = controlFlowTransform();
  if (tr) return transformedIf(tr, p, thenFn, elseFn, getState, setState, names, loc);
  const ctx = activeTrace()!;
  const init = getState();
  const snaps = init.map((v) => snapshot(v));
  const branch = (fn: (() => void) | null | undefined) => () => {
    for (const s of snaps) restore(s);
    setState(init);
    if (fn) fn();
    return getState();
  };
  const finals = stagedCond(ctx, p, branch(thenFn), branch(elseFn), { construct: "a staged if", loc, isState: true, labels: names });
  setState(finals);
  const after = getState();
  finals.forEach((v, i) => {
    if (v instanceof TensorList && after[i] !== v) {
      throw new AutoGraphError(
        `${subjectOf(names[i] ?? `state[${i}]`)} changes length inside a staged if${at(loc)}: it becomes a tensor list, so it must be rebindable; declare it with let rather than const`,
        loc,
      );
    }
  });
}

/** `cond ? thenFn() : elseFn()`. */
export function ifExp(cond: unknown, thenFn: () => unknown, elseFn: () => unknown, loc?: string | null): unknown {
  const p = dispatchCondition(cond, "?:", loc);
  if (typeof p === "boolean") return p ? thenFn() : elseFn();
  return condValues(p, thenFn, elseFn, "conditional expression", "the value of the conditional expression", loc);
}

// ---------------------------------------------------------------------------------------------
// loops

export interface LoopOptions {
  /**
   * for...of: evaluated before each iteration (the transform's `!$brk`); a false value ends
   * the loop as `break` does. A symbolic value guards the remaining iterations (JS iterables)
   * or joins the staged loop condition (tensors, ranges).
   */
  extraTest?: () => unknown;
  /** Per variable name (or nest path such as `p.w`): dims that may change across iterations (null = any). */
  shapeInvariants?: Record<string, readonly (number | null)[]>;
  /** Staged loops: stop after this many iterations. */
  maximumIterations?: number;
}

/** `while (test()) body()`. */
export function whileStmt(
  test: () => unknown,
  body: () => void,
  getState: GetState = noState,
  setState: SetState = noSetState,
  names: readonly string[] = [],
  loc?: string | null,
  opts: LoopOptions = {},
): void {
  for (;;) {
    const p = dispatchCondition(test(), "while", loc);
    if (typeof p !== "boolean") {
      const tr = controlFlowTransform();
      // (a condition shared by every example under vmap: one trip count for all, so the staged
      // loop's plan applies as it is, as for a range loop, lists that grow included; its whileLoop goes through the
      // transformation, which batches the body, and masks the loop if the body batches the condition)
      if (tr && tr.batches(p)) return transformedWhile(tr, { test, body, getState, setState, names, loc, construct: "while", maximumIterations: opts.maximumIterations });
      stagedWhile({ test, body, getState, setState, names, loc, opts, construct: "while" });
      return;
    }
    if (!p) return;
    body();
  }
}


// ---------------------------------------------------------------------------------------------
// for...of and range

/**
 * `for (const x of iterable) body(x)` (the body takes the item: a fresh binding per iteration).
 * The 7th argument is the transform's extra test (`() => !$brk`: false ends the loop as
 * `break` does) or a LoopOptions object; an 8th may carry options besides the extra test.
 */
export function forOf(
  iterable: unknown,
  body: (item: any) => void,
  getState: GetState = noState,
  setState: SetState = noSetState,
  names: readonly string[] = [],
  loc?: string | null,
  extraTestOrOptions?: (() => unknown) | LoopOptions | null,
  options?: LoopOptions,
): void {
  const opts: LoopOptions =
    typeof extraTestOrOptions === "function" ? { ...options, extraTest: extraTestOrOptions } : { ...options, ...(extraTestOrOptions ?? {}) };
  if (iterable instanceof RangeObject) {
    if (!iterable.isSymbolic) return nativeFor(iterable, body, getState, setState, names, loc, opts);
    return stagedRange(iterable, body, getState, setState, names, loc, opts);
  }
  if (iterable instanceof TensorList) iterable = iterable.buffer;
  if (iterable instanceof Tensor) {
    const t = readIfVariable(iterable) as Tensor;
    if (t.rank === 0) throw new ShapeError(`cannot iterate over a scalar tensor (shape [])`, "for...of", locArg(loc));
    // (under vmap a batched tensor's rows are known in number: the loop runs natively, each row batched)
    if (!t.isSymbolic || (controlFlowTransform() && t.shape[0]! >= 0)) return nativeFor(t.shape[0] === 0 ? [] : unstack(t, 0), body, getState, setState, names, loc, opts);
    return stagedTensorFor(t, body, getState, setState, names, loc, opts);
  }
  return nativeFor(iterable, body, getState, setState, names, loc, opts);
}

function closeIterator(it: Iterator<unknown>): void {
  const ret = it.return;
  if (ret === undefined || ret === null) return;
  const r = ret.call(it);
  if (Object(r) !== r) throw new TypeError("Iterator result is not an object");
}

function nativeFor(
  iterable: unknown,
  body: (item: any) => void,
  getState: GetState,
  setState: SetState,
  names: readonly string[],
  loc: string | null | undefined,
  opts: LoopOptions,
): void {
  const getIter = iterable === null || iterable === undefined ? undefined : (iterable as { [Symbol.iterator]?: unknown })[Symbol.iterator];
  if (typeof getIter !== "function") throw new TypeError(`${describeValue(iterable)} is not iterable`);
  const it = getIter.call(iterable) as Iterator<unknown>;
  if (Object(it) !== it) throw new TypeError("Result of the Symbol.iterator method is not an object");
  const next = it.next;
  for (;;) {
    let guard: boolean | Tensor = true;
    if (opts.extraTest) {
      guard = dispatchCondition(opts.extraTest(), "for...of", loc);
      if (guard === false) {
        closeIterator(it);
        return;
      }
    }
    const r = next.call(it) as IteratorResult<unknown>;
    if (Object(r) !== r) throw new TypeError(`Iterator result ${String(r)} is not an object`);
    if (r.done) return;
    try {
      if (guard === true) body(r.value);
      else ifStmt(guard, () => body(r.value), null, getState, setState, names, loc);
    } catch (e) {
      try {
        closeIterator(it);
      } catch {
        /* the body's exception wins */
      }
      throw e;
    }
  }
}

/** Stages a loop with a hidden int counter `$i` in the state (tensor and range loops). */
function stagedCounterLoop(
  start: Tensor,
  more: (i: Tensor) => Tensor,
  step: (i: Tensor) => Tensor,
  item: (i: Tensor) => unknown,
  body: (item: any) => void,
  getState: GetState,
  setState: SetState,
  names: readonly string[],
  loc: string | null | undefined,
  opts: LoopOptions,
  /** How many times `more` holds from `start` on, when known at trace time. */
  count?: number,
): void {
  let i = start;
  const test = (): unknown => {
    const m = more(i);
    if (!opts.extraTest) return m;
    const e = opts.extraTest();
    if (!(e instanceof Tensor)) return e ? m : false;
    return logicalAnd(m, symbolicPredicate(readIfVariable(e) as Tensor, "for...of", loc));
  };
  stagedWhile({
    test,
    body: () => {
      body(item(i));
      i = step(i);
    },
    getState: () => [...getState(), i],
    setState: (s) => {
      setState(s.slice(0, -1));
      i = s[s.length - 1] as Tensor;
    },
    names: [...names, "$counter"],
    loc,
    opts,
    construct: "for...of",
    // (a break, or a return inside the loop, ends it early: the extra test; then it is not known)
    ...(count !== undefined && !opts.extraTest ? { tripCount: Math.min(count, opts.maximumIterations ?? Infinity) } : {}),
  });
}

function stagedTensorFor(t: Tensor, body: (item: any) => void, getState: GetState, setState: SetState, names: readonly string[], loc: string | null | undefined, opts: LoopOptions): void {
  const n: Tensor | number = t.shape[0]! >= 0 ? t.shape[0]! : dimSize(t, 0);
  stagedCounterLoop(
    scalarOf(0, "int32"),
    (i) => less(i, n),
    (i) => add(i, 1),
    (i) => gather(t, i, 0),
    body,
    getState,
    setState,
    names,
    loc,
    opts,
    typeof n === "number" ? n : undefined,
  );
}

function stagedRange(r: RangeObject, body: (item: any) => void, getState: GetState, setState: SetState, names: readonly string[], loc: string | null | undefined, opts: LoopOptions): void {
  const d = r.dtype;
  const conv = (x: Tensor | number): Tensor | number => (x instanceof Tensor ? (x.dtype === d ? x : cast(x, d)) : x);
  const start = r.start instanceof Tensor ? (conv(r.start) as Tensor) : scalarOf(r.start, d);
  const stop = conv(r.stop);
  const step = conv(r.step);
  const more =
    typeof step === "number"
      ? (i: Tensor) => (step > 0 ? less(i, stop) : greater(i, stop))
      : (i: Tensor) => logicalOr(logicalAnd(greater(step, 0), less(i, stop)), logicalAnd(less(step, 0), greater(i, stop)));
  stagedCounterLoop(start, more, (i) => add(i, step), (i) => i, body, getState, setState, names, loc, opts);
}

/**
 * `range(stop)`, `range(start, stop, step = 1)`: the numbers start, start + step, ... before
 * stop. With JS numbers (or concrete tensors) it is an ordinary iterable (of numbers, or of
 * scalar tensors when a bound is a tensor); with a symbolic bound, a converted `for...of`
 * stages it as a counter loop.
 */
export class RangeObject implements Iterable<number | Tensor> {
  readonly start: Tensor | number;
  readonly stop: Tensor | number;
  readonly step: Tensor | number;
  /** The counter's dtype when a bound is a tensor. */
  readonly dtype: DType;

  constructor(start: Tensor | number, stop: Tensor | number, step: Tensor | number) {
    const check = (what: string, x: unknown): Tensor | number => {
      if (x instanceof Tensor) {
        const t = readIfVariable(x) as Tensor;
        if (t.size !== 1) throw new ShapeError(`${what} must be a scalar, got shape ${fmtShape(t.shape)}`, "range");
        if (t.dtype === "bool") throw new ValueError(`${what} must be a number, got a bool tensor`, "range");
        return t;
      }
      if (typeof x !== "number" || !Number.isFinite(x)) throw new ValueError(`${what} must be a finite number or a scalar tensor, got ${describeValue(x)}`, "range");
      return x;
    };
    this.start = check("start", start);
    this.stop = check("stop", stop);
    this.step = check("step", step);
    if (this.step === 0) throw new ValueError("step must not be 0", "range");
    let d: DType | null = null;
    for (const x of [this.start, this.stop, this.step]) if (x instanceof Tensor) d = d === null ? x.dtype : promoteTypes(d, x.dtype);
    if (d === null) d = [this.start, this.stop, this.step].every((x) => Number.isInteger(x)) ? "int32" : "float32";
    else for (const x of [this.start, this.stop, this.step]) if (typeof x === "number") d = promoteTypes(d, weakScalarDtype(x, d));
    this.dtype = d;
  }

  get isSymbolic(): boolean {
    return [this.start, this.stop, this.step].some((x) => x instanceof Tensor && x.isSymbolic);
  }

  *[Symbol.iterator](): Iterator<number | Tensor> {
    if (this.isSymbolic) {
      throw new AutoGraphError(
        "range() with a symbolic bound can only be iterated by a converted for...of loop (inside a function staged by sc.stage or converted by sc.autograph), which stages it as a counter loop",
      );
    }
    const num = (x: Tensor | number): number => (x instanceof Tensor ? Number(x.item()) : x);
    const start = num(this.start);
    const stop = num(this.stop);
    const step = num(this.step);
    if (step === 0) throw new ValueError("step must not be 0", "range");
    const asTensors = [this.start, this.stop, this.step].some((x) => x instanceof Tensor);
    for (let k = 0; ; k++) {
      const v = start + k * step;
      if (step > 0 ? v >= stop : v <= stop) return;
      yield asTensors ? toTensor(v, "range", this.dtype) : v;
    }
  }
}

export function range(startOrStop: Tensor | number, stop?: Tensor | number, step: Tensor | number = 1): RangeObject {
  if (stop === undefined) return new RangeObject(0, startOrStop, step);
  return new RangeObject(startOrStop, stop, step);
}
