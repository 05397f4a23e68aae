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
import { Variable } from "../../core/variable.js";
import { withHandler, withoutRecorders } from "../../core/context.js";
import { ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape, hasUnknownDims, shapesEqual } from "../../core/shape.js";
import { isFloat, promoteTypes, weakScalarDtype, type DType } from "../../core/dtype.js";
import type { ValueType } from "../../graph/ir.js";
import { TraceContext } from "../../staging/trace-context.js";
import { emitCond, openRegion, unifyCaptures, whileLoop } from "../../staging/control-flow.js";
import { scalarOf, toTensor } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { full } from "../../ops/fill.js";
import { broadcastTo, gather, stack, unstack } from "../../ops/shape.js";
import { add } from "../../ops/binary.js";
import { greater, less, logicalAnd, logicalOr } from "../../ops/compare.js";
import {
  AutoGraphError,
  activeTrace,
  at,
  describeValue,
  dtypeOfNumber,
  isGeneratedName,
  isTensorLike,
  isUndef,
  isWeak,
  leavesOf,
  markWeak,
  locArg,
  noSetState,
  noState,
  readIfVariable,
  relaxedShapeOf,
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
  type ArraySnap,
  type ObjectSnap,
  TensorList,
  emptyBuffer,
} from "./state.js";
import { concreteTruth, symbolicPredicate } from "./logical.js";
import { dimSize } from "./indexing.js";

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
  if (!activeTrace()) t.concrete(`use as the condition of ${construct}`);
  return symbolicPredicate(t, construct, loc);
}

// ---------------------------------------------------------------------------------------------
// staged cond

/** How a staged conditional names its values in messages. */
interface CondSite {
  /** "a staged if", "a staged conditional expression", ... */
  construct: string;
  loc: string | null | undefined;
  /** True for state variables (messages say "variable x"), false for expression values. */
  isState: boolean;
  labels: readonly string[];
}

/** A leaf filled with zeros of the other branch's type (generated names only). */
const ZERO = Symbol("zero filler");

type MNode =
  | { kind: "value"; value: unknown }
  | { kind: "out"; index: number }
  | { kind: "array"; orig: unknown[]; items: MNode[] }
  | { kind: "object"; orig: Record<string, unknown>; keys: string[]; items: MNode[] }
  | { kind: "list"; orig: TensorList; items: [MNode] };

interface Carried {
  a: unknown;
  b: unknown;
  path: string;
}

function subject(site: CondSite, path: string): string {
  return site.isState ? `variable ${path}` : path;
}

function mergeLeaf(x: unknown, y: unknown, path: string, name: string, site: CondSite, carried: Carried[]): MNode {
  if (Object.is(x, y)) return { kind: "value", value: x };
  if (isUndef(x) || isUndef(y)) {
    const defined = isUndef(x) ? y : x;
    if (isUndef(defined)) return { kind: "value", value: x };
    if (site.isState && isGeneratedName(name)) {
      if (!isTensorLike(defined)) return { kind: "value", value: defined };
      carried.push({ a: isUndef(x) ? ZERO : x, b: isUndef(y) ? ZERO : y, path });
      return { kind: "out", index: carried.length - 1 };
    }
    if (site.isState) {
      throw new AutoGraphError(
        `variable ${path} is assigned in only one branch of ${site.construct}${at(site.loc)}; assign it before the if or in both branches`,
        site.loc,
      );
    }
    throw new AutoGraphError(`${path} is undefined in only one branch of ${site.construct}${at(site.loc)}; give both branches a value`, site.loc);
  }
  if (isTensorLike(x) && isTensorLike(y)) {
    carried.push({ a: x, b: y, path });
    return { kind: "out", index: carried.length - 1 };
  }
  throw new AutoGraphError(
    `${subject(site, path)} holds different JavaScript values in the two branches of ${site.construct}${at(site.loc)} ` +
      `(${describeValue(x)} vs ${describeValue(y)}); only tensors, numbers and booleans (and arrays and plain objects of them) can depend on a tensor condition`,
    site.loc,
  );
}

const UNDEF_SNAP: Snap = { kind: "leaf", value: undefined };

