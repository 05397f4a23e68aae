/**
 * Functional control flow: cond, whileLoop, scan. Eagerly (or with a JS/concrete predicate)
 * they simply run; with a symbolic predicate they trace their branches/bodies into regions
 * of a structural node. Values from the enclosing graph that a region uses become explicit
 * operands of the node (the same list, in the same order, for every region).
 */
import { Tensor } from "../core/tensor.js";
import { currentHandler, recorders, traceCallback, withHandler, withoutRecorders } from "../core/context.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import type { Graph, Value, ValueType } from "../graph/ir.js";
import { leaves, mapStructure, type Structure } from "../core/structure.js";
import { TraceContext, type SymbolRef } from "./trace-context.js";
import { scalarOf, toTensor } from "../ops/convert.js";
import { expandDims, gather, reshape, scatterAdd, stack, unstack } from "../ops/shape.js";
import { add } from "../ops/binary.js";
import { less } from "../ops/compare.js";
import { where } from "../ops/where.js";
import { full } from "../ops/fill.js";
import { recordCond, recordWhile } from "./recording.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { condOp, whileOp } from "../ops/structural.js";
import { hoistVariableReads } from "./region-variables.js";

/** The structural ops' names, and their regions' (as their declarations give them). */
const COND = condOp.name;
const [THEN, ELSE] = condOp.structural.regions as [string, string];
const [LOOP_COND, LOOP_BODY] = whileOp.structural.regions as [string, string];

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

/** A region (branch or loop body) of `parent`. */
export function openRegion(parent: TraceContext, name: string): TraceContext {
  const region = new TraceContext(name, parent.library, parent, false, parent.functionName, parent.variablesAsInputs, true);
  region.structuralRegion = true;
  return region;
}

