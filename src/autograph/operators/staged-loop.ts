/**
 * Staged loops: `while (test()) body()` over the state that getState/setState reach, traced into
 * a `while` node. Tensors (and numbers and booleans, which become weakly typed tensors) are loop
 * variables; other JS values must not change. A first trace that shows a better plan for a
 * leaf (a number that becomes a float, an array appended to, a generated flag first set in the
 * body) raises RetryLoop and the loop is traced again.
 */
import { Tensor } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import { fmtShape, hasUnknownDims, shapesEqual } from "../../core/shape.js";
import { isFloat, weakScalarDtype, type DType } from "../../core/dtype.js";
import { whileLoop } from "../../staging/control-flow.js";
import { add } from "../../ops/binary.js";
import { equal } from "../../ops/compare.js";
import { assertOrThrow } from "./logging.js";
import { doNotConvert } from "./calls.js";
import { scalarOf } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { full } from "../../ops/fill.js";
import { broadcastTo, reshape, stack } from "../../ops/shape.js";
import {
  AutoGraphError,
  asElement,
  listType,
  at,
  describeValue,
  dtypeOfNumber,
  isGeneratedName,
  isTensorLike,
  isUndef,
  isWeak,
  leavesOf,
  markWeak,
  readIfVariable,
  relaxedShapeOf,
  subjectOf,
  RETURNED_UNDEFINED,
  restore,
  sameStructure,
  snapValue,
  snapshot,
  structureDifference,
  withLeaves,
  type GetState,
  type LeafRef,
  type SetState,
  type Snap,
  TensorList,
  emptyBuffer,
  lengthRelative,
  relateLength,
} from "./state.js";
import { symbolicPredicate } from "./logical.js";
import type { LoopOptions } from "./control-flow.js";

/** Raised inside a loop trace to trace again with a better plan for one state leaf (by path). */
class RetryLoop {
  constructor(
    readonly path: string,
    readonly override: Override,
    /** A generated variable with no value before the loop that the body makes a nest: its zero-filled start. */
    readonly replaceVar?: { index: number; snap: Snap },
    /** An array the body appends to: it becomes a tensor list of these elements. */
    readonly toList?: { index: number; dtype: DType; elementShape: readonly number[]; weak: boolean },
    /**
     * The retry gives a variable (or an object's new key) its first value from the body: after
     * the loop, a staged check that the loop ran at least once (else it would have no value).
     */
    readonly mustRun = false,
  ) {}
}

/** A list's starting buffer: the array's current elements, stacked (or an empty buffer). */
function listBuffer(prefix: readonly unknown[], dtype: DType, elementShape: readonly number[], name: string, where: string, loc: string | null | undefined): Tensor {
  if (prefix.length === 0) {
    const b = emptyBuffer(dtype, elementShape);
    if (!b) throw new AutoGraphError(`${subjectOf(name)} is appended to inside ${where} with elements of partly unknown shape ${fmtShape(elementShape)}; give it a first element before the loop`, loc);
    return b;
  }
  prefix.forEach((v, k) => {
    if (!listType([v])) throw new AutoGraphError(`${subjectOf(name)} is changed inside ${where} as a list, so it becomes a tensor list, but its element ${k} is ${describeValue(v)}`, loc);
  });
  return stack(
    prefix.map((v) => asElement(v, dtype)),
    0,
  );
}

/** A loop-variable start of zeros (generated names whose first value comes from the body). */
class ZeroFill {
  constructor(
    readonly dtype: DType,
    readonly shape: readonly number[],
    /** Stands for a JS number (weakly typed), as the value the body gave does. */
    readonly weak: boolean,
  ) {}
}

/** A fresh nest like `s` with tensor-like leaves replaced by zeros of their type (null if a shape is unknown). */
function zeroFilled(s: Snap): Snap | null {
  if (s.kind === "leaf") {
    const v = s.value;
    if (!isTensorLike(v)) return { kind: "leaf", value: v };
    const dtype = v instanceof Tensor ? v.dtype : dtypeOfNumber(v);
    const shape = v instanceof Tensor ? v.shape : [];
    return hasUnknownDims(shape) ? null : { kind: "leaf", value: new ZeroFill(dtype, shape, !(v instanceof Tensor) || isWeak(v)) };
  }
  if (s.kind === "list") return null;
  const items: Snap[] = [];
  for (const c of s.items) {
    const z = zeroFilled(c);
    if (!z) return null;
    items.push(z);
  }
  return s.kind === "array" ? { kind: "array", orig: [], items } : { kind: "object", orig: {}, keys: s.keys, items };
}

