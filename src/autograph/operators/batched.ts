/**
 * if / ?: / while under a value transformation (vmap: the current handler's `controlFlow`):
 * the construct's state goes through the transformation's cond and whileLoop. A predicate that
 * differs per example runs both branches and merges each variable with `where` (selectValue);
 * a batched loop keeps each example's state once its own condition is false.
 */
import { currentHandler, type ControlFlowTransform } from "../../core/context.js";
import { promoteTypes, type DType } from "../../core/dtype.js";
import { Tensor } from "../../core/tensor.js";
import { scalarOf, toTensor } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { where } from "../../ops/where.js";
import {
  AutoGraphError,
  at,
  describeValue,
  dtypeOfNumber,
  isGeneratedName,
  isTensorLike,
  isUndef,
  isWeak,
  markWeak,
  readIfVariable,
  restore,
  snapshot,
  subjectOf,
  type GetState,
  type SetState,
  type Snap,
} from "./state.js";
import { symbolicPredicate } from "./logical.js";

/** The current handler's control-flow transformation (vmap), if any. */
export function controlFlowTransform(): ControlFlowTransform | undefined {
  return currentHandler().controlFlow;
}

const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype;

/** A copy of the arrays and plain objects of a value (a branch's state, before the other branch rewrites them in place). */
function copyNest(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(copyNest);
  if (isPlainObject(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, copyNest(v)]));
  return x;
}

interface Site {
  construct: string;
  loc: string | null | undefined;
  /** State variables ("variable x") or an expression's value. */
  isState: boolean;
}

const subject = (site: Site, path: string) => (site.isState ? subjectOf(path) : path);

function tensorDtype(x: Tensor | number | boolean): DType {
  return x instanceof Tensor ? x.dtype : dtypeOfNumber(x);
}
const isWeakLike = (x: unknown) => !(x instanceof Tensor) || isWeak(x);

/** `where(pred, a, b)` of two tensor-like values: strong dtypes must agree, weak ones (JS numbers) take the strong one. */
function selectTensors(pred: Tensor, a: Tensor | number | boolean, b: Tensor | number | boolean, path: string, site: Site): Tensor {
  const x = readIfVariable(a) as Tensor | number | boolean;
  const y = readIfVariable(b) as Tensor | number | boolean;
  const strong = [x, y].filter((v): v is Tensor => v instanceof Tensor && !isWeakLike(v));
  if (strong.length === 2 && (strong[0]!.dtype !== strong[1]!.dtype || strong[0]!.rank !== strong[1]!.rank)) {
    throw new AutoGraphError(
      `${subject(site, path)} is ${strong[0]!.dtype}[${strong[0]!.shape.join(", ")}] in the first branch and ${strong[1]!.dtype}[${strong[1]!.shape.join(", ")}] in the second branch of ${site.construct}${at(site.loc)}; both branches must agree in dtype and rank`,
      site.loc,
    );
  }
  const dtype = strong[0]?.dtype ?? promoteTypes(tensorDtype(x), tensorDtype(y));
  const as = (v: Tensor | number | boolean) => (v instanceof Tensor ? (v.dtype === dtype ? v : cast(v, dtype)) : scalarOf(Number(v), dtype));
  const r = where(pred, as(x), as(y));
  return strong.length === 0 ? markWeak(r) : r;
}

/** The merge of one value of the two branches, per example by `pred`. */
function selectValue(pred: Tensor, a: unknown, b: unknown, path: string, site: Site): unknown {
  if (Object.is(a, b)) return a;
  if (isUndef(a) || isUndef(b)) {
    // (a generated variable is read only on the paths that set it: `$ret` and the like)
    if (site.isState && isGeneratedName(path)) return isUndef(a) ? b : a;
    throw new AutoGraphError(`${subject(site, path)} is ${site.isState ? "assigned" : "defined"} in only one branch of ${site.construct}${at(site.loc)}; give it a value in both branches (or before the if)`, site.loc);
  }
  if (isTensorLike(a) && isTensorLike(b)) return selectTensors(pred, a, b, path, site);
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.map((x, i) => selectValue(pred, x, b[i], `${path}[${i}]`, site));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    if (keys.length === Object.keys(b).length && keys.every((k) => k in b)) return Object.fromEntries(keys.map((k) => [k, selectValue(pred, a[k], b[k], `${path}.${k}`, site)]));
  }
  throw new AutoGraphError(
    `${subject(site, path)} holds different JavaScript values in the two branches of ${site.construct}${at(site.loc)} (${describeValue(a)} vs ${describeValue(b)}); ` +
      `under vmap only tensors, numbers and booleans (and arrays and plain objects of them of one structure) can differ per example`,
    site.loc,
  );
}

