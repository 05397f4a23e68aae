/**
 * Functional control flow: cond, whileLoop, scan. Eagerly (or with a JS/concrete predicate)
 * they simply run; with a symbolic predicate they trace their branches/bodies into regions
 * of a structural node. Values from the enclosing graph that a region uses become explicit
 * operands of the node (the same list, in the same order, for every region).
 */
import { Tensor } from "../core/tensor.js";
import { currentHandler, withHandler } from "../core/context.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import type { Graph, Value, ValueType } from "../graph/ir.js";
import { leaves, mapStructure, type Structure } from "../ad/structure.js";
import { TraceContext, type SymbolRef } from "./trace-context.js";
import { toTensor } from "../ops/convert.js";

function activeTrace(): TraceContext | null {
  const h = currentHandler();
  return h instanceof TraceContext ? h : null;
}

function isSymbolicIn(t: Tensor): boolean {
  return t.isSymbolic && (t.symbol as SymbolRef | null) !== null;
}

/** Reads a concrete scalar predicate. */
function truthy(pred: Tensor | boolean | number, op: string): boolean {
  if (typeof pred === "boolean" || typeof pred === "number") return Boolean(pred);
  if (pred.size !== 1) throw new ShapeError(`the predicate must be a scalar, got shape ${fmtShape(pred.shape)}`, op);
  return pred.dataSync()[0] !== 0;
}

/** Runs `fn` in a child context of `parent` whose inputs are placeholders of `types`. */
function traceRegion<T>(parent: TraceContext, name: string, types: ValueType[], fn: (...xs: Tensor[]) => T): { ctx: TraceContext; result: T } {
  const ctx = new TraceContext(name, parent.library, parent, false, parent.functionName);
  const xs = types.map((t, i) => ctx.placeholder(t, `${name}_in${i}`));
  try {
    const result = withHandler(ctx, () => fn(...xs));
    return { ctx, result };
  } finally {
    ctx.active = false;
  }
}

/**
 * Gives every region the same extra inputs (the union of what they captured from outside),
 * after their own `numOwn` inputs; returns the outside tensors in that order.
 */
function unifyCaptures(regions: TraceContext[], numOwn: number): Tensor[] {
  const outside: Tensor[] = [];
  const seen = new Set<number>();
  for (const r of regions)
    for (const c of r.captures)
      if (!seen.has(c.tensor.id)) {
        seen.add(c.tensor.id);
        outside.push(c.tensor);
      }
  for (const r of regions) {
    const g = r.graph;
    const own = g.inputs.slice(0, numOwn);
    const ownNames = g.inputNames.slice(0, numOwn);
    const byTensor = new Map(r.captures.map((c) => [c.tensor.id, c.value]));
    const extra: Value[] = [];
    const extraNames: string[] = [];
    outside.forEach((t, i) => {
      const value = byTensor.get(t.id) ?? (r.placeholder({ dtype: t.dtype, shape: t.shape }, `unused_${i}`).symbol as SymbolRef).value;
      extra.push(value);
      extraNames.push(`captured_${i}`);
    });
    g.inputs = [...own, ...extra];
    g.inputNames = [...ownNames, ...extraNames];
    g.inputs.forEach((v, i) => (v.index = i));
  }
  return outside;
}

function structureTypes(op: string, a: Tensor[], b: Tensor[], what: string, names?: string[]): ValueType[] {
  if (a.length !== b.length) throw new ValueError(`${what} return different numbers of tensors (${a.length} vs ${b.length})`, op);
  return a.map((x, i) => {
    const y = b[i]!;
    const label = names?.[i] ?? `output ${i}`;
    if (x.dtype !== y.dtype) throw new DtypeError(`${what} give ${label} different dtypes: ${x.dtype} vs ${y.dtype}`, op);
    if (x.rank !== y.rank) throw new ShapeError(`${what} give ${label} different ranks: ${fmtShape(x.shape)} vs ${fmtShape(y.shape)}`, op);
    return { dtype: x.dtype, shape: x.shape.map((d, j) => (d === y.shape[j] ? d : -1)) };
  });
}

function checkSameJsLeaves(op: string, a: Structure<unknown>, b: Structure<unknown>): void {
  const la = leaves(a);
  const lb = leaves(b);
  la.forEach((x, i) => {
    if (!(x instanceof Tensor) && !(lb[i] instanceof Tensor) && !Object.is(x, lb[i])) {
      throw new ValueError(`the branches return different JavaScript values (${String(x)} vs ${String(lb[i])}); return tensors to let them depend on the predicate`, op);
    }
  });
}

function toTensors(s: Structure<unknown>, op: string): Structure<unknown> {
  return mapStructure(s, (x) => (x instanceof Tensor || typeof x === "number" || typeof x === "boolean" ? toTensor(x as Tensor, op) : x));
}

/**
 * cond(pred, thenFn, elseFn): thenFn() if pred else elseFn(). Both must return the same
 * structure of tensors (same dtypes and ranks; differing dims become unknown).
 */