interface Override {
  /** A JS number's tensor dtype and shape (after the body showed what it becomes). */
  dtype?: DType;
  shape?: readonly number[];
  /** A Variable leaf the body replaces: carry its value. */
  asVar?: boolean;
  /** A generated name with no value before the loop: start from zeros of this type (weak: a JS number's). */
  zeros?: { dtype: DType; shape: readonly number[]; weak: boolean };
}

type Plan =
  | { kind: "var"; init: Tensor; dtype: DType; shape: readonly number[]; invariant: (number | null)[] | null; fromNumber: boolean; ov: Override | undefined }
  | { kind: "fixed"; orig: unknown };

function planLeaf(l: LeafRef, ov: Override | undefined, opts: LoopOptions): Plan {
  const v = l.value;
  const invariantOf = (x: unknown): (number | null)[] | null => {
    const r = relaxedShapeOf(x);
    if (r) return r;
    const s = opts.shapeInvariants?.[l.path];
    return s ? [...s] : null;
  };
  const tensorPlan = (init: Tensor, fromNumber: boolean, src: unknown): Plan => {
    const invariant = invariantOf(src);
    return { kind: "var", init, dtype: init.dtype, shape: invariant ? invariant.map((d) => (d === null ? -1 : d)) : init.shape, invariant, fromNumber, ov };
  };
  // (a weak start may still change dtype or shape as a JS number would: ov.dtype / ov.shape)
  if (ov?.zeros) return tensorPlan(full([...(ov.shape ?? ov.zeros.shape)], 0, ov.dtype ?? ov.zeros.dtype), ov.zeros.weak, undefined);
  if (v instanceof ZeroFill) return tensorPlan(full([...(ov?.shape ?? v.shape)], 0, ov?.dtype ?? v.dtype), v.weak, undefined);
  if (v instanceof Variable) return ov?.asVar ? tensorPlan(v.read(), false, v) : { kind: "fixed", orig: v };
  if (v instanceof Tensor && isWeak(v)) {
    // A tensor standing for a JS number: its dtype and shape may follow what the body gives.
    let init: Tensor = v;
    if (ov?.dtype && init.dtype !== ov.dtype) init = cast(init, ov.dtype);
    if (ov?.shape && !shapesEqual(init.shape, ov.shape)) init = broadcastTo(init, ov.shape);
    return tensorPlan(init, true, v);
  }
  if (v instanceof Tensor) return tensorPlan(v, false, v);
  if (typeof v === "number" || typeof v === "boolean") {
    const dtype = ov?.dtype ?? dtypeOfNumber(v);
    const shape = ov?.shape ?? [];
    const init = shape.length > 0 ? full([...shape], Number(v), dtype) : scalarOf(Number(v), dtype);
    return tensorPlan(init, true, v);
  }
  return { kind: "fixed", orig: v };
}

function shapeFits(p: Extract<Plan, { kind: "var" }>, t: Tensor): boolean {
  if (p.invariant) return t.rank === p.invariant.length && p.invariant.every((d, j) => d === null || d === t.shape[j]);
  return t.rank === p.shape.length && p.shape.every((d, j) => d < 0 || d === t.shape[j]);
}

/** A loop to stage: `while (test()) body()` over the state that getState/setState reach. */
export interface StagedLoop {
  test: () => unknown;
  body: () => void;
  getState: GetState;
  setState: SetState;
  names: readonly string[];
  loc: string | null | undefined;
  opts: LoopOptions;
  /** The source construct, for messages ("while", "for...of"). */
  construct: string;
  /**
   * The number of iterations when it is known at trace time (a for...of over a tensor of known
   * length without break): a list the body appends to a known number of elements then has a
   * static length after the loop.
   */
  tripCount?: number;
}

/**
 * Stages a loop over its state: tensors (and numbers and booleans, which become tensors) are
 * loop variables; other JS values must not change.
 */