function mergeSnap(a: Snap, b: Snap, path: string, name: string, site: CondSite, carried: Carried[]): MNode {
  if (a.kind === "leaf" && b.kind === "leaf") return mergeLeaf(a.value, b.value, path, name, site, carried);
  if (a.kind === "list" && b.kind === "list" && a.orig === b.orig) {
    return { kind: "list", orig: a.orig, items: [mergeSnap(a.items[0], b.items[0], path, name, site, carried)] };
  }
  if ((a.kind === "array" || a.kind === "object") && sameTop(a, b)) {
    const bb = b as typeof a;
    const items = a.items.map((c, i) => mergeSnap(c, bb.items[i]!, childPath(a, path, i), name, site, carried));
    if (a.kind === "array") return { kind: "array", orig: a.orig === bb.orig ? a.orig : [], items };
    return { kind: "object", orig: a.orig === bb.orig ? a.orig : {}, keys: a.keys, items };
  }
  // A nest on one side and no value on the other.
  const undefSide = a.kind === "leaf" && isUndef(a.value) ? "a" : b.kind === "leaf" && isUndef(b.value) ? "b" : null;
  const other = undefSide === "a" ? b : a;
  if (undefSide && site.isState && isGeneratedName(name) && (other.kind === "array" || other.kind === "object")) {
    const nest = other;
    const items = nest.items.map((c, i) =>
      undefSide === "a" ? mergeSnap(UNDEF_SNAP, c, childPath(nest, path, i), name, site, carried) : mergeSnap(c, UNDEF_SNAP, childPath(nest, path, i), name, site, carried),
    );
    if (nest.kind === "array") return { kind: "array", orig: [], items };
    return { kind: "object", orig: {}, keys: nest.keys, items };
  }
  if (undefSide) return mergeLeaf(a.kind === "leaf" ? a.value : snapValue(a), b.kind === "leaf" ? b.value : snapValue(b), path, name, site, carried);
  throw new AutoGraphError(
    `${subject(site, path)} has a different structure in the two branches of ${site.construct}${at(site.loc)}: ${structureDifference(a, b, path)}`,
    site.loc,
  );
}

function sameTop(a: ArraySnap | ObjectSnap, b: Snap): boolean {
  if (b.kind !== a.kind) return false;
  if (a.kind === "array") return a.items.length === (b as typeof a).items.length;
  const bk = (b as typeof a).keys;
  return a.keys.length === bk.length && a.keys.every((k, i) => bk[i] === k);
}

function childPath(s: ArraySnap | ObjectSnap, path: string, i: number): string {
  return s.kind === "array" ? `${path}[${i}]` : `${path}.${s.keys[i]}`;
}

function build(m: MNode, outs: Tensor[]): unknown {
  switch (m.kind) {
    case "value":
      return m.value;
    case "out":
      return outs[m.index];
    case "array": {
      const vals = m.items.map((c) => build(c, outs));
      const a = m.orig;
      if (a.length !== vals.length) a.length = vals.length;
      vals.forEach((v, i) => {
        if (!Object.is(a[i], v) || !(i in a)) a[i] = v;
      });
      return a;
    }
    case "list": {
      const b = build(m.items[0], outs) as Tensor;
      if (m.orig.buffer !== b) m.orig.buffer = b;
      return m.orig;
    }
    case "object": {
      const vals = m.items.map((c) => build(c, outs));
      const o = m.orig;
      const keep = new Set(m.keys);
      for (const k of Object.keys(o)) if (!keep.has(k)) delete o[k];
      m.keys.forEach((k, i) => {
        if (!Object.is(o[k], vals[i]) || !(k in o)) o[k] = vals[i];
      });
      return o;
    }
  }
}

/**
 * The dtype of a carried pair, the shape JS scalars (and weak scalar tensors) broadcast to,
 * and whether the result is weak (stands for a JS number). Strongly typed tensors must agree;
 * JS numbers and weak tensors take the strong dtype (a float keeps a float dtype).
 */
