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
import { withHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { full, zerosLikeTensor } from "../ops/fill.js";
import { HANDLE_TYPE, packResiduals, unpackResiduals } from "../ops/residuals.js";
import { callOp } from "../ops/structural.js";
import { GradientTape } from "../ad/tape.js";
import { FunctionLibrary, type Graph, type Value, type ValueType } from "../graph/ir.js";
import { runPrune } from "../graph/passes/prune.js";
import { embedCaptures, functionNameOf, TraceContext } from "../staging/trace-context.js";
import { tracedAsCopyOf } from "../staging/assigned-variables.js";
import { replay } from "../staging/replay.js";
import { addFunctions, emitCall, emitPlainCall } from "../staging/call.js";
import type { FunctionBundle } from "../staging/concrete-function.js";
import type { TracedCall } from "../staging/recording.js";
import { differentiating, recordsAllowed, traceBackward } from "./backward-trace.js";
import { deferRecursiveWeightGradients, gradientFromStacks, selfCalls, type DeferredWeight } from "./recursive-weight-gradients.js";
import { recordEntry, regionVjp } from "./tape-entry.js";
import { variablesReadBy } from "./callee-variables.js";

interface CallSplit {
  library: FunctionLibrary;
  forward: Graph;
  backward: Graph;
  /** The callee's input types (its gradients have them). */
  argTypes: ValueType[];
  /** The trainable variables the callee reads (explicit inputs of both). */
  vars: Variable[];
  /** Weights whose gradients the backward returns as stacks of rows (recursive callees). */
  deferred: DeferredWeight[];
  /** Calls of the backward emitted while the split is being built (its signature may not change if others made them). */
  earlyCalls: number;
}

/**
 * The gradient rule for calls. A call node emitted while tapes record calls the callee's forward
 * and is one entry whose VJP calls its backward on the record. Where no record may be kept (a
 * loop iteration's forward, see backward-trace.ts) or the callee is still being traced (a
 * recursive call met while tracing itself under a tape), the plain call is emitted, and its VJP
 * runs the callee's forward once more for the record.
 */
export function callGradient(node: TracedCall): Tensor[] {
  const { ctx, callee, args, outTypes } = node;
  if (outTypes.length > 0 && node.calleeComplete && recordsAllowed()) return emitDifferentiatedCall(ctx, callee, args, outTypes);
  const outs = emitPlainCall(ctx, callee, args, outTypes);
  if (outs.length > 0) {
    const varValues = variablesReadBy(callee).map((v) => v.read());
    const inputs = [...args, ...varValues];
    recordEntry(callOp.name, functionNameOf(callee.graph), inputs, outs, (cts) => {
      const split = callSplitFor(callee);
      const filled = cts.map((c, i) => c ?? zerosLikeTensor(outs[i]!));
      const record = withoutRecorders(null, () => emitCall({ graph: split.forward, library: split.library }, inputs, [...outTypes, HANDLE_TYPE]))[outTypes.length]!;
      return emitBackward(split, filled, args, varValues, record);
    });
  }
  return outs;
}

function emitDifferentiatedCall(ctx: TraceContext, bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[]): Tensor[] {
  const split = differentiating(functionNameOf(bundle.graph), () => callSplitFor(bundle));
  addFunctions(ctx, split.library, split.forward);
  // The callee's variables are inputs of the gradient entry, so gradients reach them.
  const varValues = split.vars.map((v) => v.read());
  const inputs = [...args, ...varValues];
  const res = ctx.addStructural(callOp.name, inputs, { callee: split.forward.name }, [...outTypes, HANDLE_TYPE]);
  const outs = res.slice(0, -1);
  const record = res[res.length - 1]!;
  // The record is an output of the entry too, so an outer tape sees how it depends on the inputs.
  recordEntry(callOp.name, functionNameOf(bundle.graph), inputs, res, (cts) => {
    const filled = outs.map((o, i) => cts[i] ?? zerosLikeTensor(o));
    const recordCt = cts[outs.length];
    if (recordCt) {
      // Higher order through the record: differentiate the forward itself (recomputed).
      return regionVjp(split.forward, split.library, inputs, [...filled, recordCt]);
    }
    return emitBackward(split, filled, args, varValues, record);
  });
  return outs;
}

/**
 * Calls the callee's backward on cotangents and a record; returns one gradient per input
 * (args, then variables). Gradients the backward returns as stacks of rows
 * (recursive-weight-gradients.ts) are computed from the final stacks here.
 */
function emitBackward(split: CallSplit, cts: Tensor[], args: Tensor[], varValues: Tensor[], record: Tensor): Tensor[] {
  if (split.earlyCalls >= 0) split.earlyCalls++;
  const deferred = new Map(split.deferred.map((d) => [d.variable, d]));
  const stacks0 = split.deferred.flatMap((d) => d.rowTypes.map((t) => full([0, ...t.shape], 0, t.dtype)));
  const type = (t: Tensor) => ({ dtype: t.dtype, shape: t.shape });
  const dense = varValues.filter((_, i) => !deferred.has(split.vars[i]!));
  // The gradients have the callee's declared input types (an argument may be more specific:
  // the empty stack a stack input starts from is [0, ...], its gradient a stack of any length).
  const res = emitCall(
    { graph: split.backward, library: split.library },
    [...cts, ...varValues, record, ...stacks0],
    [...split.argTypes, ...dense.map(type), ...stacks0.map((s) => ({ dtype: s.dtype, shape: [-1, ...s.shape.slice(1)] }))],
  );
  let k = args.length;
  let stack = args.length + dense.length;
  const varGrads = split.vars.map((v) => {
    const d = deferred.get(v);
    if (!d) return res[k++]!;
    const stacks = res.slice(stack, stack + d.rowTypes.length);
    stack += d.rowTypes.length;
    return gradientFromStacks(d, stacks);
  });
  return [...res.slice(0, args.length), ...varGrads];
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
  const fwd = new TraceContext(`${g.name}_forward`, library, null, false, functionNameOf(g), true);
  const bwd = new TraceContext(`${g.name}_backward`, library, null, false, functionNameOf(g), true);
  library.add(fwd.graph);
  library.add(bwd.graph);
  // (recursive calls of them, made while they are traced, assign what the callee does)
  tracedAsCopyOf(fwd.graph, g);
  tracedAsCopyOf(bwd.graph, g);
  const split: CallSplit = { library, forward: fwd.graph, backward: bwd.graph, argTypes: g.inputs.map((v) => v.type), vars, deferred: [], earlyCalls: -1 };
  splits.set(g, split);
  // Variables the callee reads (regions and callees too) are inputs, resolved by reads.
  const varInputs = (ctx: TraceContext) =>
    vars.map((v) => {
      const t = ctx.placeholder({ dtype: v.dtype, shape: v.shape }, `variable_${v.name}`);
      ctx.variableInputs.set(v, t);
      return t;
    });
  split.earlyCalls = 0;
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
      // A recursive callee's weight gradients travel as stacks of rows through its backward,
      // unless calls of its backward were made from elsewhere (mutual recursion) with the
      // signature it has now.
      const own = selfCalls(backward.graph, bwd.graph.name).size;
      if (split.earlyCalls === own) split.deferred = deferRecursiveWeightGradients(backward.graph, bwd.graph.name, vars, vars.map((_, k) => xs.length + k));
      split.earlyCalls = -1;
      if (split.deferred.length > 0) runPrune(backward.graph, undefined);
      const stacksIn = split.deferred.flatMap((d, k) => d.rowTypes.map((t, j) => bwd.placeholder({ dtype: t.dtype, shape: [-1, ...t.shape] }, `stack_${k}_${j}`)));
      withHandler(bwd, () => {
        const unpacked = unpackResiduals(record, recorded.map((v) => v.type));
        const keptTensor = backward.kept.map((v) => (varIndex.has(v) ? bwdVars[varIndex.get(v)!]! : unpacked[recorded.indexOf(v)]!));
        const grads = replay(backward.graph, library, [...cts, ...backward.inputs.map((b) => ("kept" in b ? keptTensor[b.kept]! : b.outside)), ...stacksIn]);
        const deferredVars = new Set(split.deferred.map((d) => d.variable));
        bwd.graph.setOutputs(
          grads.map((t) => bwd.valueOf(t)),
          [...xs.map((_, i) => `grad_${i}`), ...vars.filter((v) => !deferredVars.has(v)).map((v) => `grad_${v.name}`), ...stacksIn.map((_, i) => `stack_out_${i}`)],
        );
      });
      // A split's graphs are called with exactly their declared inputs (args, variables,
      // record, stacks), and recursive calls are emitted before its trace ends, so what the
      // traces captured beyond them (eager tensors that gradient rules create while tracing,
      // variables that are not trainable) is embedded in the graphs instead.
      embedCaptures(fwd);
      embedCaptures(bwd);
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
