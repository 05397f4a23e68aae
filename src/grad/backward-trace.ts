/**
 * The forward/backward split every structural gradient rule shares. A forward (a loop body,
 * a branch, a function body) is traced under a GradientTape; right after, the tape's gradient
 * is traced into a region nested in that forward trace. Every forward value the backward
 * reads is then a capture of that region: those are exactly the values the forward must keep
 * (liveness by construction, after pruning the VJPs nobody uses), and the backward recomputes
 * nothing.
 */
import type { Tensor } from "../core/tensor.js";
import { withHandler } from "../core/context.js";
import { formatLocation, gradientNote, StagecraftError, withinGradientOf } from "../core/errors.js";
import { isFloat } from "../core/dtype.js";
import { zerosLikeTensor } from "../ops/fill.js";
import type { GradientTape } from "../ad/tape.js";
import type { Graph, Value, ValueType } from "../graph/ir.js";
import { runPrune } from "../graph/passes/prune.js";
import { TraceContext, type SymbolRef } from "../staging/trace-context.js";

/**
 * Runs `fn`, part of differentiating staged function `functionName`: the nodes it traces carry
 * the name (the errors they raise when they run say so), and a typed error it raises says so
 * too (once: the innermost function differentiated is named), next to the user's line.
 */
export function differentiating<T>(functionName: string, fn: () => T): T {
  try {
    return withinGradientOf(functionName, fn);
  } catch (e) {
    // (an error raised by a node of a gradient names its function already)
    if (e instanceof StagecraftError && !annotated.has(e) && e.location?.gradientOf === undefined) {
      annotated.add(e);
      const old = e.message;
      const where = formatLocation(e.location);
      const suffix = where ? ` (at ${where})` : "";
      const body = suffix && old.endsWith(suffix) ? old.slice(0, old.length - suffix.length) : old;
      e.message = `${body} ${gradientNote(functionName)}${suffix}`;
      if (e.stack?.startsWith(`${e.name}: ${old}`)) e.stack = `${e.name}: ${e.message}${e.stack.slice(e.name.length + 2 + old.length)}`;
    }
    throw e;
  }
}

const annotated = new WeakSet<Error>();

let keepRecords = true;

/**
 * Whether a cond or call emitted now may return a record for its backward. Not inside the
 * forward of a loop iteration: what an iteration keeps goes on stacks, which hold numbers, so
 * there calls and conds recompute their forward in the backward instead.
 */
export function recordsAllowed(): boolean {
  return keepRecords;
}

export function withoutRecords<T>(fn: () => T): T {
  const saved = keepRecords;
  keepRecords = false;
  try {
    return fn();
  } finally {
    keepRecords = saved;
  }
}

/**
 * The gradients `tape` recorded of the float `outs` (cotangents `cts`) with respect to each
 * source; sources not `wanted` get zeros without computing them. A tensor in several source
 * slots (an argument passed twice, a loop's initial value its body also captures) gets its
 * whole gradient in its first wanted slot and zeros in the others: the tape cannot tell the
 * slots apart, and the tape entries these gradients return from sum their input slots, so a
 * copy in each would count it once per slot.
 */
export function tapeGradient(tape: GradientTape, outs: Tensor[], cts: Tensor[], sources: Tensor[], wantedSlots: boolean[]): Tensor[] {
  const seen = new Set<Tensor>();
  const wanted = sources.map((x, i) => {
    if (!wantedSlots[i] || seen.has(x)) return false;
    seen.add(x);
    return true;
  });
  const wantedSources = sources.filter((_, i) => wanted[i]);
  const pairs = outs.map((o, i) => [o, cts[i]!] as const).filter(([o]) => isFloat(o.dtype));
  const g =
    pairs.length === 0 || wantedSources.length === 0
      ? wantedSources.map((x) => zerosLikeTensor(x))
      : (tape.gradient(
          pairs.map(([o]) => o),
          wantedSources,
          { outputGradient: pairs.map(([, c]) => c), unconnected: "zero" },
        ) as Tensor[]);
  let k = 0;
  return sources.map((x, i) => (wanted[i] ? g[k++]! : zerosLikeTensor(x)));
}

export interface BackwardTrace {
  /** (cotangents..., one input per `inputs` entry) -> one gradient per source. */
  graph: Graph;
  /** Forward values the backward reads, in the order the forward must keep them. */
  kept: Value[];
  /** What feeds each backward input after the cotangents: a kept value, or an outside tensor. */
  inputs: ({ kept: number } | { outside: Tensor })[];
  /** The kept value (index into `kept`) behind a backward input, where one is. */
  keptOf(input: Value): number | undefined;
}

/**
 * Traces `tape`'s gradient of `outs` (cotangents typed `ctTypes`; `fullCotangents` maps them
 * to one per output) with respect to `sources` into a region nested in `fwd`. Sources not
 * `wanted` get zero gradients.
 */
export function traceBackward(
  fwd: TraceContext,
  name: string,
  tape: GradientTape,
  outs: Tensor[],
  sources: Tensor[],
  wanted: boolean[],
  ctTypes: ValueType[],
  fullCotangents: (cts: Tensor[]) => Tensor[] = (cts) => cts,
  /**
   * Rewrites the backward graph's outputs before pruning (what is kept follows the rewrite);
   * may name inputs whose forward values must be kept even if the backward no longer reads them.
   */
  rewrite?: (g: Graph) => Value[] | void,
): BackwardTrace {
  const bwd = new TraceContext(name, fwd.library, fwd, false, fwd.functionName, fwd.variablesAsInputs, true);
  const cts = ctTypes.map((t, i) => bwd.placeholder(t, `cotangent_${i}`));
  try {
    const grads = withHandler(bwd, () => tapeGradient(tape, outs, fullCotangents(cts), sources, wanted).map((g) => bwd.valueOf(g)));
    bwd.graph.setOutputs(grads);
  } finally {
    bwd.active = false;
  }
  const graph = bwd.graph;
  const alsoKept = rewrite?.(graph) ?? [];
  runPrune(graph, undefined);
  const read = new Set<Value>([...graph.outputs, ...alsoKept]);
  for (const node of graph.nodes) for (const v of node.inputs) read.add(v);
  const liveCaptures = bwd.captures.filter((c) => read.has(c.value));
  const keepInput = graph.inputs.map((v, i) => i < ctTypes.length || read.has(v));
  graph.inputNames = graph.inputNames.filter((_, i) => keepInput[i]);
  graph.inputs = graph.inputs.filter((_, i) => keepInput[i]);
  graph.inputs.forEach((v, i) => (v.index = i));
  const kept: Value[] = [];
  const keptIndex = new Map<Value, number>();
  const inputs = liveCaptures.map((c) => {
    const ref = c.tensor.symbol as SymbolRef | null;
    if (ref && ref.ctx === fwd) {
      let k = keptIndex.get(ref.value);
      if (k === undefined) {
        keptIndex.set(ref.value, (k = kept.length));
        kept.push(ref.value);
      }
      return { kept: k };
    }
    return { outside: c.tensor };
  });
  const byInput = new Map<Value, number>();
  liveCaptures.forEach((c, i) => {
    const k = (inputs[i] as { kept?: number }).kept;
    if (k !== undefined) byInput.set(c.value, k);
  });
  return { graph, kept, inputs, keptOf: (v) => byInput.get(v) };
}