/** Runs `fn` in a child context of `parent` whose inputs are placeholders of `types`. */
function traceRegion<T>(parent: TraceContext, name: string, types: ValueType[], fn: (...xs: Tensor[]) => T): { ctx: TraceContext; result: T } {
  const ctx = openRegion(parent, name);
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
 * after their own `numOwn` inputs; returns the outside tensors in that order. The regions'
 * variable reads of the value at the construct's entry are hoisted first, and so are captured
 * too (region-variables.ts; `loop`: the regions are a loop's condition and body).
 */
export function unifyCaptures(regions: TraceContext[], numOwn: number, loop = false): Tensor[] {
  const parent = regions[0]?.parent;
  if (parent) hoistVariableReads(parent, regions, loop);
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
export function cond<T>(pred: Tensor | boolean | number, thenBranch: () => T, elseBranch: () => T): T {
  const thenFn = traceCallback(thenBranch);
  const elseFn = traceCallback(elseBranch);
  const ctx = activeTrace();
  const transform = currentHandler().controlFlow;
  if (pred instanceof Tensor && transform && pred.isSymbolic) {
    checkPredicate(pred);
    return transform.cond(pred, thenFn, elseFn, selectLeaves);
  }
  if (!(pred instanceof Tensor) || !ctx || !isSymbolicIn(pred)) return truthy(pred, COND) ? thenFn() : elseFn();
  checkPredicate(pred);
  // Branches are traced plainly: while tapes record, the gradient rule splits them afterwards.
  const t = withoutRecorders(null, () => traceRegion(ctx, THEN, [], () => toTensors(thenFn() as Structure<unknown>, COND)));
  const e = withoutRecorders(null, () => traceRegion(ctx, ELSE, [], () => toTensors(elseFn() as Structure<unknown>, COND)));
  const tl = leaves(t.result).filter((x): x is Tensor => x instanceof Tensor);
  const el = leaves(e.result).filter((x): x is Tensor => x instanceof Tensor);
  checkSameJsLeaves(COND, t.result, e.result);
  const types = structureTypes(COND, tl, el, "the branches");
  t.ctx.graph.setOutputs(tl.map((x) => t.ctx.valueOf(x)));
  e.ctx.graph.setOutputs(el.map((x) => e.ctx.valueOf(x)));
  const operands = unifyCaptures([t.ctx, e.ctx], 0);
  const outs = emitCond(ctx, pred, operands, t.ctx.graph, e.ctx.graph, types);
  let k = 0;
  return mapStructure(t.result, (x) => (x instanceof Tensor ? outs[k++]! : x)) as T;
}

function checkPredicate(pred: Tensor): void {
  if (pred.dtype !== "bool" || pred.size !== 1) {
    throw new DtypeError(`the predicate must be a bool scalar, got ${pred.dtype}${fmtShape(pred.shape)}`, COND);
  }
}

/**
 * cond's merge where the predicate differs per example (vmap): the two branches' results, leaf
 * by leaf, `where(pred, a, b)`; leaves equal in both stay as they are (a JS value must be), and
 * tensors agree in dtype and rank.
 */
function selectLeaves<T>(pred: Tensor, a: T, b: T): T {
  const la = leaves(a as Structure<unknown>);
  const lb = leaves(b as Structure<unknown>);
  if (la.length !== lb.length) throw new ValueError(`the branches return structures of different sizes (${la.length} vs ${lb.length} leaves)`, COND);
  const isTensorLike = (x: unknown) => x instanceof Tensor || typeof x === "number" || typeof x === "boolean";
  const pairs = la.map((x, i) => {
    const y = lb[i];
    if (Object.is(x, y)) return null;
    if (!isTensorLike(x) || !isTensorLike(y)) checkSameJsLeaves(COND, [x], [y]);
    return [toTensor(x as Tensor, COND), toTensor(y as Tensor, COND)] as const;
  });
  const selected = pairs.filter((p) => p !== null);
  structureTypes(COND, selected.map((p) => p[0]), selected.map((p) => p[1]), "the branches");
  let k = 0;
  return mapStructure(a as Structure<unknown>, (x) => {
    const p = pairs[k++];
    return p ? where(pred, p[0], p[1]) : x;
  }) as T;
}

/**
 * Emits a cond node over traced branches (inputs: `operands`); while tapes record, the cond's
 * gradient rule emits it (recording.ts).
 */
export function emitCond(ctx: TraceContext, pred: Tensor, operands: Tensor[], thenG: Graph, elseG: Graph, types: ValueType[]): Tensor[] {
  return recorders.length === 0
    ? ctx.addStructural(COND, [pred, ...operands], {}, types, [thenG, elseG])
    : recordCond({ ctx, pred, operands, thenG, elseG, types });
}

/** Traces a function of tensors over placeholders of `types` as a graph of its own. */
export type RegionTracer = (types: ValueType[], fn: (...xs: Tensor[]) => Tensor[]) => { graph: Graph; ctx: TraceContext };

/** Traces `fn` over placeholders of `types` in a discarded region of `ctx`, with no tape recording. */
export function probeTracer(ctx: TraceContext): RegionTracer {
  return (regionTypes, fn) =>
    withoutRecorders(null, () => {
      const r = traceRegion(ctx, "vjp_probe", regionTypes, fn);
      r.ctx.graph.setOutputs(r.result.map((t) => r.ctx.valueOf(t)));
      return { graph: r.ctx.graph, ctx: r.ctx };
    });
}

export interface WhileOptions {
  /** Stop after this many iterations even if the condition still holds. */
  maxIterations?: number;
  /** Per loop variable: shapes allowed to change across iterations (null dims = any). */
  shapeInvariants?: (readonly (number | null)[] | null)[];
}

const WHILE_OPTIONS = optionKeys<WhileOptions>()("maxIterations", "shapeInvariants");

/**
 * whileLoop(condFn, bodyFn, loopVars): while condFn(...vars) is true, vars = bodyFn(...vars).
 * loopVars is an array of tensors; the body returns the same number with the same dtypes and
 * shapes (unless relaxed by shapeInvariants).
 */
export function whileLoop(condition: (...vars: Tensor[]) => Tensor | boolean, body: (...vars: Tensor[]) => Tensor[], loopVars: Tensor[], options: WhileOptions = {}): Tensor[] {
  return whileLoopOf(condition, body, loopVars, options, false);
}

/**
 * whileLoop whose maxIterations guards the process rather than being the program's own count (an
 * imported ONNX Loop's maxLoopIterations): the loop stops there all the same, but its while node
 * says so (`maxIterationsIsGuard`), and export writes no trip count for it.
 */
export function guardedWhileLoop(
  condition: (...vars: Tensor[]) => Tensor | boolean,
  body: (...vars: Tensor[]) => Tensor[],
  loopVars: Tensor[],
  options: WhileOptions & { maxIterations: number },
): Tensor[] {
  return whileLoopOf(condition, body, loopVars, options, true);
}

function whileLoopOf(condition: (...vars: Tensor[]) => Tensor | boolean, body: (...vars: Tensor[]) => Tensor[], loopVars: Tensor[], options: WhileOptions, guard: boolean): Tensor[] {
  checkOptions("whileLoop", options, WHILE_OPTIONS);
  if (!Array.isArray(loopVars)) throw new ValueError(`loopVars must be an array of tensors, got ${describeArg(loopVars)}`, "whileLoop");
  const condFn = traceCallback(condition);
  const bodyFn = traceCallback(body);
  const max = options.maxIterations ?? Infinity;
  if (!(Number.isInteger(max) || max === Infinity) || max < 0) throw new ValueError(`maxIterations must be a non-negative integer, got ${String(max)}`, "whileLoop");
  const init = loopVars.map((v) => toTensor(v, "whileLoop"));
  const transform = currentHandler().controlFlow;
  if (transform) {
    const condT = (...vars: Tensor[]) => {
      const p = condFn(...vars);
      const t = p instanceof Tensor ? p : toTensor(p, "whileLoop");
      if (t.dtype !== "bool" || t.size !== 1) throw new DtypeError(`the condition must return a bool scalar, got ${t.dtype}${fmtShape(t.shape)}`, "whileLoop");
      return t;
    };
    return transform.whileLoop(condT, (...vars) => checkBody(bodyFn(...vars), vars, options), init, max, options.shapeInvariants);
  }
  const ctx = activeTrace();
  if (!ctx) {
    let vars = init;
    for (let i = 0; i < max && truthy(condFn(...vars), "whileLoop"); i++) vars = checkBody(bodyFn(...vars), vars, options);
    return vars;
  }
  const types: ValueType[] = init.map((v, i) => {
    const inv = options.shapeInvariants?.[i];
    return { dtype: v.dtype, shape: inv ? inv.map((d) => (d === null ? -1 : d)) : v.shape };
  });
  // Traced plainly: while tapes record, the gradient rule splits the body afterwards.
  const traced = withoutRecorders(null, () => traceLoop(ctx, types, condFn, bodyFn, options));
  const attrs = { numLoopVars: init.length, ...(Number.isFinite(max) ? { maxIterations: max, ...(guard ? { maxIterationsIsGuard: true } : {}) } : {}) };
  if (recorders.length === 0) {
    return ctx.addStructural(whileOp.name, [...init, ...traced.invariants], attrs, types, [traced.condG, traced.bodyG]);
  }
  // A tape records: the loop's gradient rule emits it (recording.ts).
  return recordWhile({
    ctx,
    init,
    invariants: traced.invariants,
    types,
    condG: traced.condG,
    bodyG: traced.bodyG,
    emit(augTypes, augInit, augCond, augBody) {
      const aug = traceLoop(ctx, augTypes, augCond, augBody, {});
      return ctx.addStructural(whileOp.name, [...augInit, ...aug.invariants], { ...attrs, numLoopVars: augInit.length }, augTypes, [aug.condG, aug.bodyG]);
    },
  });
}

/** Traces a loop's condition and body as regions over `types` (+ their shared captures). */
function traceLoop(
  ctx: TraceContext,
  types: ValueType[],
  condFn: (...vars: Tensor[]) => Tensor | boolean,
  bodyFn: (...vars: Tensor[]) => Tensor[],
  options: WhileOptions,
): { condG: Graph; bodyG: Graph; invariants: Tensor[] } {
  const c = traceRegion(ctx, LOOP_COND, types, (...xs) => condFn(...xs));
  const predT = c.result instanceof Tensor ? c.result : toTensor(c.result, "whileLoop");
  if (predT.dtype !== "bool" || predT.size !== 1) throw new DtypeError(`the condition must return a bool scalar, got ${predT.dtype}${fmtShape(predT.shape)}`, "whileLoop");
  c.ctx.graph.setOutputs([c.ctx.valueOf(predT)]);
  const b = traceRegion(ctx, LOOP_BODY, types, (...xs) => bodyFn(...xs));
  const next = checkBody(b.result, types.map((t) => ({ dtype: t.dtype, shape: t.shape }) as Tensor), options, true);
  b.ctx.graph.setOutputs(next.map((x) => b.ctx.valueOf(x)));
  const invariants = unifyCaptures([c.ctx, b.ctx], types.length, true);
  return { condG: c.ctx.graph, bodyG: b.ctx.graph, invariants };
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


/**
 * scan(fn, init, xs): loops over the leading axis of `xs`, threading a carry:
 *   [carry, y_i] = fn(carry, xs[i]);  returns [finalCarry, stack(y_0 .. y_{n-1})].
 * `carry` is an array of tensors. Eagerly it runs the loop; staged it becomes a while loop
 * whose outputs are accumulated into a preallocated buffer.
 */
export function scan(step: (carry: Tensor[], x: Tensor) => [Tensor[], Tensor], init: Tensor[], xs: Tensor): [Tensor[], Tensor] {
  if (!Array.isArray(init)) throw new ValueError(`the initial carry must be an array of tensors, got ${describeArg(init)}`, "scan");
  const fn = traceCallback(step);
  const xsT = toTensor(xs, "scan");
  if (xsT.rank < 1) throw new ShapeError(`xs must have a leading axis to scan over, got shape ${fmtShape(xsT.shape)}`, "scan");
  const carry0 = init.map((c) => toTensor(c, "scan"));
  const ctx = activeTrace();
  if (!ctx) {
    let carry = carry0;
    const ys: Tensor[] = [];
    for (const x of unstack(xsT, 0)) {
      const [next, y] = fn(carry, x);
      carry = checkBody(next, carry, {});
      ys.push(toTensor(y, "scan"));
    }
    if (ys.length === 0) throw new ShapeError("cannot scan over an empty leading axis eagerly (the output shape is unknown)", "scan");
    return [carry, stack(ys, 0)];
  }
  const n = xsT.shape[0]!;
  if (n < 0) throw new ShapeError(`scan needs a known length for the leading axis of xs while staging, got ${fmtShape(xsT.shape)}`, "scan");
  // One probe trace (discarded) tells the type of y, which sizes the output buffer.
  const probe = traceRegion(ctx, "scan_probe", [...carry0.map((c) => ({ dtype: c.dtype, shape: c.shape })), { dtype: xsT.dtype, shape: xsT.shape.slice(1) }], (...xs2) =>
    fn(xs2.slice(0, carry0.length), xs2[carry0.length]!),
  );
  const yProbe = toTensor(probe.result[1], "scan");
  const buffer0 = zerosLikeShape([n, ...yProbe.shape], yProbe.dtype);
  const outs = whileLoop(
    (i) => less(i, n),
    (i, ...rest) => {
      const carry = rest.slice(0, carry0.length);
      const buf = rest[carry0.length]!;
      const [next, y] = fn(carry, gather(xsT, i!, 0));
      const idx = reshape(i!, [1]);
      return [add(i!, 1), ...next, scatterAdd(buf, idx, expandDims(toTensor(y, "scan"), 0), 0)];
    },
    [scalarOf(0, "int32"), ...carry0, buffer0],
  );
  return [outs.slice(1, 1 + carry0.length), outs[1 + carry0.length]!];
}

function zerosLikeShape(shape: number[], dtype: Tensor["dtype"]): Tensor {
  return full(shape, 0, dtype);
}

/** A value a control-flow function did not expect, for its error message. */
function describeArg(x: unknown): string {
  return x instanceof Tensor ? `a ${x.dtype}${fmtShape(x.shape)} tensor` : x === null ? "null" : typeof x;
}
