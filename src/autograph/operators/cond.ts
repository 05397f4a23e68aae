/**
 * Staged conditionals: both branches traced into a `cond` node whose outputs are the values the
 * branches give (the state an `if` modifies, or an expression's value), merged leaf by leaf:
 * JS values equal in both branches stay JS values; tensors, numbers and booleans become outputs
 * (numbers weakly typed); arrays and plain objects are rewritten in place.
 */
import { Tensor } from "../../core/tensor.js";
import { withHandler, withoutRecorders } from "../../core/context.js";
import { fmtShape, hasUnknownDims } from "../../core/shape.js";
import { isFloat, promoteTypes, weakScalarDtype, type DType } from "../../core/dtype.js";
import type { ValueType } from "../../graph/ir.js";
import { TraceContext } from "../../staging/trace-context.js";
import { emitCond, openRegion, unifyCaptures } from "../../staging/control-flow.js";
import { scalarOf } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { full } from "../../ops/fill.js";
import { broadcastTo, stack } from "../../ops/shape.js";
import {
  AutoGraphError,
  RETURNED_UNDEFINED,
  subjectOf,
  activeTrace,
  at,
  describeValue,
  dtypeOfNumber,
  isGeneratedName,
  isTensorLike,
  isUndef,
  isWeak,
  markWeak,
  readIfVariable,
  snapValue,
  snapshot,
  structureDifference,
  type Snap,
  type ArraySnap,
  type ObjectSnap,
  type ElementType,
  TensorList,
  asElement,
  emptyBuffer,
  listType,
} from "./state.js";
import { concreteTruth } from "./logical.js";
import { call, registerConverted } from "./calls.js";
import { controlFlowTransform, transformedCondValue } from "./batched.js";


/** How a staged conditional names its values in messages. */
interface CondSite {
  /** "a staged if", "a staged conditional expression", ... */
  construct: string;
  loc: string | null | undefined;
  /** True for state variables (messages say "variable x"), false for expression values. */
  isState: boolean;
  labels: readonly string[];
  /** The staged predicate (set by stagedCond). */
  pred?: Tensor;
}

/** A leaf filled with zeros of the other branch's type (generated names only). */
const ZERO = Symbol("zero filler");

type MNode =
  | { kind: "value"; value: unknown }
  | { kind: "out"; index: number }
  | { kind: "array"; orig: unknown[]; items: MNode[] }
  | { kind: "object"; orig: Record<string, unknown>; keys: string[]; items: MNode[] }
  | { kind: "list"; orig: TensorList; items: [MNode] }
  /** An array of different lengths in the two branches: a tensor list of the buffer output. */
  | { kind: "newList"; weak: boolean; index: number };

interface Carried {
  a: unknown;
  b: unknown;
  path: string;
  /** The two sides are an array's or a list's elements, stacked into buffers of this element type. */
  list?: ElementType;
}

function subject(site: CondSite, path: string): string {
  return site.isState ? subjectOf(path) : path;
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
        `${subjectOf(path)} is assigned in only one branch of ${site.construct}${at(site.loc)}; assign it before the if or in both branches`,
        site.loc,
      );
    }
    throw new AutoGraphError(`${path} is undefined in only one branch of ${site.construct}${at(site.loc)}; give both branches a value`, site.loc);
  }
  if (isTensorLike(x) && isTensorLike(y)) {
    carried.push({ a: x, b: y, path });
    return { kind: "out", index: carried.length - 1 };
  }
  if (typeof x === "function" && typeof y === "function" && site.pred) return { kind: "value", value: chosenFunction(site.pred, x as Fn, y as Fn, site) };
  if (x === RETURNED_UNDEFINED || y === RETURNED_UNDEFINED) {
    throw new AutoGraphError(
      `this function returns undefined in one branch of ${site.construct}${at(site.loc)} and ${describeValue(x === RETURNED_UNDEFINED ? y : x)} in the other; ` +
        `a staged conditional cannot give undefined on one path: return a value on every path`,
      site.loc,
    );
  }
  throw new AutoGraphError(
    `${subject(site, path)} holds different JavaScript values in the two branches of ${site.construct}${at(site.loc)} ` +
      `(${describeValue(x)} vs ${describeValue(y)}); only tensors, numbers and booleans (and arrays and plain objects of them) can depend on a tensor condition`,
    site.loc,
  );
}

const UNDEF_SNAP: Snap = { kind: "leaf", value: undefined };

type Fn = (...args: any[]) => any;

/**
 * A staged conditional that chooses between two functions (`const f = x > 0 ? g : h`): a
 * function that, called while the graph is traced, stages a conditional of the two calls on the
 * same predicate (`f(v)` is `cond(pred, () => g(v), () => h(v))`), as Myia closure-converts a
 * choice of closures. Called after the trace, it is an error (its predicate is symbolic).
 */
function chosenFunction(pred: Tensor, a: Fn, b: Fn, site: CondSite): Fn {
  const label = `the value of the function chosen by ${site.construct}${at(site.loc)}`;
  const chosen = function (this: unknown, ...args: unknown[]): unknown {
    return condValues(pred, () => call(a, this, args), () => call(b, this, args), "call of a function chosen by a staged condition", label, site.loc);
  };
  // (converted code calls it as it is)
  registerConverted(chosen, chosen);
  return chosen;
}

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
  const grown = site.isState ? listMerge(a, b, path, site, carried) : null;
  if (grown) return grown;
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