export function stagedWhile(loop: StagedLoop): void {
  const { getState, setState, names, loc, construct } = loop;
  const init = getState();
  const snaps = init.map((v) => snapshot(v));
  const overrides = new Map<string, Override>();
  /** Variables whose value comes from the body only (checked, when the graph runs, that the loop ran). */
  const mustRun: string[] = [];
  for (let attempt = 0; ; attempt++) {
    const leaves: LeafRef[] = [];
    snaps.forEach((s, i) => leavesOf(s, names[i] ?? `state[${i}]`, undefined, leaves));
    try {
      stagedWhileAttempt(loop, snaps, leaves, overrides, mustRun);
      break;
    } catch (e) {
      if (!(e instanceof RetryLoop) || attempt > leaves.length + 8) throw e;
      if (e.mustRun && !mustRun.includes(e.path)) mustRun.push(e.path);
      if (e.replaceVar) {
        snaps[e.replaceVar.index] = e.replaceVar.snap;
        // (an object that gains keys is written now: its new keys hold the zeros the loop starts from)
        restore(e.replaceVar.snap);
      }
      else if (e.toList) {
        const { index, dtype, elementShape, weak } = e.toList;
        const name = names[index] ?? `state[${index}]`;
        const where = `a staged ${construct} loop${at(loc)}`;
        const before = snaps[index]!;
        const prefix = before.kind === "array" ? before.items.map(snapValue) : [];
        for (const s of snaps) restore(s);
        const list = new TensorList(listBuffer(prefix, dtype, elementShape, name, where, loc), weak);
        const top = snaps.map(snapValue);
        top[index] = list;
        setState(top);
        if (getState()[index] !== list) {
          throw new AutoGraphError(
            `${subjectOf(name)} is an array appended to inside ${where}: it becomes a tensor list (a tensor after the loop), so it must be rebindable; declare it with let rather than const`,
            loc,
          );
        }
        snaps[index] = snapshot(list);
      } else overrides.set(e.path, { ...overrides.get(e.path), ...e.override });
    }
  }
  // (the lists this loop made from arrays stay lists: the variables hold them after the loop)
}

/**
 * An object the loop body gives new keys (`o.b = v` inside the loop): its snapshot with the new
 * keys starting from zeros of the body's values (objects nested in it likewise), or null when
 * the change is of another kind (a key removed, an array's length, a value's type).
 */
function grownObject(before: Snap, after: Snap): Snap | null {
  if (sameStructure(before, after)) return before;
  if (before.kind === "object" && after.kind === "object" && after.orig === before.orig && before.keys.every((k) => after.keys.includes(k))) {
    const keys = [...before.keys];
    const items: Snap[] = [];
    for (let j = 0; j < before.keys.length; j++) {
      const g = grownObject(before.items[j]!, after.items[after.keys.indexOf(before.keys[j]!)]!);
      if (!g) return null;
      items.push(g);
    }
    for (let j = 0; j < after.keys.length; j++) {
      if (before.keys.includes(after.keys[j]!)) continue;
      const z = zeroFilled(after.items[j]!);
      if (!z) return null;
      keys.push(after.keys[j]!);
      items.push(z);
    }
    return { kind: "object", orig: before.orig, keys, items };
  }
  if (before.kind === "array" && after.kind === "array" && after.orig === before.orig && before.items.length === after.items.length) {
    const items: Snap[] = [];
    for (let j = 0; j < before.items.length; j++) {
      const g = grownObject(before.items[j]!, after.items[j]!);
      if (!g) return null;
      items.push(g);
    }
    return { kind: "array", orig: before.orig, items };
  }
  return null;
}

