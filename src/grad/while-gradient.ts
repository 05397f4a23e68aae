/**
 * The gradient rule for while loops. While a graph is being built and a tape records (a staged
 * function differentiated by sc.grad, or a tape used inside staged code), a loop is emitted
 * augmented for its gradient and recorded as one tape entry: the forward loop counts its
 * iterations and pushes the values its backward reads on stacks, one row per iteration
 * (the split of backward-trace.ts); the backward is a while loop running the same number of
 * iterations in reverse, reading them. Weight gradients of the form A^T D leave the backward
 * loop as rows and are summed by one product after it (loop-weight-gradients.ts).
 */
import { Tensor } from "../core/tensor.js";
import { anyRecorderTracks, currentHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { full, zerosLikeTensor } from "../ops/fill.js";
import { emptyStack, stackPush, stackRead } from "../ops/iteration-stack.js";
import { whileOp } from "../ops/structural.js";
import { add, sub } from "../ops/binary.js";
import { greater } from "../ops/compare.js";
import { GradientTape } from "../ad/tape.js";
import type { Value, ValueType } from "../graph/ir.js";
import { flip } from "../ops/shape.js";
import { seedVariableReads, TraceContext, type SymbolRef } from "../staging/trace-context.js";
import { replay } from "../staging/replay.js";
import { guardedWhileLoop, probeTracer, whileLoop } from "../staging/control-flow.js";
import type { WhileNode } from "../staging/recording.js";
import { GradientError, ShapeError } from "../core/errors.js";
import { differentiating, tapeGradient, traceBackward, withoutRecords, type BackwardTrace } from "./backward-trace.js";
import { recordEntry, regionVjp } from "./tape-entry.js";
import { deferLoopWeightGradients, type LoopDeferral } from "./loop-weight-gradients.js";
import { withCalleeVariables } from "./callee-variables.js";

/** Which of a body's loop variables its VJP reads (liveness on a discarded probe trace). */
function loopVarsReadByBodyVjp(p: WhileNode, loop: LoopShape): boolean[] {
  const { types, bodyG, invariants, ctx } = p;
  const n = types.length;
  const probe = probeTracer(p.ctx)([...types, ...loop.ctTypes], (...xs) => {
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

function loopShape(p: WhileNode): LoopShape {
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
 * cotangents, the kept values of that iteration) to the cotangents of the carried (not
 * accumulator) loop variables, the contributions to the invariants' gradients (null where
 * there is none, or where it is deferred), and the rows deferred contributions need.
 */
interface IterationSplit {
  kept: ValueType[];
  /** One empty stack per kept value (given the loop's initial values). */
  emptyStacks(init: Tensor[]): Tensor[];
  forward(vars: Tensor[]): { next: Tensor[]; kept: Tensor[] };
  backward(cts: Tensor[], kept: Tensor[]): { carried: Tensor[]; invariants: (Tensor | null)[]; rows: Tensor[] };
  /** Types of the rows the backward loop pushes for deferred contributions. */
  rowTypes: ValueType[];
  /** Per invariant whose gradient is deferred: that gradient, from the final row stacks and the forward's stacks. */
  deferred: Map<number, (rows: Tensor[], keptStacks: Tensor[]) => Tensor>;
}

/**
 * The gradient rule for while loops: emits the forward loop augmented with an iteration count
 * and one stack per kept value, and records its gradient: a loop running the same number of
 * iterations in reverse, reading row j of each stack. Returns the user-visible loop outputs.
 */
export function whileGradient(node: WhileNode): Tensor[] {
  // Variables that calls in the loop read are invariants too, so that their gradients leave it.
  const p = { ...node, invariants: withCalleeVariables(node.ctx, [node.condG, node.bodyG], node.invariants) };
  return differentiating(p.ctx.functionName, () => explainShapeChanges(p, () => augmentedWhile(p)));
}

const explained = new WeakSet<Error>();

/**
 * Runs `fn`, part of differentiating loop `p`. A ShapeError it raises, where a loop variable
 * changes shape across iterations (its shapeInvariants leave a size open that its initial value
 * has) and no input of the loop has an unknown size of its own, comes from that change: the
 * gradient of an op in the body needs a size that differs from one iteration to the next. The
 * op's own message speaks of inputSignature dimensions, which are not the cause: it is replaced.
 */
function explainShapeChanges<T>(p: WhileNode, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (!(e instanceof ShapeError) || explained.has(e)) throw e;
    const { accumulator } = loopShape(p);
    const i = p.types.findIndex((t, k) => !accumulator[k] && t.shape.some((d, j) => d < 0 && p.init[k]!.shape[j]! >= 0));
    if (i < 0 || [...p.init, ...p.invariants].some((t) => t.shape.some((d) => d < 0))) throw e;
    const err = new ShapeError(
      `loop variable ${i} changes shape across iterations (${fmtType(p.init[i]!)} at the start, ${fmtType(p.types[i]!)} as its shapeInvariants allow), ` +
        `and the gradient of ${e.op ?? "an op"} in the loop's body depends on a size that then differs from one iteration to the next, ` +
        `so the loop cannot be differentiated; keep the loop variables' shapes fixed to differentiate it ` +
        `(write rows into a buffer allocated before the loop, as sc.scan does)`,
      "whileLoop",
      e.location,
    );
    explained.add(err);
    throw err;
  }
}

function fmtType(t: { dtype: string; shape: readonly number[] }): string {
  return `${t.dtype}[${t.shape.map((d) => (d < 0 ? "?" : String(d))).join(", ")}]`;
}

function augmentedWhile(p: WhileNode): Tensor[] {
  const { init, invariants, types, condG, ctx } = p;
  const library = ctx.library;
  const n = init.length;
  const loop = loopShape(p);
  const split = splitIteration(p, loop) ?? recomputingSplit(p, loop);
  const zero = full([], 0, "int32");
  const cond = (...xs: Tensor[]) => replay(condG, library, [...xs.slice(0, n), ...invariants])[0]!;
  const stackTypes: ValueType[] = split.kept.map((t) => ({ dtype: t.dtype, shape: [-1, ...t.shape] }));
  const augTypes: ValueType[] = [...types, { dtype: "int32", shape: [] }, ...stackTypes];
  const augInit = () => [...init, zero, ...split.emptyStacks(init)];
  const augBody = (...xs: Tensor[]) => {
    const { next, kept } = withoutRecorders(null, () => split.forward(xs.slice(0, n)));
    return [...next, add(xs[n]!, 1), ...kept.map((k, j) => stackPush(xs[n + 1 + j]!, k))];
  };
  const outs = p.emit(augTypes, augInit(), cond, augBody);
  const results = outs.slice(0, n);
  const count = outs[n]!;
  const stacks = outs.slice(n + 1);
  const loopAttrs = (outs[0]!.symbol as SymbolRef).value.producer!.attrs;
  const carried = types.flatMap((_, i) => (loop.accumulator[i] ? [] : [i]));
  // Invariants whose contributions are summed in the backward loop (the others have none, or
  // deferred ones, computed once from stacked rows after the loop).
  const summed = invariants.flatMap((_, i) => (loop.wrt[n + i] && !split.deferred.has(i) ? [i] : []));
  const known = (t: { shape: readonly number[] }) => t.shape.map((d) => (d < 0 ? null : d));
  // The count and the stacks are outputs of the entry too: the backward loop below reads them,
  // so when an outer tape differentiates that backward (a second derivative), their cotangents
  // must reach the loop's inputs through this entry.
  recordEntry(whileOp.name, ctx.functionName, [...init, ...invariants], outs, (cts) => explainShapeChanges(p, () => {
    if (cts.slice(n + 1).some((c) => c !== null)) {
      // Higher order through the stacks: differentiate the augmented loop itself, recomputed
      // (its stacks are accumulators there: see LoopShape).
      return augmentedLoopVjp(p, loop, augTypes, augInit(), cond, augBody, loopAttrs, outs, cts);
    }
    const ctFinal = results.map((r, i) => cts[i] ?? zerosLikeTensor(r));
    const m = carried.length;
    const rows0 = split.rowTypes.map((t) => full([0, ...t.shape], 0, t.dtype));
    const res = whileLoop(
      (j) => greater(j, 0),
      (j, ...rest) => {
        const j1 = sub(j, 1);
        let c = 0;
        const iterCts = types.map((_, i) => (loop.accumulator[i] ? stackRead(ctFinal[i]!, j1) : rest[c++]!));
        const g = split.backward(
          iterCts,
          stacks.map((s) => stackRead(s, j1)),
        );
        const sums = rest.slice(m, m + summed.length).map((a, k) => add(a, g.invariants[summed[k]!]!));
        const rows = rest.slice(m + summed.length).map((s, k) => stackPush(s, g.rows[k]!));
        return [j1, ...g.carried, ...sums, ...rows];
      },
      [count, ...carried.map((i) => ctFinal[i]!), ...summed.map((i) => zerosLikeTensor(invariants[i]!)), ...rows0],
      {
        // Cotangents keep the loop variables' declared types; row stacks grow.
        shapeInvariants: [[], ...carried.map((i) => known(types[i]!)), ...summed.map((i) => known(invariants[i]!)), ...split.rowTypes.map((t) => [null, ...known(t)])],
      },
    );
    let c = 0;
    const gradInit = types.map((_, i) => (loop.accumulator[i] ? zerosLikeTensor(init[i]!) : res[1 + c++]!));
    const rowStacks = res.slice(1 + m + summed.length);
    const gradInvariants = invariants.map((_, i) => {
      const k = summed.indexOf(i);
      if (k >= 0) return res[1 + m + k]!;
      const deferred = split.deferred.get(i);
      return deferred ? deferred(rowStacks, stacks) : null;
    });
    return [...gradInit, ...gradInvariants];
  }));
  return results;
}

/**
 * The VJP of loop `p` augmented for its gradient, outputs (results, count, stacks) with
 * cotangents `cts` (some reaching the stacks: an outer tape differentiates the backward loop
 * that reads them), with respect to the loop's inputs (init, invariants). The augmented loop is
 * emitted again under a tape of its own, so its gradient rule splits it (its stacks are then
 * accumulators), and that tape's gradient is taken; tapes recording now record all of it, so
 * derivatives of any order go through.
 */
function augmentedLoopVjp(
  p: WhileNode,
  loop: LoopShape,
  augTypes: ValueType[],
  augInit: Tensor[],
  cond: (...xs: Tensor[]) => Tensor,
  body: (...xs: Tensor[]) => Tensor[],
  attrs: Record<string, unknown>,
  outs: Tensor[],
  cts: (Tensor | null)[],
): (Tensor | null)[] {
  const { init, invariants } = p;
  const n = init.length;
  const sources = [...init, ...invariants];
  const wanted = loop.wrt; // (not accumulators: their initial values are empty stacks)
  const tape = new GradientTape();
  const again = tape.record(() => {
    tape.watch(sources.filter((_, i) => wanted[i]));
    const shapeInvariants = augTypes.map((t) => t.shape.map((d) => (d < 0 ? null : d)));
    const max = attrs.maxIterations as number | undefined;
    const options = { shapeInvariants, ...(max === undefined ? {} : { maxIterations: max }) };
    return attrs.maxIterationsIsGuard && max !== undefined
      ? guardedWhileLoop(cond, body, augInit, { ...options, maxIterations: max })
      : whileLoop(cond, body, augInit, options);
  });
  const filled = outs.map((o, i) => cts[i] ?? zerosLikeTensor(o));
  // (a tensor in several slots, such as an initial value the body also captures, gets its
  // whole gradient in its first slot: see tapeGradient)
  const g = tapeGradient(tape, again, filled, sources, wanted);
  return g.map((x, i) => (wanted[i] || (i < n && loop.accumulator[i]) ? x : null));
}

/**
 * The iteration's forward/backward split: the body replayed under a tape, and the tape's
 * gradient traced right away in a region nested in it, so every forward value the backward
 * reads shows up as a capture of that region: exactly those values are kept per iteration
 * (liveness by construction), and the backward loop recomputes nothing. Returns null when a
 * kept value has a shape only known at run time (e.g. the stacks of an inner loop), whose rows
 * could differ between iterations.
 */
function splitIteration(p: WhileNode, loop: LoopShape): IterationSplit | null {
  const { invariants, types, bodyG, ctx } = p;
  const { wrt } = loop;
  const library = ctx.library;
  const n = types.length;
  const numCarried = loop.accumulator.filter((a) => !a).length;
  let forwardCtx: TraceContext | null = null;
  let backward: BackwardTrace | null = null;
  let deferral: LoopDeferral | null = null;
  const probe = probeTracer(p.ctx)(types, (...xs) => {
    const fwd = (forwardCtx = currentHandler() as TraceContext);
    // Variables read by calls in the body resolve to the invariants standing for them.
    seedVariableReads(fwd, ctx, invariants, invariants);
    const tape = new GradientTape({ persistent: true });
    const outs = tape.record(() => {
      tape.watch(xs.filter((_, i) => wrt[i]));
      tape.watch(invariants.filter((_, i) => wrt[n + i]));
      return withoutRecords(() => replay(bodyG, library, [...xs, ...invariants]));
    });
    const sources = [...xs, ...invariants];
    const keep = sources.map((_, i) => !loop.accumulator[i]);
    backward = traceBackward(fwd, "body_vjp", tape, outs, sources.filter((_, i) => keep[i]), wrt.filter((_, i) => keep[i]), loop.ctTypes, loop.fullCotangents, (g) => {
      deferral = deferLoopWeightGradients(g, numCarried, loop.ctTypes.length, invariants.map((_, i) => wrt[n + i]!));
      return deferral.forwardRows;
    });
    return outs;
  });
  const fwd = forwardCtx as TraceContext | null;
  const bwd = backward as BackwardTrace | null;
  const def = deferral as LoopDeferral | null;
  if (!fwd || !bwd || !def) throw new GradientError("the gradient rule's probe of the loop body did not run", "whileLoop");
  if (bwd.kept.some((v) => v.type.shape.some((d) => d < 0))) return null;
  // The forward of one iteration: the probe's own graph, with the kept values as extra outputs.
  const fwdGraph = probe.graph;
  fwdGraph.setOutputs([...fwdGraph.outputs, ...bwd.kept]);
  const fwdOutside = fwd.captures.map((c) => c.tensor);
  return {
    kept: bwd.kept.map((v) => v.type),
    emptyStacks: () => bwd.kept.map((v) => full([0, ...v.type.shape], 0, v.type.dtype)),
    forward(vars) {
      const all = replay(fwdGraph, library, [...vars, ...fwdOutside]);
      return { next: all.slice(0, n), kept: all.slice(n) };
    },
    backward(cts, kept) {
      const out = replay(bwd.graph, library, [...cts, ...bwd.inputs.map((b) => ("kept" in b ? kept[b.kept]! : b.outside))]);
      let k = numCarried;
      return {
        carried: out.slice(0, numCarried),
        invariants: invariants.map((_, i) => (def.summed[i] ? out[k++]! : null)),
        rows: out.slice(k),
      };
    },
    rowTypes: def.rowTypes,
    // Rows that are kept forward values come from the forward's stack, reversed to the
    // backward loop's order (the stack of its rows would hold exactly the same data).
    deferred: new Map(
      [...def.deferred].map(([i, f]) => [i, (rows: Tensor[], keptStacks: Tensor[]) => f(rows, (v) => flip(keptStacks[bwd.keptOf(v)!]!, 0))]),
    ),
  };
}

/**
 * The fallback split: keeps the loop variables the body's VJP reads and recomputes the
 * iteration's forward inside the backward loop.
 */
function recomputingSplit(p: WhileNode, loop: LoopShape): IterationSplit {
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
      const h = currentHandler();
      if (h instanceof TraceContext) seedVariableReads(h, ctx, invariants, invariants);
      const g = regionVjp(bodyG, library, [...vars, ...invariants], loop.fullCotangents(cts), [], loop.wrt);
      return {
        carried: g.slice(0, types.length).filter((_, i) => !loop.accumulator[i]),
        invariants: g.slice(types.length).map((x, i) => (loop.wrt[types.length + i] ? x : null)),
        rows: [],
      };
    },
    rowTypes: [],
    deferred: new Map(),
  };
}