/** The element type of an array's elements or a list's; undefined for an empty array, null when they cannot form a list. */
function elementTypeOf(s: Snap): ElementType | null | undefined {
  if (s.kind === "list") return { dtype: s.orig.buffer.dtype, elementShape: s.orig.buffer.shape.slice(1), weak: s.orig.weak };
  if (s.kind === "array") return s.items.length === 0 ? undefined : listType(s.items.map(snapValue));
  return null;
}

function commonElementType(a: ElementType | undefined, b: ElementType | undefined): ElementType | null {
  if (!a || !b) return a ?? b ?? null;
  if (a.elementShape.length !== b.elementShape.length || a.elementShape.some((d, j) => d !== b.elementShape[j])) return null;
  if (!a.weak && !b.weak && a.dtype !== b.dtype) return null;
  const dtype = a.weak === b.weak ? promoteTypes(a.dtype, b.dtype) : a.weak ? b.dtype : a.dtype;
  return { dtype, elementShape: a.elementShape, weak: a.weak && b.weak };
}

/**
 * An array whose length differs between the branches (a push in one of them), or that one
 * branch made a tensor list: a tensor list after the conditional, its buffer a cond output
 * (its length known only when the graph runs). Null when the two sides are not such a pair.
 */
function listMerge(a: Snap, b: Snap, path: string, site: CondSite, carried: Carried[]): MNode | null {
  const arrays = a.kind === "array" && b.kind === "array" && a.orig === b.orig && a.items.length !== b.items.length;
  const mixed = (a.kind === "list" && b.kind === "array") || (a.kind === "array" && b.kind === "list");
  if (!arrays && !mixed) return null;
  const ta = elementTypeOf(a);
  const tb = elementTypeOf(b);
  const ty = ta === null || tb === null ? null : commonElementType(ta, tb);
  if (!ty || hasUnknownDims(ty.elementShape)) {
    throw new AutoGraphError(
      `${subject(site, path)} changes length in ${site.construct}${at(site.loc)}, so it becomes a tensor list, but its elements ` +
        `${ty ? `have partly unknown shape ${fmtShape(ty.elementShape)}` : "are not tensors, numbers or booleans of one dtype and shape"}`,
      site.loc,
    );
  }
  // (an array's elements as each branch left them: the array itself holds only the last branch's)
  const side = (s: Snap): unknown => (s.kind === "array" ? s.items.map(snapValue) : snapValue(s));
  carried.push({ a: side(a), b: side(b), path, list: ty });
  return { kind: "newList", weak: ty.weak, index: carried.length - 1 };
}

/** One branch's side of a list pair as a buffer of the element type (traced in that branch). */
function listSide(v: unknown, ty: ElementType): Tensor {
  if (v instanceof TensorList) return v.buffer.dtype === ty.dtype ? v.buffer : cast(v.buffer, ty.dtype);
  const items = v as unknown[];
  if (items.length === 0) return emptyBuffer(ty.dtype, ty.elementShape)!;
  return stack(items.map((e) => asElement(e, ty.dtype)), 0);
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
    case "newList":
      return new TensorList(outs[m.index]!, m.weak);
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
export function stagedCond(ctx: TraceContext, pred: Tensor, thenFn: () => unknown[], elseFn: () => unknown[], site: CondSite): unknown[] {
  const tctx = openRegion(ctx, "then");
  const ectx = openRegion(ctx, "else");
  try {
    // Branches are traced plainly: while tapes record, the gradient rule splits them afterwards.
    const ts = withoutRecorders(null, () => withHandler(tctx, () => thenFn().map((v) => snapshot(v))));
    const es = withoutRecorders(null, () => withHandler(ectx, () => elseFn().map((v) => snapshot(v))));
    const carried: Carried[] = [];
    const withPred = { ...site, pred };
    const merged = ts.map((s, i) => {
      const name = site.labels[i] ?? `value ${i}`;
      return mergeSnap(s, es[i] ?? UNDEF_SNAP, name, name, withPred, carried);
    });
    const thenOuts: Tensor[] = [];
    const elseOuts: Tensor[] = [];
    const types: ValueType[] = [];
    const weakOuts: boolean[] = [];
    for (const c of carried) {
      if (c.list) {
        const ty = c.list;
        const x = withHandler(tctx, () => listSide(c.a, ty));
        const y = withHandler(ectx, () => listSide(c.b, ty));
        weakOuts.push(false);
        thenOuts.push(x);
        elseOuts.push(y);
        types.push({ dtype: ty.dtype, shape: x.shape.map((d, j) => (d === y.shape[j] ? d : -1)) });
        continue;
      }
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
  const tr = controlFlowTransform();
  if (!ctx && tr) return transformedCondValue(tr, pred, thenFn, elseFn, construct, label, loc);
  if (!ctx) return concreteTruth(pred, construct, loc) ? thenFn() : elseFn();
  return stagedCond(ctx, pred, () => [thenFn()], () => [elseFn()], { construct: `a staged ${construct}`, loc, isState: false, labels: [label] })[0];
}