function stagedWhileAttempt(loop: StagedLoop, snaps: Snap[], leaves: LeafRef[], overrides: Map<string, Override>, mustRun: readonly string[]): void {
  const { test, body, getState, setState, names, loc, opts, construct } = loop;
  const plans = leaves.map((l) => planLeaf(l, overrides.get(l.path), opts));
  const vars = plans.filter((p): p is Extract<Plan, { kind: "var" }> => p.kind === "var");
  const where = `a staged ${construct} loop${at(loc)}`;

  const write = (values: readonly Tensor[]): unknown[] => {
    let k = 0;
    const leafValues = plans.map((p) => (p.kind === "var" ? (p.fromNumber ? markWeak(values[k++]!) : values[k++]) : p.orig));
    const pos = { i: 0 };
    const next = snaps.map((s) => withLeaves(s, leafValues, pos));
    for (const s of next) restore(s);
    setState(next.map(snapValue));
    return leafValues;
  };
  const readLeaves = (): { after: Snap[]; values: unknown[] } => {
    const after = getState().map((v) => snapshot(v));
    const out: LeafRef[] = [];
    after.forEach((s, i) => leavesOf(s, names[i] ?? `state[${i}]`, undefined, out));
    return { after, values: out.map((l) => l.value) };
  };

  const condFn = (...vs: Tensor[]): Tensor => {
    const written = write(vs);
    const r = test();
    const { after, values } = readLeaves();
    const changed = after.findIndex((s, i) => !sameStructure(s, snaps[i]!));
    const leafChanged = changed >= 0 ? -1 : values.findIndex((v, i) => !Object.is(v, written[i]));
    if (changed >= 0 || leafChanged >= 0) {
      const what = changed >= 0 ? (names[changed] ?? `state[${changed}]`) : leaves[leafChanged]!.path;
      throw new AutoGraphError(`the condition of ${where} assigns ${subjectOf(what)}; move the assignment into the loop body`, loc);
    }
    if (r instanceof Tensor) return symbolicPredicate(readIfVariable(r) as Tensor, construct, loc);
    return scalarOf(r ? 1 : 0, "bool");
  };

  // The body's loop variables as it starts and as it ends (the last trace of it), for lengths.
  let bodyIn: readonly Tensor[] = [];
  let bodyOut: readonly Tensor[] = [];
  const bodyFn = (...vs: Tensor[]): Tensor[] => {
    bodyIn = vs;
    write(vs);
    body();
    const { after, values } = readLeaves();
    after.forEach((s, i) => {
      if (!sameStructure(snaps[i]!, s)) {
        const name = names[i] ?? `state[${i}]`;
        const before = snaps[i]!;
        if (before.kind === "leaf" && isUndef(before.value)) {
          // First assigned inside the loop: starts from zeros of what the body gives (a user
          // variable read after the loop: checked that the loop ran).
          const z = zeroFilled(s);
          if (z) throw new RetryLoop(name, {}, { index: i, snap: z }, undefined, !isGeneratedName(name));
        }
        const grown = grownObject(before, s);
        if (grown) throw new RetryLoop(name, {}, { index: i, snap: grown }, undefined, true);
        if (before.kind === "array") {
          // An array the body appends to (or that an inner loop turned into a stacked list).
          let elem: { dtype: DType; elementShape: readonly number[]; weak: boolean } | null = null;
          if (s.kind === "array" && s.orig === before.orig && s.items.length > before.items.length) elem = listType(s.items.map(snapValue));
          // popped: the list's own elements
          else if (s.kind === "array" && s.orig === before.orig && s.items.length < before.items.length) elem = listType(before.items.map(snapValue));
          // written at a symbolic index (ag.setItem made the array a tensor list), or an inner staged loop or if made it one
          else if (s.kind === "list") elem = { dtype: s.orig.buffer.dtype, elementShape: s.orig.buffer.shape.slice(1), weak: s.orig.weak };
          if (elem) throw new RetryLoop(name, {}, undefined, { index: i, ...elem });
        }
        throw new AutoGraphError(
          `${subjectOf(name)} changes structure inside ${where}: ${structureDifference(snaps[i]!, s, name)}; loop variables must keep their structure (give arrays their final length before the loop)`,
          loc,
        );
      }
    });
    const results: Tensor[] = [];
    plans.forEach((p, i) => {
      const out = values[i];
      const l = leaves[i]!;
      if (out === RETURNED_UNDEFINED) {
        throw new AutoGraphError(`this function returns undefined inside ${where}; a staged loop cannot give undefined: return a value (a tensor or a number)`, loc);
      }
      if (p.kind === "fixed") {
        if (Object.is(out, p.orig) || (isUndef(out) && isUndef(p.orig))) return;
        if (isUndef(p.orig)) {
          if (isGeneratedName(l.name) && isTensorLike(out)) {
            const t = out instanceof Tensor ? out : null;
            const dtype = t ? t.dtype : dtypeOfNumber(out as number | boolean);
            const shape = t ? t.shape : [];
            if (!hasUnknownDims(shape)) throw new RetryLoop(l.path, { zeros: { dtype, shape, weak: !t || isWeak(t) } });
          }
          if (isTensorLike(out)) {
            // A user variable first assigned in the loop and read after it: it starts from zeros,
            // and the graph checks that the loop ran (as TensorFlow's AutoGraph does).
            const t = out instanceof Tensor ? out : null;
            const shape = t ? t.shape : [];
            if (!hasUnknownDims(shape)) {
              throw new RetryLoop(l.path, { zeros: { dtype: t ? t.dtype : dtypeOfNumber(out as number | boolean), shape, weak: !t || isWeak(t) } }, undefined, undefined, true);
            }
          }
          throw new AutoGraphError(`${subjectOf(l.path)} is first assigned inside ${where} and used after it; assign it before the loop`, loc);
        }
        if (p.orig instanceof Variable && isTensorLike(out)) throw new RetryLoop(l.path, { asVar: true });
        throw new AutoGraphError(
          `${subjectOf(l.path)} holds ${describeValue(p.orig)} and is changed to ${describeValue(out)} inside ${where}; only tensors, numbers and booleans can change in a staged loop`,
          loc,
        );
      }
      if (!isTensorLike(out)) {
        throw new AutoGraphError(`${subjectOf(l.path)} is a ${p.dtype} tensor before ${where} and becomes ${describeValue(out)} in its body; loop variables must stay tensors`, loc);
      }
      let t: Tensor;
      if (out instanceof Tensor) t = readIfVariable(out) as Tensor;
      else {
        // A JS number meets the loop variable's dtype; if that stands for a JS number too, the
        // two combine as JS numbers do (a fraction makes float64, not float32).
        const d =
          typeof out === "boolean"
            ? p.dtype
            : p.fromNumber && !isFloat(p.dtype) && !(Number.isInteger(out) && Math.abs(out) < 2 ** 31)
              ? "float64"
              : weakScalarDtype(out, p.dtype);
        t = p.shape.length > 0 && !hasUnknownDims(p.shape) ? full([...p.shape], Number(out), d) : scalarOf(Number(out), d);
      }
      const dtypeOk = t.dtype === p.dtype;
      const shapeOk = shapeFits(p, t);
      if ((!dtypeOk || !shapeOk) && p.fromNumber && !p.ov?.dtype && !p.ov?.shape && !hasUnknownDims(t.shape)) {
        throw new RetryLoop(l.path, { dtype: t.dtype, shape: t.shape });
      }
      if (!dtypeOk) {
        throw new AutoGraphError(
          `${subjectOf(l.path)} changes dtype from ${p.dtype} to ${t.dtype} inside ${where}; loop variables must keep their dtype (cast the new value, or give the variable that dtype before the loop)`,
          loc,
        );
      }
      if (!shapeOk) {
        throw new AutoGraphError(
          `${subjectOf(l.path)} changes shape from ${fmtShape(p.shape)} to ${fmtShape(t.shape)} inside ${where}; loop variables must keep their shape ` +
            `unless relaxed: call sc.relaxShape(${l.name}) before the loop, or pass shapeInvariants`,
          loc,
        );
      }
      results.push(t);
    });
    bodyOut = results;
    return results;
  };

  const hasInvariants = vars.some((p) => p.invariant);
  // With variables that get their first value in the body: an iteration count, checked after.
  const counted = mustRun.length > 0;
  // (the condition and body are this file's closures around converted code: whileLoop's
  // callback conversion must not look them up again, which it would for each trace)
  const outs = whileLoop(
    doNotConvert(counted ? (...vs: Tensor[]) => condFn(...vs.slice(0, -1)) : condFn),
    doNotConvert(counted ? (...vs: Tensor[]) => [...bodyFn(...vs.slice(0, -1)), add(vs[vs.length - 1]!, 1)] : bodyFn),
    [...vars.map((p) => p.init), ...(counted ? [scalarOf(0, "int32")] : [])],
    {
      ...(hasInvariants ? { shapeInvariants: [...vars.map((p) => p.invariant), ...(counted ? [null] : [])] } : {}),
      ...(opts.maximumIterations !== undefined ? { maxIterations: opts.maximumIterations } : {}),
    },
  );
  if (counted) {
    const what = mustRun.map((p) => subjectOf(p)).join(", ");
    assertOrThrow(
      equal(outs[outs.length - 1]!, 0),
      () => new AutoGraphError(`${what} ${mustRun.length > 1 ? "get their" : "gets its"} first value inside ${where}, which ran zero times, so ${mustRun.length > 1 ? "they have" : "it has"} no value after it`, loc),
      loc,
    );
    outs.pop();
  }
  write(vars.map((p, k) => withKnownLength(p.init, bodyIn[k], bodyOut[k], outs[k]!, loop.tripCount)));
}

/**
 * A loop variable after the loop with its length (axis 0) made static where tracing knows it:
 * the body changes it by a known number of rows (a list it pushes to) and the trip count is
 * known, or it changes it by none. Its length relative to the start's is recorded too (a loop
 * inside another loop's body: the outer loop reads it).
 */
function withKnownLength(init: Tensor, bodyIn: Tensor | undefined, bodyOut: Tensor | undefined, out: Tensor, tripCount: number | undefined): Tensor {
  if (!bodyIn || !bodyOut || out.rank === 0 || out.shape[0]! >= 0) return out;
  const r = lengthRelative(bodyOut);
  if (r.base !== bodyIn || (r.delta !== 0 && tripCount === undefined)) return out;
  const growth = r.delta === 0 ? 0 : r.delta * tripCount!;
  relateLength(out, init, growth);
  const n = init.shape[0]!;
  const rest = out.shape.slice(1);
  if (n < 0 || rest.filter((d) => d < 0).length > 1) return out;
  // (a reshape to the shape the loop gives: a check when the graph runs, should tracing be wrong)
  const t = reshape(out, [n + growth, ...rest]);
  relateLength(t, init, growth);
  return t;
}