function unifyPair(c: Carried, site: CondSite): { dtype: DType; shape: readonly number[] | null; weak: boolean } {
  const sides = [c.a, c.b].filter((v) => v !== ZERO);
  const strong = sides.filter((v): v is Tensor => v instanceof Tensor && !isWeak(v));
  const weakOnes = sides.filter((v) => !(v instanceof Tensor && !isWeak(v)));
  const weakDtype = (v: unknown): DType => (v instanceof Tensor ? v.dtype : dtypeOfNumber(v as number | boolean));
  const shapeOf = strong[0]?.shape ?? sides.find((v): v is Tensor => v instanceof Tensor && v.rank > 0)?.shape ?? null;
  if (strong.length === 2 && strong[0]!.dtype !== strong[1]!.dtype) {
    throw new AutoGraphError(
      `${subject(site, c.path)} has dtype ${strong[0]!.dtype} in the first branch and ${strong[1]!.dtype} in the second branch of ${site.construct}${at(site.loc)}; cast one of them so both branches agree`,
      site.loc,
    );
  }
  if (strong.length > 0) {
    let d = strong[0]!.dtype;
    for (const w of weakOnes) {
      if (w instanceof Tensor) d = isFloat(d) ? d : isFloat(w.dtype) ? w.dtype : promoteTypes(d, w.dtype);
      else d = promoteTypes(d, weakScalarDtype(w as number | boolean, d));
    }
    return { dtype: d, shape: shapeOf, weak: false };
  }
  let d: DType | null = null;
  for (const w of weakOnes) d = d === null ? weakDtype(w) : promoteTypes(d, weakDtype(w));
  return { dtype: d ?? "float32", shape: shapeOf, weak: true };
}

function asTensor(x: unknown, dtype: DType, shape: readonly number[] | null): Tensor {
  if (x instanceof Tensor) {
    let t = readIfVariable(x) as Tensor;
    if (t.dtype !== dtype) t = cast(t, dtype);
    if (isWeak(x) && t.rank === 0 && shape && shape.length > 0 && !hasUnknownDims(shape)) t = broadcastTo(t, shape);
    return t;
  }
  const v = x === ZERO ? 0 : Number(x as number | boolean);
  if (shape && shape.length > 0 && !hasUnknownDims(shape)) return full([...shape], v, dtype);
  return scalarOf(v, dtype);
}

/**
 * Stages `cond(pred, thenFn, elseFn)` where each branch returns an array of values (the state
 * after the branch, or one expression value). Returns the merged values: JS values equal in
 * both branches as they are, tensors/numbers/booleans as outputs of the cond node; arrays and
 * plain objects that are the same object in both branches are updated in place.
 */
function stagedCond(ctx: TraceContext, pred: Tensor, thenFn: () => unknown[], elseFn: () => unknown[], site: CondSite): unknown[] {
  const tctx = openRegion(ctx, "then");
  const ectx = openRegion(ctx, "else");
  try {
    // Branches are traced plainly: while tapes record, the gradient rule splits them afterwards.
    const ts = withoutRecorders(null, () => withHandler(tctx, () => thenFn().map((v) => snapshot(v))));
    const es = withoutRecorders(null, () => withHandler(ectx, () => elseFn().map((v) => snapshot(v))));
    const carried: Carried[] = [];
    const merged = ts.map((s, i) => {
      const name = site.labels[i] ?? `value ${i}`;
      return mergeSnap(s, es[i] ?? UNDEF_SNAP, name, name, site, carried);
    });
    const thenOuts: Tensor[] = [];
    const elseOuts: Tensor[] = [];
    const types: ValueType[] = [];
    const weakOuts: boolean[] = [];
    for (const c of carried) {
      const { dtype, shape, weak } = unifyPair(c, site);
      weakOuts.push(weak);
      const x = withHandler(tctx, () => asTensor(c.a, dtype, shape));
      const y = withHandler(ectx, () => asTensor(c.b, dtype, shape));
      if (x.rank !== y.rank) {
        throw new AutoGraphError(
          `${subject(site, c.path)} has shape ${fmtShape(x.shape)} in the first branch and ${fmtShape(y.shape)} in the second branch of ${site.construct}${at(site.loc)}; their ranks must agree`,
          site.loc,
        );
      }
      thenOuts.push(x);
      elseOuts.push(y);
      types.push({ dtype, shape: x.shape.map((d, j) => (d === y.shape[j] ? d : -1)) });
    }
    tctx.graph.setOutputs(thenOuts.map((x) => tctx.valueOf(x)));
    ectx.graph.setOutputs(elseOuts.map((x) => ectx.valueOf(x)));
    const operands = unifyCaptures([tctx, ectx], 0);
    const outs = emitCond(ctx, pred, operands, tctx.graph, ectx.graph, types);
    outs.forEach((o, k) => weakOuts[k] && markWeak(o));
    return merged.map((m) => build(m, outs));
  } finally {
    tctx.active = false;
    ectx.active = false;
  }
}