/** `if` under vmap: the branches run through the transformation's cond, their states merged per example. */
export function transformedIf(
  tr: ControlFlowTransform,
  pred: Tensor,
  thenFn: () => void,
  elseFn: (() => void) | null | undefined,
  getState: GetState,
  setState: SetState,
  names: readonly string[],
  loc: string | null | undefined,
): void {
  const init = getState();
  const snaps = init.map((v) => snapshot(v));
  // (per branch: the arrays and objects it left the same objects as before it, which it may have changed in place)
  const kept: Set<string>[] = [];
  const branch = (fn: (() => void) | null | undefined) => () => {
    for (const s of snaps) restore(s);
    setState(init);
    if (fn) fn();
    const state = getState();
    const same = new Set<string>();
    state.forEach((v, i) => keptNests(v, snaps[i]!, String(i), same));
    kept.push(same);
    return state.map(copyNest);
  };
  const site: Site = { construct: "a batched if (under vmap)", loc, isState: true };
  const merged = tr.cond(pred, branch(thenFn), branch(elseFn), (p, a, b) => a.map((x, i) => selectValue(p, x, b[i], names[i] ?? `state[${i}]`, site)));
  // an array or object both branches kept (changed in place, a const) holds the merged values
  const both = new Set([...(kept[0] ?? [])].filter((k) => kept.every((s) => s.has(k))));
  setState(merged.map((m, i) => writeBack(init[i], m, String(i), both)));
}

/** The paths (under `path`) where `now` is the same array or plain object as before the branch (`before`, its snapshot). */
function keptNests(now: unknown, before: Snap, path: string, out: Set<string>): void {
  if ((before.kind !== "array" && before.kind !== "object") || now !== before.orig) return;
  out.add(path);
  if (before.kind === "array") before.items.forEach((c, i) => keptNests((now as unknown[])[i], c, `${path}[${i}]`, out));
  else before.items.forEach((c, i) => keptNests((now as Record<string, unknown>)[before.keys[i]!], c, `${path}.${before.keys[i]}`, out));
}

/** `merged` written into `orig` in place where both branches kept `orig` (`keep`), else `merged` itself. */
function writeBack(orig: unknown, merged: unknown, path: string, keep: Set<string>): unknown {
  if (!keep.has(path)) return merged;
  if (Array.isArray(orig) && Array.isArray(merged)) {
    const vals = merged.map((m, i) => writeBack(orig[i], m, `${path}[${i}]`, keep));
    orig.length = vals.length;
    vals.forEach((v, i) => (orig[i] = v));
    return orig;
  }
  if (isPlainObject(orig) && isPlainObject(merged)) {
    for (const k of Object.keys(orig)) if (!(k in merged)) delete orig[k];
    for (const [k, m] of Object.entries(merged)) orig[k] = writeBack(orig[k], m, `${path}.${k}`, keep);
    return orig;
  }
  return merged;
}

/** `pred ? a : b` under vmap. */
export function transformedCondValue(tr: ControlFlowTransform, pred: Tensor, thenFn: () => unknown, elseFn: () => unknown, construct: string, label: string, loc: string | null | undefined): unknown {
  const site: Site = { construct: `a batched ${construct} (under vmap)`, loc, isState: false };
  return tr.cond(pred, thenFn, elseFn, (p, a, b) => selectValue(p, a, b, label, site));
}

/** Where a loop variable of the state sits (its index among the loop's tensors). */
class Slot {
  constructor(
    readonly index: number,
    readonly path: string,
    readonly dtype: DType,
    readonly weak: boolean,
  ) {}
}

/**
 * `while` under vmap: the state's tensors, numbers and booleans are the loop variables of the
 * transformation's whileLoop (numbers as weak tensors); its other values must not change.
 */
