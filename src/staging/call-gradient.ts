/**
 * The gradient rule for calls into the function library (staged functions called from staged
 * code, recursion included). A callee f is split once (backward-trace.ts) into
 *
 *   forward  F(args..., variables...)               -> (outputs..., record)
 *   backward B(cotangents..., variables..., record) -> (d args..., d variables...)
 *
 * where the record (ops/residuals.ts) holds the values of f's body that its VJP reads. Calls
 * inside f are emitted through this rule too, so their records are values f keeps: a
 * recursion builds a tree of records in its forward and consumes it in its backward, and no
 * subtree is ever recomputed. F and B are registered under their names before they are
 * traced, so recursive calls find them.
 */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { currentHandler, recorders, withHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { zerosLikeTensor } from "../ops/fill.js";
import { HANDLE_TYPE, packResiduals, unpackResiduals } from "../ops/residuals.js";
import { GradientTape } from "../ad/tape.js";
import { FunctionLibrary, type Graph, type Value, type ValueType } from "../graph/ir.js";
import { TraceContext } from "./trace-context.js";
import { replay } from "./replay.js";
import { recordsAllowed, traceBackward } from "./backward-trace.js";
import { recordEntry, regionVjp } from "./structural-gradients.js";

/** A function graph plus the library holding everything it calls. */
export interface FunctionBundle {
  graph: Graph;
  library: FunctionLibrary;
}

interface CallSplit {
  library: FunctionLibrary;
  forward: Graph;
  backward: Graph;
  /** The trainable variables the callee reads (explicit inputs of both). */
  vars: Variable[];
}

/**
 * Emits a call node in the graph being built; while tapes record, it calls the callee's
 * forward and records one entry whose VJP calls its backward on the record. A callee still
 * being traced (a recursive call met while tracing itself under a tape) cannot be split yet:
 * its plain call is emitted, and its VJP runs the forward once more for the record.
 */
export function emitCall(bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[], calleeComplete = true): Tensor[] {
  const ctx = currentHandler();
  if (!(ctx instanceof TraceContext)) throw new Error("emitCall needs a graph under construction");
  if (recorders.length > 0 && outTypes.length > 0 && calleeComplete && recordsAllowed()) return emitDifferentiatedCall(ctx, bundle, args, outTypes);
  addFunctions(ctx, bundle.library, bundle.graph);
  const outs = ctx.addStructural("call", args, { callee: bundle.graph.name }, outTypes);
  ctx.variableValues.clear();
  if (recorders.length > 0 && outs.length > 0) {
    const varValues = variablesReadBy(bundle).map((v) => v.read());
    const inputs = [...args, ...varValues];
    recordEntry("call", inputs, outs, (cts) => {
      const split = callSplitFor(bundle);
      const filled = cts.map((c, i) => c ?? zerosLikeTensor(outs[i]!));
      const record = withoutRecorders(null, () => emitCall({ graph: split.forward, library: split.library }, inputs, [...outTypes, HANDLE_TYPE]))[outTypes.length]!;
      const types = inputs.map((a) => ({ dtype: a.dtype, shape: a.shape }));
      return emitCall({ graph: split.backward, library: split.library }, [...filled, ...varValues, record], types);
    });
  }
  return outs;
}

function addFunctions(ctx: TraceContext, library: FunctionLibrary, graph: Graph): void {
  for (const g of library.functions.values()) ctx.library.add(g);
  ctx.library.add(graph);
}

function emitDifferentiatedCall(ctx: TraceContext, bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[]): Tensor[] {
  const split = callSplitFor(bundle);
  addFunctions(ctx, split.library, split.forward);
  // The callee's variables are inputs of the gradient entry, so gradients reach them.
  const varValues = split.vars.map((v) => v.read());
  const inputs = [...args, ...varValues];
  const res = ctx.addStructural("call", inputs, { callee: split.forward.name }, [...outTypes, HANDLE_TYPE]);
  ctx.variableValues.clear();
  const outs = res.slice(0, -1);
  const record = res[res.length - 1]!;
  // The record is an output of the entry too, so an outer tape sees how it depends on the inputs.
  recordEntry("call", inputs, res, (cts) => {
    const filled = outs.map((o, i) => cts[i] ?? zerosLikeTensor(o));
    const recordCt = cts[outs.length];
    if (recordCt) {
      // Higher order through the record: differentiate the forward itself (recomputed).
      return regionVjp(split.forward, split.library, inputs, [...filled, recordCt]);
    }
    const types = inputs.map((a) => ({ dtype: a.dtype, shape: a.shape }));
    return emitCall({ graph: split.backward, library: split.library }, [...filled, ...varValues, record], types);
  });
  return outs;
}

const splits = new WeakMap<Graph, CallSplit>();

function callSplitFor(callee: FunctionBundle): CallSplit {
  const cached = splits.get(callee.graph);
  if (cached) return cached;
  const g = callee.graph;
  const library = new FunctionLibrary();
  for (const f of callee.library.functions.values()) library.add(f);
  library.add(g);
  const vars = variablesReadBy(callee);
  const fwd = new TraceContext(`${g.name}_forward`, library, null, false, g.name, true);
  const bwd = new TraceContext(`${g.name}_backward`, library, null, false, g.name, true);
  library.add(fwd.graph);
  library.add(bwd.graph);
  const split: CallSplit = { library, forward: fwd.graph, backward: bwd.graph, vars };
  splits.set(g, split);
  // Variables the callee reads (regions and callees too) are inputs, resolved by reads.
  const varInputs = (ctx: TraceContext) =>
    vars.map((v) => {
      const t = ctx.placeholder({ dtype: v.dtype, shape: v.shape }, `variable_${v.name}`);
      ctx.variableInputs.set(v, t);
      return t;
    });
  const xs = g.inputs.map((v, i) => fwd.placeholder(v.type, g.inputNames[i] ?? `x${i}`));
  const fwdVars = varInputs(fwd);
  const cts = g.outputs.map((v, i) => bwd.placeholder(v.type, `cotangent_${i}`));
  const bwdVars = varInputs(bwd);
  const record = bwd.placeholder(HANDLE_TYPE, "record");
  try {
    withoutRecorders(null, () => {
      const tape = new GradientTape({ persistent: true });
      const sources = [...xs, ...fwdVars];
      const outs = withHandler(fwd, () =>
        tape.record(() => {
          tape.watch(sources.filter((x) => isFloat(x.dtype)));
          return replay(g, library, xs);
        }),
      );
      const backward = traceBackward(fwd, `${g.name}_vjp`, tape, outs, sources, sources.map((x) => isFloat(x.dtype)), g.outputs.map((v) => v.type));
      // Kept values that are variable inputs are inputs of the backward as well: not recorded.
      const varIndex = new Map<Value, number>(fwdVars.map((t, i) => [fwd.valueOf(t), i]));
      const recorded = backward.kept.filter((v) => !varIndex.has(v));
      withHandler(fwd, () => {
        const handle = packResiduals(recorded.map((v) => fwd.symbolic(v)));
        fwd.graph.setOutputs([...outs.map((o) => fwd.valueOf(o)), fwd.valueOf(handle)]);
      });
      withHandler(bwd, () => {
        const unpacked = unpackResiduals(record, recorded.map((v) => v.type));
        const keptTensor = backward.kept.map((v) => (varIndex.has(v) ? bwdVars[varIndex.get(v)!]! : unpacked[recorded.indexOf(v)]!));
        const grads = replay(backward.graph, library, [...cts, ...backward.inputs.map((b) => ("kept" in b ? keptTensor[b.kept]! : b.outside))]);
        bwd.graph.setOutputs(
          grads.map((t) => bwd.valueOf(t)),
          [...xs.map((_, i) => `grad_${i}`), ...vars.map((v) => `grad_${v.name}`)],
        );
      });
    });
  } catch (e) {
    splits.delete(g);
    throw e;
  } finally {
    fwd.active = false;
    bwd.active = false;
  }
  return split;
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