/** A staged conditional over values: `pred ? thenFn() : elseFn()` with `pred` a symbolic bool scalar. */
export function condValues(pred: Tensor, thenFn: () => unknown, elseFn: () => unknown, construct: string, label: string, loc?: string | null): unknown {
  const ctx = activeTrace();
  if (!ctx) return concreteTruth(pred, construct, loc) ? thenFn() : elseFn();
  return stagedCond(ctx, pred, () => [thenFn()], () => [elseFn()], { construct: `a staged ${construct}`, loc, isState: false, labels: [label] })[0];
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
      stagedWhile({ test, body, getState, setState, names, loc, opts, construct: "while" });
      return;
    }
    if (!p) return;
    body();
  }
}

/** Raised inside a loop trace to trace again with a better plan for one state leaf (by path). */
class RetryLoop {
  constructor(
    readonly path: string,
    readonly override: Override,
    /** A generated variable with no value before the loop that the body makes a nest: its zero-filled start. */
    readonly replaceVar?: { index: number; snap: Snap },
    /** An array the body appends to: it becomes a tensor list of these elements. */
    readonly toList?: { index: number; dtype: DType; elementShape: readonly number[] },
  ) {}
}

/** Tensors a loop made by stacking a tensor list (an enclosing loop turns that array into a list too). */
const stackedLists = new WeakSet<Tensor>();

/** The element type of the values appended to an array in a loop body, or null if they cannot form a list. */
function listElementType(appended: readonly Snap[]): { dtype: DType; elementShape: readonly number[] } | null {
  if (appended.length === 0) return null;
  let strong: DType | null = null;
  let weakD: DType | null = null;
  let shape: readonly number[] | null = null;
  for (const it of appended) {
    if (it.kind !== "leaf" || !isTensorLike(it.value)) return null;
    const v = it.value;
    const s = v instanceof Tensor ? v.shape : [];
    if (shape === null) shape = s;
    else if (shape.length !== s.length) return null;
    else shape = shape.map((d, j) => (d === s[j] ? d : -1));
    if (v instanceof Tensor && !isWeak(v)) {
      if (strong !== null && strong !== v.dtype) return null;
      strong = v.dtype;
    } else {
      const d = v instanceof Tensor ? v.dtype : dtypeOfNumber(v as number | boolean);
      weakD = weakD === null ? d : promoteTypes(weakD, d);
    }
  }
  return { dtype: strong ?? weakD ?? "float32", elementShape: shape ?? [] };
}

/** A list's starting buffer: the array's current elements, stacked (or an empty buffer). */
function listBuffer(prefix: readonly unknown[], dtype: DType, elementShape: readonly number[], name: string, where: string, loc: string | null | undefined): Tensor {
  if (prefix.length === 0) {
    const b = emptyBuffer(dtype, elementShape);
    if (!b) throw new AutoGraphError(`variable ${name} is appended to inside ${where} with elements of partly unknown shape ${fmtShape(elementShape)}; give it a first element before the loop`, loc);
    return b;
  }
  const items = prefix.map((v, k) => {
    if (!isTensorLike(v)) throw new AutoGraphError(`variable ${name} is appended to inside ${where}, so it becomes a tensor list, but its element ${k} is ${describeValue(v)}`, loc);
    const t = v instanceof Tensor ? (readIfVariable(v) as Tensor) : scalarOf(Number(v), dtype);
    return t.dtype === dtype ? t : cast(t, dtype);
  });
  return stack(items, 0);
}

/** A loop-variable start of zeros (generated names whose first value comes from the body). */
class ZeroFill {
  constructor(
    readonly dtype: DType,
    readonly shape: readonly number[],
  ) {}
}

