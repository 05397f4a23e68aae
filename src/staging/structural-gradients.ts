/**
 * The graph AD rules for structural nodes. While a graph is being built and a tape records
 * (a staged function differentiated by sc.grad, or a tape used inside staged code), cond,
 * while and call nodes are recorded as single tape entries whose VJPs emit structural
 * nodes again, so the gradient is a graph with the same control flow:
 *
 * - cond: the backward is a cond on the same predicate whose branches are the VJPs of the
 *   forward branches: the backward takes the branch the forward took.
 * - while: the iteration is split into a forward that also returns what its backward reads,
 *   and that backward (both traced once, from the body under a tape); the forward loop
 *   counts its iterations and pushes those values on stacks, one row per iteration; the
 *   backward is a while loop running the same number of iterations in reverse, reading them.
 * - call: the backward calls the callee's VJP function (inputs, cotangents) -> gradients,
 *   a library function built once per callee; recursion resolves by name.
 *
 * Inside a branch or call, the VJP recomputes that region's forward values from its inputs
 * (which the forward kept) by replaying it under a tape.
 */
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { anyRecorderTracks, currentHandler, recorders, withHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import type { OpDef } from "../ops/registry.js";
import { full, zerosLikeTensor } from "../ops/fill.js";
import { emptyStack, stackPush } from "../ops/iteration-stack.js";
import { add, sub } from "../ops/binary.js";
import { greater } from "../ops/compare.js";
import { gather } from "../ops/shape.js";
import { makeTensor } from "../core/tensor.js";
import { GradientTape } from "../ad/tape.js";
import { FunctionLibrary, type Graph, type Value, type ValueType } from "../graph/ir.js";
import { TraceContext, type SymbolRef } from "./trace-context.js";
import { replay } from "./replay.js";
import { runPrune } from "../graph/passes/prune.js";

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
function loopVarsReadByBodyVjp(p: WhileParts, loop: LoopShape): boolean[] {
  const { types, bodyG, invariants, ctx } = p;
  const n = types.length;
  const probe = p.traceRegion([...types, ...loop.ctTypes], (...xs) => {
    const vars = xs.slice(0, n).map((x, i) => (loop.accumulator[i] ? emptyStack(xs[n + i]!) : x));
    return regionVjp(bodyG, ctx.library, [...vars, ...invariants], loop.fullCotangents(xs.slice(n)), [], loop.wrt).filter((_, i) => !loop.accumulator[i]);
  });
  const g = probe.graph;
  const live = new Set<number>(g.outputs.map((v) => v.id));
  for (let i = g.nodes.length - 1; i >= 0; i--) {
    const node = g.nodes[i]!;
    if (node.outputs.some((o) => live.has(o.id)) || node.outputs.length === 0) for (const v of node.inputs) live.add(v.id);
  }
  return g.inputs.slice(0, n).map((v: Value, i) => !loop.accumulator[i] && live.has(v.id));
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
 * What the gradient needs to know of a loop's variables.
 *
 * Accumulators are stacks the body only pushes one row onto (the stacks of a loop that was
 * itself augmented for a gradient, when it is differentiated again): nothing in the loop
 * reads them, so the cotangent of the row pushed in iteration t is row t of the final stack's
 * cotangent. The backward reads that row instead of carrying a cotangent stack whose shape
 * would change every iteration; this keeps every augmented loop's shapes fixed, so loops
 * differentiate to any order.
 */
interface LoopShape {
  wrt: boolean[];
  accumulator: boolean[];
  /** Per loop variable, the type of the cotangent one iteration's backward takes (a row for accumulators). */
  ctTypes: ValueType[];
  /** The cotangents of the body's outputs, from per-iteration ones (a 1-row stack for accumulators). */
  fullCotangents(cts: Tensor[]): Tensor[];
}

function loopShape(p: WhileParts): LoopShape {
  const { init, invariants, types, bodyG, condG } = p;
  const uses = new Map<number, number>();
  const count = (id: number) => uses.set(id, (uses.get(id) ?? 0) + 1);
  for (const node of bodyG.nodes) for (const v of node.inputs) count(v.id);
  for (const v of bodyG.outputs) count(v.id);
  const accumulator = types.map((_, i) => {
    const out = bodyG.outputs[i]!;
    const pushed = bodyG.nodes.find((node) => node.outputs[0] === out);
    const input = bodyG.inputs[i]!;
    const condReads = condG.nodes.some((node) => node.inputs.includes(condG.inputs[i]!)) || condG.outputs.includes(condG.inputs[i]!);
    return pushed?.op === "stackPush" && pushed.inputs[0] === input && uses.get(input.id) === 1 && !condReads && init[i]!.shape[0] === 0;
  });
  const wrt = [...types.map((t, i) => isFloat(t.dtype) && !accumulator[i]), ...invariants.map((x) => isFloat(x.dtype) && anyRecorderTracks(x))];
  return {
    wrt,
    accumulator,
    ctTypes: types.map((t, i) => (accumulator[i] ? { dtype: t.dtype, shape: t.shape.slice(1) } : t)),
    fullCotangents: (cts) => cts.map((c, i) => (accumulator[i] ? stackPush(emptyStack(c), c) : c)),
  };
}

/**
 * How one iteration is differentiated. `forward` computes the next loop variables and the
 * values to keep (one row per iteration on a stack); `backward` maps (per-iteration
 * cotangents, the kept values of that iteration) to (cotangents of the loop variables that
 * are not accumulators, gradient contributions of the invariants).
 */
interface IterationSplit {
  kept: ValueType[];
  /** One empty stack per kept value (given the loop's initial values). */
  emptyStacks(init: Tensor[]): Tensor[];
  forward(vars: Tensor[]): { next: Tensor[]; kept: Tensor[] };
  backward(cts: Tensor[], kept: Tensor[]): Tensor[];
}

/**
 * Emits the forward loop augmented with an iteration count and one stack per kept value, and
 * records its gradient: a loop running the same number of iterations in reverse, reading row
 * j of each stack. Returns the user-visible loop outputs.
 */
export function whileWithGradient(p: WhileParts): Tensor[] {
  const { init, invariants, types, condG, ctx } = p;
  const library = ctx.library;
  const n = init.length;
  const loop = loopShape(p);
  const split = splitIteration(p, loop) ?? recomputingSplit(p, loop);
  const zero = makeTensor("while", 0, undefined, "int32");
  const cond = (...xs: Tensor[]) => replay(condG, library, [...xs.slice(0, n), ...invariants])[0]!;
  const stackTypes: ValueType[] = split.kept.map((t) => ({ dtype: t.dtype, shape: [-1, ...t.shape] }));
  const outs = p.emit([...types, { dtype: "int32", shape: [] }, ...stackTypes], [...init, zero, ...split.emptyStacks(init)], cond, (...xs) => {
    const { next, kept } = withoutRecorders(null, () => split.forward(xs.slice(0, n)));
    return [...next, add(xs[n]!, 1), ...kept.map((k, j) => stackPush(xs[n + 1 + j]!, k))];
  });
  const results = outs.slice(0, n);
  const count = outs[n]!;
  const stacks = outs.slice(n + 1);
  const carried = types.flatMap((_, i) => (loop.accumulator[i] ? [] : [i]));
  recordEntry("while", [...init, ...invariants], results, (cts) => {
    const ctFinal = cts.map((c, i) => c ?? zerosLikeTensor(results[i]!));
    const accum0 = invariants.map((x) => zerosLikeTensor(x));
    const res = p.whileLoop(
      (j) => greater(j, 0),
      (j, ...rest) => {
        const j1 = sub(j, 1);
        let c = 0;
        const iterCts = types.map((_, i) => (loop.accumulator[i] ? gather(ctFinal[i]!, j1, 0) : rest[c++]!));
        const g = split.backward(
          iterCts,
          stacks.map((s) => gather(s, j1, 0)),
        );
        const m = carried.length;
        return [j1, ...g.slice(0, m), ...rest.slice(m).map((a, i) => (loop.wrt[n + i] ? add(a, g[m + i]!) : a))];
      },
      [count, ...carried.map((i) => ctFinal[i]!), ...accum0],
      // Cotangents keep the loop variables' declared types.
      [[], ...carried.map((i) => types[i]!.shape.map((d) => (d < 0 ? null : d))), ...invariants.map((x) => x.shape.map((d) => (d < 0 ? null : d)))],
    );
    let c = 0;
    const gradInit = types.map((_, i) => (loop.accumulator[i] ? zerosLikeTensor(init[i]!) : res[1 + c++]!));
    return [...gradInit, ...res.slice(1 + carried.length)];
  });
  return results;
}

/**
 * The iteration's forward/backward split: the body replayed under a tape, and the tape's
 * gradient traced right away in a region nested in it, so every forward value the backward
 * reads shows up as a capture of that region: exactly those values are kept per iteration
 * (liveness by construction), and the backward loop recomputes nothing. Returns null when a
 * kept value has a shape only known at run time (e.g. the stacks of an inner loop), whose rows
 * could differ between iterations.
 */
function splitIteration(p: WhileParts, loop: LoopShape): IterationSplit | null {
  const { invariants, types, bodyG, ctx } = p;
  const { wrt } = loop;
  const library = ctx.library;
  const n = types.length;
  let backwardCtx: TraceContext | null = null;
  let forwardCtx: TraceContext | null = null;
  const probe = p.traceRegion(types, (...xs) => {
    forwardCtx = currentHandler() as TraceContext;
    const tape = new GradientTape({ persistent: true });
    const outs = tape.record(() => {
      tape.watch(xs.filter((_, i) => wrt[i]));
      tape.watch(invariants.filter((_, i) => wrt[n + i]));
      return replay(bodyG, library, [...xs, ...invariants]);
    });
    const bwd = new TraceContext("body_vjp", library, forwardCtx, false, forwardCtx.functionName, forwardCtx.variablesAsInputs, true);
    const cts = loop.ctTypes.map((t, i) => bwd.placeholder(t, `cotangent_${i}`));
    try {
      const grads = withHandler(bwd, () => {
        const sources = [...xs, ...invariants].filter((_, i) => !loop.accumulator[i]);
        const wanted = [...xs, ...invariants].filter((_, i) => wrt[i]);
        const full = loop.fullCotangents(cts);
        const pairs = outs.map((o, i) => [o, full[i]!] as const).filter(([o]) => isFloat(o.dtype));
        const g =
          pairs.length === 0 || wanted.length === 0
            ? wanted.map((x) => zerosLikeTensor(x))
            : (tape.gradient(
                pairs.map(([o]) => o),
                wanted,
                { outputGradient: pairs.map(([, c]) => c) },
              ) as Tensor[]);
        const byTensor = new Map(wanted.map((x, k) => [x, g[k]!]));
        return sources.map((x) => bwd.valueOf(byTensor.get(x) ?? zerosLikeTensor(x)));
      });
      bwd.graph.setOutputs(grads);
    } finally {
      bwd.active = false;
    }
    backwardCtx = bwd;
    return outs;
  });
  const fwd = forwardCtx as TraceContext | null;
  const bwd = backwardCtx as TraceContext | null;
  if (!fwd || !bwd) throw new Error("whileLoop gradient: the iteration probe did not run");
  // Values of the iteration the backward reads: kept. Everything else it reads is outside
  // the loop (invariants, constants) and is read directly. The tape also emits VJPs nobody
  // uses (gradients of inputs that are not differentiated): pruned first, so that what they
  // read is not kept.
  const bwdGraph = bwd.graph;
  runPrune(bwdGraph, undefined);
  const read = new Set<Value>(bwdGraph.outputs);
  for (const node of bwdGraph.nodes) for (const v of node.inputs) read.add(v);
  const numCts = types.length;
  const liveCaptures = bwd.captures.filter((c) => read.has(c.value));
  const keepInput = bwdGraph.inputs.map((v, i) => i < numCts || read.has(v));
  bwdGraph.inputNames = bwdGraph.inputNames.filter((_, i) => keepInput[i]);
  bwdGraph.inputs = bwdGraph.inputs.filter((_, i) => keepInput[i]);
  bwdGraph.inputs.forEach((v, i) => (v.index = i));
  const keptValues: Value[] = [];
  const bwdInputs: ({ kept: number } | { outside: Tensor })[] = liveCaptures.map((c) => {
    const ref = c.tensor.symbol as SymbolRef | null;
    if (ref && ref.ctx === fwd) {
      keptValues.push(ref.value);
      return { kept: keptValues.length - 1 };
    }
    return { outside: c.tensor };
  });
  if (keptValues.some((v) => v.type.shape.some((d) => d < 0))) return null;
  // The forward of one iteration: the probe's own graph, with the kept values as extra outputs.
  const fwdGraph = probe.graph;
  fwdGraph.setOutputs([...fwdGraph.outputs, ...keptValues]);
  const fwdOutside = fwd.captures.map((c) => c.tensor);
  return {
    kept: keptValues.map((v) => v.type),
    emptyStacks: () => keptValues.map((v) => full([0, ...v.type.shape], 0, v.type.dtype)),
    forward(vars) {
      const all = replay(fwdGraph, library, [...vars, ...fwdOutside]);
      return { next: all.slice(0, n), kept: all.slice(n) };
    },
    backward(cts, kept) {
      return replay(bwdGraph, library, [...cts, ...bwdInputs.map((b) => ("kept" in b ? kept[b.kept]! : b.outside))]);
    },
  };
}

/**
 * The fallback split: keeps the loop variables the body's VJP reads and recomputes the
 * iteration's forward inside the backward loop.
 */
function recomputingSplit(p: WhileParts, loop: LoopShape): IterationSplit {
  const { invariants, types, bodyG, ctx } = p;
  const library = ctx.library;
  const saved = loopVarsReadByBodyVjp(p, loop);
  const savedIdx = saved.flatMap((s, i) => (s ? [i] : []));
  return {
    kept: savedIdx.map((i) => types[i]!),
    emptyStacks: (init) => savedIdx.map((i) => emptyStack(init[i]!)),
    forward(vars) {
      return { next: replay(bodyG, library, [...vars, ...invariants]), kept: savedIdx.map((i) => vars[i]!) };
    },
    backward(cts, kept) {
      // A variable the VJP does not read only needs the right type (its cotangent's); an
      // accumulator is only pushed onto, so an empty one stands for it.
      const vars = types.map((_, i) => {
        const s = savedIdx.indexOf(i);
        return s >= 0 ? kept[s]! : loop.accumulator[i] ? emptyStack(cts[i]!) : zerosLikeTensor(cts[i]!);
      });
      const g = regionVjp(bodyG, library, [...vars, ...invariants], loop.fullCotangents(cts), [], loop.wrt);
      return g.filter((_, i) => !loop.accumulator[i]);
    },
  };
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