export function transformedWhile(
  tr: ControlFlowTransform,
  loop: { test: () => unknown; body: () => void; getState: GetState; setState: SetState; names: readonly string[]; loc: string | null | undefined; construct: string; maximumIterations?: number },
): void {
  const { loc } = loop;
  const where_ = `a batched ${loop.construct} loop (under vmap)${at(loc)}`;
  const initVars: Tensor[] = [];
  const flatten = (x: unknown, path: string): unknown => {
    if (isTensorLike(x)) {
      const v = readIfVariable(x) as Tensor | number | boolean;
      const t = v instanceof Tensor ? v : scalarOf(Number(v), dtypeOfNumber(v));
      initVars.push(t);
      return new Slot(initVars.length - 1, path, t.dtype, isWeakLike(v));
    }
    if (Array.isArray(x)) return x.map((e, i) => flatten(e, `${path}[${i}]`));
    if (isPlainObject(x)) return Object.fromEntries(Object.entries(x).map(([k, e]) => [k, flatten(e, `${path}.${k}`)]));
    return x;
  };
  const template = loop.getState().map((v, i) => flatten(v, loop.names[i] ?? `state[${i}]`));
  const fill = (t: unknown, vars: Tensor[]): unknown => {
    if (t instanceof Slot) return t.weak ? markWeak(vars[t.index]!) : vars[t.index]!;
    if (Array.isArray(t)) return t.map((e) => fill(e, vars));
    if (isPlainObject(t)) return Object.fromEntries(Object.entries(t).map(([k, e]) => [k, fill(e, vars)]));
    return t;
  };
  const rebuild = (vars: Tensor[]) => template.map((t) => fill(t, vars));
  const readBack = (state: unknown[]): Tensor[] => {
    const out: Tensor[] = [];
    const walk = (t: unknown, x: unknown, path: string): void => {
      if (t instanceof Slot) {
        if (!isTensorLike(x)) throw new AutoGraphError(`${subjectOf(path)} is a tensor before ${where_} and ${describeValue(x)} after its body`, loc);
        const v = readIfVariable(x) as Tensor | number | boolean;
        const dtype = tensorDtype(v);
        if (dtype !== t.dtype && !(isWeakLike(v) && typeof v !== "object" && promoteTypes(dtype, t.dtype) === t.dtype)) {
          throw new AutoGraphError(`${subjectOf(path)} changes dtype from ${t.dtype} to ${dtype} in the body of ${where_}; give it the dtype it takes before the loop`, loc);
        }
        out[t.index] = v instanceof Tensor ? v : scalarOf(Number(v), t.dtype);
        return;
      }
      if (Array.isArray(t) && Array.isArray(x) && t.length === x.length) return t.forEach((e, i) => walk(e, x[i], `${path}[${i}]`));
      if (isPlainObject(t) && isPlainObject(x) && Object.keys(t).length === Object.keys(x).length) return Object.keys(t).forEach((k) => walk(t[k], x[k], `${path}.${k}`));
      if (Array.isArray(t) && Array.isArray(x)) {
        throw new AutoGraphError(`${subjectOf(path)} changes length from ${t.length} to ${x.length} in the body of ${where_}: a list that grows by a different count per example cannot be batched yet; preallocate a tensor and write rows with a mask`, loc);
      }
      if (!Object.is(t, x)) {
        throw new AutoGraphError(`${subjectOf(path)} changes from ${describeValue(t)} to ${describeValue(x)} in the body of ${where_}; only tensors, numbers and booleans can change in a batched loop`, loc);
      }
    };
    state.forEach((x, i) => walk(template[i], x, loop.names[i] ?? `state[${i}]`));
    return out;
  };
  const test = (...vars: Tensor[]): Tensor => {
    loop.setState(rebuild(vars));
    const c = loop.test();
    if (!(c instanceof Tensor)) return toTensor(Boolean(c), loop.construct);
    return symbolicPredicate(readIfVariable(c) as Tensor, loop.construct, loc);
  };
  const body = (...vars: Tensor[]): Tensor[] => {
    loop.setState(rebuild(vars));
    loop.body();
    return readBack(loop.getState());
  };
  const out = tr.whileLoop(test, body, initVars, loop.maximumIterations ?? Infinity);
  loop.setState(rebuild(out));
}
