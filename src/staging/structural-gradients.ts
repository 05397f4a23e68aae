/**
 * The graph AD rules for structural nodes. While a graph is being built and a tape records
 * (a staged function differentiated by sc.grad, or a tape used inside staged code), cond,
 * while and call nodes are recorded as single tape entries whose VJPs emit structural
 * nodes again, so the gradient is a graph with the same control flow:
 *
 * - cond: the backward is a cond on the same predicate whose branches are the VJPs of the
 *   forward branches: the backward takes the branch the forward took.
 * - while: the forward loop also counts its iterations and pushes, per iteration, the loop
 *   variables that the body's VJP reads (found by liveness on a probe trace); the backward
 *   is a while loop running the same number of iterations in reverse, popping them.
 * - call: the backward calls the callee's VJP function (inputs, cotangents) -> gradients,
 *   a library function built once per callee; recursion resolves by name.
 *
 * Inside a branch, iteration or call, the VJP recomputes that region's forward values from
 * its inputs (which the forward kept) by replaying it under a tape.
 */
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { anyRecorderTracks, currentHandler, recorders, withHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { applyOp1, type OpDef } from "../ops/registry.js";
import { iterationBufferOp, zerosLikeTensor } from "../ops/fill.js";
import { add, sub } from "../ops/binary.js";
import { greater } from "../ops/compare.js";
import { expandDims, gather, reshape, scatterAdd } from "../ops/shape.js";
import { makeTensor } from "../core/tensor.js";
import { GradientTape } from "../ad/tape.js";
import { FunctionLibrary, type Graph, type Value, type ValueType } from "../graph/ir.js";
import { TraceContext, type SymbolRef } from "./trace-context.js";
import { replay } from "./replay.js";

/** Records one entry on every active tape. */
export function recordEntry(name: string, inputs: Tensor[], outputs: Tensor[], vjp: (cts: (Tensor | null)[]) => (Tensor | null)[]): void {
  if (outputs.length === 0 || recorders.length === 0) return;
  const def: OpDef = {
    name,
    family: "ad",
    inputs: inputs.map((_, i) => `x${i}`),
    infer: () => outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
    kernel: () => {
      throw new Error(`${name}: a structural tape entry has no kernel`);
    },
    vjp: (_ctx, cts) => vjp(cts),
  };
  for (const r of recorders.slice()) r.recordOp(def, inputs, {}, outputs);
}

/**
 * Gradients of a region's outputs with respect to its inputs (and `extra` sources, such as
 * variable values the region reads), recomputing its forward.
 */
export function regionVjp(g: Graph, library: FunctionLibrary, inputs: Tensor[], cts: Tensor[], extra: Tensor[] = [], wrt?: boolean[]): Tensor[] {
  const all = [...inputs, ...extra];
  const wanted = wrt ?? all.map(() => true);
  const sources = all.filter((_, i) => wanted[i]);
  const tape = new GradientTape();
  const outs = tape.record(() => {
    tape.watch(sources);
    return replay(g, library, inputs);
  });
  const pairs = outs.map((o, i) => [o, cts[i]!] as const).filter(([o]) => isFloat(o.dtype));
  const grads =
    pairs.length === 0 || sources.length === 0
      ? sources.map((x) => zerosLikeTensor(x))
      : (tape.gradient(
          pairs.map(([o]) => o),
          sources,
          { outputGradient: pairs.map(([, c]) => c) },
        ) as Tensor[]);
  let k = 0;
  // Inputs nobody differentiates with respect to get zero gradients without computing them.
  return all.map((x, i) => (wanted[i] ? grads[k++]! : zerosLikeTensor(x)));
}

export function recordCondGradient(pred: Tensor, operands: Tensor[], outs: Tensor[], thenG: Graph, elseG: Graph, library: FunctionLibrary, cond: CondFn): void {
  recordEntry("cond", [pred, ...operands], outs, (cts) => {
    const filled = cts.map((c, i) => c ?? zerosLikeTensor(outs[i]!));
    const grads = cond(
      pred,
      () => regionVjp(thenG, library, operands, filled),
      () => regionVjp(elseG, library, operands, filled),
    );
    return [null, ...grads];
  });
}

type CondFn = (pred: Tensor, a: () => Tensor[], b: () => Tensor[]) => Tensor[];
type WhileFn = (c: (...v: Tensor[]) => Tensor, b: (...v: Tensor[]) => Tensor[], init: Tensor[], shapeInvariants: (number | null)[][]) => Tensor[];
type RegionTracer = (types: ValueType[], fn: (...xs: Tensor[]) => Tensor[]) => { graph: Graph; ctx: TraceContext };

/** Which of a body's loop variables its VJP reads (liveness on a discarded probe trace). */
export function loopVarsReadByBodyVjp(traceProbe: RegionTracer, bodyG: Graph, library: FunctionLibrary, types: ValueType[], invariants: Tensor[], wrt: boolean[]): boolean[] {
  const n = types.length;
  const probe = traceProbe([...types, ...types], (...xs) => regionVjp(bodyG, library, [...xs.slice(0, n), ...invariants], xs.slice(n), [], wrt));
  const g = probe.graph;
  const live = new Set<number>(g.outputs.map((v) => v.id));
  for (let i = g.nodes.length - 1; i >= 0; i--) {
    const node = g.nodes[i]!;
    if (node.outputs.some((o) => live.has(o.id)) || node.outputs.length === 0) for (const v of node.inputs) live.add(v.id);
  }
  return g.inputs.slice(0, n).map((v: Value) => live.has(v.id));
}

export interface WhileParts {
  ctx: TraceContext;
  init: Tensor[];
  invariants: Tensor[];
  types: ValueType[];
  condG: Graph;
  bodyG: Graph;
  traceRegion: RegionTracer;
  whileLoop: WhileFn;
  /** Emits a while node with the given regions; returns its outputs. */
  emit(types: ValueType[], init: Tensor[], condFn: (...xs: Tensor[]) => Tensor, bodyFn: (...xs: Tensor[]) => Tensor[]): Tensor[];
}

/**
 * Emits the forward loop augmented with an iteration count and stacks of the loop variables
 * the backward reads, and records its gradient. Returns the user-visible loop outputs.
 */
export function whileWithGradient(p: WhileParts): Tensor[] {
  const { init, invariants, types, condG, bodyG, ctx } = p;
  const library = ctx.library;
  const n = init.length;
  // Gradients are needed for every loop variable, and for the invariants a tape tracks.
  const wrt = [...types.map(() => true), ...invariants.map((x) => isFloat(x.dtype) && anyRecorderTracks(x))];
  const saved = loopVarsReadByBodyVjp(p.traceRegion, bodyG, library, types, invariants, wrt);
  const savedIdx = saved.flatMap((s, i) => (s ? [i] : []));
  // Pass 1 counts the iterations, so that pass 2 can keep per-iteration values in buffers
  // of a fixed size (loop variables never change shape, which keeps the loop differentiable
  // again: higher-order gradients differentiate this augmented loop).
  const zero = makeTensor("while", 0, undefined, "int32");
  const cond = (...xs: Tensor[]) => replay(condG, library, [...xs.slice(0, n), ...invariants])[0]!;
  const counted = p.emit([...types, { dtype: "int32", shape: [] }], [...init, zero], cond, (...xs) => [
    ...replay(bodyG, library, [...xs.slice(0, n), ...invariants]),
    add(xs[n]!, 1),
  ]);
  const iterations = counted[n]!;
  const buffers0 = savedIdx.map((i) => applyOp1(iterationBufferOp, [iterations, init[i]!], {}));
  const augTypes: ValueType[] = [
    ...types,
    { dtype: "int32", shape: [] },
    ...savedIdx.map((i) => ({ dtype: types[i]!.dtype, shape: [-1, ...types[i]!.shape] })),
  ];
  const outs = p.emit(augTypes, [...init, zero, ...buffers0], cond, (...xs) => {
    const vars = xs.slice(0, n);
    const k = xs[n]!;
    const buffers = xs.slice(n + 1);
    const next = replay(bodyG, library, [...vars, ...invariants]);
    const row = reshape(k, [1]);
    return [...next, add(k, 1), ...buffers.map((b, j) => scatterAdd(b, row, expandDims(vars[savedIdx[j]!]!, 0), 0))];
  });
  const results = outs.slice(0, n);
  const count = outs[n]!;
  const stacks = outs.slice(n + 1);
  recordEntry("while", [...init, ...invariants], results, (cts) => {
    const ctVars = cts.map((c, i) => c ?? zerosLikeTensor(results[i]!));
    const accum0 = invariants.map((x) => zerosLikeTensor(x));
    const res = p.whileLoop(
      (j) => greater(j, 0),
      (j, ...rest) => {
        const j1 = sub(j, 1);
        const ct = rest.slice(0, n);
        const acc = rest.slice(n);
        const vars = types.map((_, i) => {
          const s = savedIdx.indexOf(i);
          return s >= 0 ? gather(stacks[s]!, j1, 0) : zerosLikeTensor(results[i]!);
        });
        const g = regionVjp(bodyG, library, [...vars, ...invariants], ct, [], wrt);
        return [j1, ...g.slice(0, n), ...acc.map((a, i) => add(a, g[n + i]!))];
      },
      [count, ...ctVars, ...accum0],
      // Cotangents keep the loop variables' declared types (a stack's length varies).
      [[], ...types.map((t) => t.shape.map((d) => (d < 0 ? null : d))), ...invariants.map((x) => x.shape.map((d) => (d < 0 ? null : d)))],
    );
    return [...res.slice(1, 1 + n), ...res.slice(1 + n)];
  });
  return results;
}

/** A function graph plus the library holding everything it calls. */
export interface FunctionBundle {
  graph: Graph;
  library: FunctionLibrary;
}

/** Emits a call node in the graph being built, and records its gradient. */
export function emitCall(bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[]): Tensor[] {
  const ctx = currentHandler();
  if (!(ctx instanceof TraceContext)) throw new Error("emitCall needs a graph under construction");
  for (const g of bundle.library.functions.values()) ctx.library.add(g);
  ctx.library.add(bundle.graph);
  const outs = ctx.addStructural("call", args, { callee: bundle.graph.name }, outTypes);
  ctx.variableValues.clear();
  if (recorders.length > 0 && outs.length > 0) {
    // The callee's variables are inputs of the gradient entry, so gradients reach them.
    const vars = variablesReadBy(bundle);
    const varValues = vars.map((v) => v.read());
    recordEntry("call", [...args, ...varValues], outs, (cts) => {
      const filled = cts.map((c, i) => c ?? zerosLikeTensor(outs[i]!));
      const vjpBundle = vjpFunctionFor(bundle);
      const types = [...args, ...varValues].map((a) => ({ dtype: a.dtype, shape: a.shape }));
      return emitCall(vjpBundle, [...args, ...filled, ...varValues], types);
    });
  }
  return outs;
}

const variablesCache = new WeakMap<Graph, Variable[]>();

/** Variables a function reads, directly, in regions, or in the functions it calls. */
export function variablesReadBy(bundle: FunctionBundle): Variable[] {
  const cached = variablesCache.get(bundle.graph);
  if (cached) return cached;
  const found = new Set<Variable>();
  const seen = new Set<Graph>();
  const walk = (g: Graph): void => {
    if (seen.has(g)) return;
    seen.add(g);
    for (const node of g.nodes) {
      if (node.op === "readVariable") found.add(node.attrs.variable as Variable);
      if (node.op === "call") {
        const callee = bundle.library.functions.get(node.attrs.callee as string);
        if (callee) walk(callee);
      }
      node.regions.forEach(walk);
    }
  };
  walk(bundle.graph);
  const list = [...found].filter((v) => v.trainable);
  variablesCache.set(bundle.graph, list);
  return list;
}

const vjpFunctions = new WeakMap<Graph, FunctionBundle>();

/**
 * The VJP function of a callee: (inputs..., cotangents...) -> gradient of every input.
 * Registered before it is traced so that recursive callees find it by name.
 */
export function vjpFunctionFor(callee: FunctionBundle): FunctionBundle {
  const cached = vjpFunctions.get(callee.graph);
  if (cached) return cached;
  const library = new FunctionLibrary();
  for (const g of callee.library.functions.values()) library.add(g);
  library.add(callee.graph);
  const ctx = new TraceContext(`${callee.graph.name}_vjp`, library, null, false, callee.graph.name, true);
  const bundle: FunctionBundle = { graph: ctx.graph, library };
  library.add(ctx.graph);
  vjpFunctions.set(callee.graph, bundle);
  const g = callee.graph;
  const xs = g.inputs.map((v, i) => ctx.placeholder(v.type, g.inputNames[i] ?? `x${i}`));
  const cts = g.outputs.map((v, i) => ctx.placeholder(v.type, `cotangent_${i}`));
  // Variables the callee reads are explicit inputs here, so their gradients are outputs.
  const vars = variablesReadBy(callee);
  const varValues = vars.map((v) => {
    const t = ctx.placeholder({ dtype: v.dtype, shape: v.shape }, `variable_${v.name}`);
    // Reads anywhere in the callee (regions too) resolve to this input.
    ctx.variableInputs.set(v, t);
    return t;
  });
  try {
    const grads = withoutRecorders(null, () =>
      withHandler(ctx, () => regionVjp(g, library, xs, cts, varValues).map((t) => ctx.valueOf(t))),
    );
    ctx.graph.setOutputs(grads, [...xs.map((_, i) => `grad_${i}`), ...vars.map((v) => `grad_${v.name}`)]);
  } finally {
    ctx.active = false;
  }
  return bundle;
}

export type { SymbolRef };