export function cond<T>(pred: Tensor | boolean | number, thenFn: () => T, elseFn: () => T): T {
  const ctx = activeTrace();
  if (!(pred instanceof Tensor) || !ctx || !isSymbolicIn(pred)) return truthy(pred, "cond") ? thenFn() : elseFn();
  if (pred.dtype !== "bool" || pred.size !== 1) {
    throw new DtypeError(`the predicate must be a bool scalar, got ${pred.dtype}${fmtShape(pred.shape)}`, "cond");
  }
  const t = traceRegion(ctx, "then", [], () => toTensors(thenFn() as Structure<unknown>, "cond"));
  const e = traceRegion(ctx, "else", [], () => toTensors(elseFn() as Structure<unknown>, "cond"));
  const tl = leaves(t.result).filter((x): x is Tensor => x instanceof Tensor);
  const el = leaves(e.result).filter((x): x is Tensor => x instanceof Tensor);
  checkSameJsLeaves("cond", t.result, e.result);
  const types = structureTypes("cond", tl, el, "the branches");
  t.ctx.graph.setOutputs(tl.map((x) => t.ctx.valueOf(x)));
  e.ctx.graph.setOutputs(el.map((x) => e.ctx.valueOf(x)));
  const operands = unifyCaptures([t.ctx, e.ctx], 0);
  const outs = ctx.addStructural("cond", [pred, ...operands], {}, types, [t.ctx.graph, e.ctx.graph]);
  ctx.variableValues.clear();
  let k = 0;
  return mapStructure(t.result, (x) => (x instanceof Tensor ? outs[k++]! : x)) as T;
}

export interface WhileOptions {
  /** Stop after this many iterations even if the condition still holds. */
  maxIterations?: number;
  /** Per loop variable: shapes allowed to change across iterations (null dims = any). */
  shapeInvariants?: (readonly (number | null)[] | null)[];
}

/**
 * whileLoop(condFn, bodyFn, loopVars): while condFn(...vars) is true, vars = bodyFn(...vars).
 * loopVars is an array of tensors; the body returns the same number with the same dtypes and
 * shapes (unless relaxed by shapeInvariants).
 */
export function whileLoop(condFn: (...vars: Tensor[]) => Tensor | boolean, bodyFn: (...vars: Tensor[]) => Tensor[], loopVars: Tensor[], options: WhileOptions = {}): Tensor[] {
  const init = loopVars.map((v) => toTensor(v, "whileLoop"));
  const ctx = activeTrace();
  const max = options.maxIterations ?? Infinity;
  if (!ctx) {
    let vars = init;
    for (let i = 0; i < max && truthy(condFn(...vars), "whileLoop"); i++) vars = checkBody(bodyFn(...vars), vars, options);
    return vars;
  }
  const types: ValueType[] = init.map((v, i) => {
    const inv = options.shapeInvariants?.[i];
    return { dtype: v.dtype, shape: inv ? inv.map((d) => (d === null ? -1 : d)) : v.shape };
  });
  const c = traceRegion(ctx, "cond", types, (...xs) => condFn(...xs));
  const predT = c.result instanceof Tensor ? c.result : toTensor(c.result, "whileLoop");
  if (predT.dtype !== "bool" || predT.size !== 1) throw new DtypeError(`the condition must return a bool scalar, got ${predT.dtype}${fmtShape(predT.shape)}`, "whileLoop");
  c.ctx.graph.setOutputs([c.ctx.valueOf(predT)]);
  const b = traceRegion(ctx, "body", types, (...xs) => bodyFn(...xs));
  const next = checkBody(b.result, types.map((t) => ({ dtype: t.dtype, shape: t.shape }) as Tensor), options, true);
  b.ctx.graph.setOutputs(next.map((x) => b.ctx.valueOf(x)));
  const invariants = unifyCaptures([c.ctx, b.ctx], init.length);
  const outs = ctx.addStructural("while", [...init, ...invariants], { numLoopVars: init.length, ...(Number.isFinite(max) ? { maxIterations: max } : {}) }, types, [c.ctx.graph, b.ctx.graph]);
  ctx.variableValues.clear();
  return outs;
}

function checkBody(out: unknown, prev: { dtype: string; shape: readonly number[] }[], options: WhileOptions, symbolic = false): Tensor[] {
  if (!Array.isArray(out)) throw new ValueError(`the body must return an array of ${prev.length} loop variables`, "whileLoop");
  if (out.length !== prev.length) throw new ValueError(`the body returned ${out.length} loop variables, expected ${prev.length}`, "whileLoop");
  return out.map((x, i) => {
    const t = toTensor(x as Tensor, "whileLoop");
    const p = prev[i]!;
    if (t.dtype !== p.dtype) throw new DtypeError(`loop variable ${i} changes dtype from ${p.dtype} to ${t.dtype} in the body`, "whileLoop");
    const inv = options.shapeInvariants?.[i];
    const okShape = t.rank === p.shape.length && t.shape.every((d, j) => (inv ? inv[j] === null || inv[j] === d : p.shape[j]! < 0 || p.shape[j] === d || (symbolic && d < 0 && p.shape[j]! < 0)));
    if (!okShape && !(inv && inv.length === t.rank)) {
      throw new ShapeError(`loop variable ${i} changes shape from ${fmtShape(p.shape)} to ${fmtShape(t.shape)} in the body; pass shapeInvariants to allow it`, "whileLoop");
    }
    return t;
  });
}

export type { Graph };