/** A fresh nest like `s` with tensor-like leaves replaced by zeros of their type (null if a shape is unknown). */
function zeroFilled(s: Snap): Snap | null {
  if (s.kind === "leaf") {
    const v = s.value;
    if (!isTensorLike(v)) return { kind: "leaf", value: v };
    const dtype = v instanceof Tensor ? v.dtype : dtypeOfNumber(v);
    const shape = v instanceof Tensor ? v.shape : [];
    return hasUnknownDims(shape) ? null : { kind: "leaf", value: new ZeroFill(dtype, shape) };
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
  /** A generated name with no value before the loop: start from zeros of this type. */
  zeros?: { dtype: DType; shape: readonly number[] };
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
  if (ov?.zeros) return tensorPlan(full([...ov.zeros.shape], 0, ov.zeros.dtype), false, undefined);
  if (v instanceof ZeroFill) return tensorPlan(full([...v.shape], 0, v.dtype), false, undefined);
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
interface StagedLoop {
  test: () => unknown;
  body: () => void;
  getState: GetState;
  setState: SetState;
  names: readonly string[];
  loc: string | null | undefined;
  opts: LoopOptions;
  /** The source construct, for messages ("while", "for...of"). */
  construct: string;
}

/**
 * Stages a loop over its state: tensors (and numbers and booleans, which become tensors) are
 * loop variables; other JS values must not change.
 */
function stagedWhile(loop: StagedLoop): void {
  const { getState, setState, names, loc, construct } = loop;
  const init = getState();
  const snaps = init.map((v) => snapshot(v));
  const overrides = new Map<string, Override>();
  const toStack = new Set<number>();
  for (let attempt = 0; ; attempt++) {
    const leaves: LeafRef[] = [];
    snaps.forEach((s, i) => leavesOf(s, names[i] ?? `state[${i}]`, undefined, leaves));
    try {
      stagedWhileAttempt(loop, snaps, leaves, overrides);
      break;
    } catch (e) {
      if (!(e instanceof RetryLoop) || attempt > leaves.length + 8) throw e;
      if (e.replaceVar) snaps[e.replaceVar.index] = e.replaceVar.snap;
      else if (e.toList) {
        const { index, dtype, elementShape } = e.toList;
        const name = names[index] ?? `state[${index}]`;
        const where = `a staged ${construct} loop${at(loc)}`;
        const before = snaps[index]!;
        const prefix = before.kind === "array" ? before.items.map(snapValue) : [];
        for (const s of snaps) restore(s);
        const list = new TensorList(listBuffer(prefix, dtype, elementShape, name, where, loc));
        const top = snaps.map(snapValue);
        top[index] = list;
        setState(top);
        if (getState()[index] !== list) {
          throw new AutoGraphError(
            `variable ${name} is an array appended to inside ${where}: it becomes a tensor list (a tensor after the loop), so it must be rebindable; declare it with let rather than const`,
            loc,
          );
        }
        snaps[index] = snapshot(list);
        toStack.add(index);
      } else overrides.set(e.path, { ...overrides.get(e.path), ...e.override });
    }
  }
  if (toStack.size > 0) {
    // The lists this loop made from arrays are stacked: the variables hold tensors now.
    const top = getState();
    for (const i of toStack) {
      const list = top[i];
      if (list instanceof TensorList) {
        stackedLists.add(list.buffer);
        top[i] = list.buffer;
      }
    }
    setState(top);
  }
}

function stagedWhileAttempt(loop: StagedLoop, snaps: Snap[], leaves: LeafRef[], overrides: Map<string, Override>): void {
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
      throw new AutoGraphError(`the condition of ${where} assigns variable ${what}; move the assignment into the loop body`, loc);
    }
    if (r instanceof Tensor) return symbolicPredicate(readIfVariable(r) as Tensor, construct, loc);
    return scalarOf(r ? 1 : 0, "bool");
  };

  const bodyFn = (...vs: Tensor[]): Tensor[] => {
    write(vs);
    body();
    const { after, values } = readLeaves();
    after.forEach((s, i) => {
      if (!sameStructure(snaps[i]!, s)) {
        const name = names[i] ?? `state[${i}]`;
        const before = snaps[i]!;
        if (before.kind === "leaf" && isUndef(before.value) && isGeneratedName(name)) {
          const z = zeroFilled(s);
          if (z) throw new RetryLoop(name, {}, { index: i, snap: z });
        }
        if (before.kind === "array") {
          // An array the body appends to (or that an inner loop turned into a stacked list).
          let elem: { dtype: DType; elementShape: readonly number[] } | null = null;
          if (s.kind === "array" && s.orig === before.orig && s.items.length > before.items.length) elem = listElementType(s.items.slice(before.items.length));
          else if (s.kind === "leaf" && s.value instanceof Tensor && stackedLists.has(s.value)) elem = { dtype: s.value.dtype, elementShape: s.value.shape.slice(1) };
          if (elem) throw new RetryLoop(name, {}, undefined, { index: i, ...elem });
        }
        throw new AutoGraphError(
          `variable ${name} changes structure inside ${where}: ${structureDifference(snaps[i]!, s, name)}; loop variables must keep their structure (give arrays their final length before the loop)`,
          loc,
        );
      }
    });
    const results: Tensor[] = [];
    plans.forEach((p, i) => {
      const out = values[i];
      const l = leaves[i]!;
      if (p.kind === "fixed") {
        if (Object.is(out, p.orig) || (isUndef(out) && isUndef(p.orig))) return;
        if (isUndef(p.orig)) {
          if (isGeneratedName(l.name) && isTensorLike(out)) {
            const t = out instanceof Tensor ? out : null;
            const dtype = t ? t.dtype : dtypeOfNumber(out as number | boolean);
            const shape = t ? t.shape : [];
            if (!hasUnknownDims(shape)) throw new RetryLoop(l.path, { zeros: { dtype, shape } });
          }
          throw new AutoGraphError(`variable ${l.path} is first assigned inside ${where} and used after it; assign it before the loop`, loc);
        }
        if (p.orig instanceof Variable && isTensorLike(out)) throw new RetryLoop(l.path, { asVar: true });
        throw new AutoGraphError(
          `variable ${l.path} holds ${describeValue(p.orig)} and is changed to ${describeValue(out)} inside ${where}; only tensors, numbers and booleans can change in a staged loop`,
          loc,
        );
      }
      if (!isTensorLike(out)) {
        throw new AutoGraphError(`variable ${l.path} is a ${p.dtype} tensor before ${where} and becomes ${describeValue(out)} in its body; loop variables must stay tensors`, loc);
      }
      let t: Tensor;
      if (out instanceof Tensor) t = readIfVariable(out) as Tensor;
      else {
        const d = typeof out === "boolean" ? (p.dtype === "bool" ? "bool" : p.dtype) : weakScalarDtype(out, p.dtype);
        t = p.shape.length > 0 && !hasUnknownDims(p.shape) ? full([...p.shape], Number(out), d) : scalarOf(Number(out), d);
      }
      const dtypeOk = t.dtype === p.dtype;
      const shapeOk = shapeFits(p, t);
      if ((!dtypeOk || !shapeOk) && p.fromNumber && !p.ov?.dtype && !p.ov?.shape && !hasUnknownDims(t.shape)) {
        throw new RetryLoop(l.path, { dtype: t.dtype, shape: t.shape });
      }
      if (!dtypeOk) {
        throw new AutoGraphError(
          `variable ${l.path} changes dtype from ${p.dtype} to ${t.dtype} inside ${where}; loop variables must keep their dtype (cast the new value, or give the variable that dtype before the loop)`,
          loc,
        );
      }
      if (!shapeOk) {
        throw new AutoGraphError(
          `variable ${l.path} changes shape from ${fmtShape(p.shape)} to ${fmtShape(t.shape)} inside ${where}; loop variables must keep their shape ` +
            `unless relaxed: call sc.relaxShape(${l.name}) before the loop, or pass shapeInvariants`,
          loc,
        );
      }
      results.push(t);
    });
    return results;
  };

  const hasInvariants = vars.some((p) => p.invariant);
  const outs = whileLoop(condFn, bodyFn, vars.map((p) => p.init), {
    ...(hasInvariants ? { shapeInvariants: vars.map((p) => p.invariant) } : {}),
    ...(opts.maximumIterations !== undefined ? { maxIterations: opts.maximumIterations } : {}),
  });
  write(outs);
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
    if (!t.isSymbolic) return nativeFor(t.shape[0] === 0 ? [] : unstack(t, 0), body, getState, setState, names, loc, opts);
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
    names: [...names, "$i"],
    loc,
    opts,
    construct: "for...of",
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
