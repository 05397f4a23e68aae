/**
 * Tape integration for staged functions. A staged call made while tapes record is one tape
 * entry. Its forward is a staged function that also returns what the backward needs, and
 * its backward is itself a staged function (so outer tapes differentiate it again):
 *
 *   forward graph  F(args, captures)        -> (outputs, saved...)
 *   backward graph B(cotangents, saved...)  -> d(args), d(captures)
 *
 * Both come from replaying the concrete graph under a GradientTape inside a trace: the
 * tape's VJP ops are traced into B, and every forward value B uses becomes an extra output
 * of F. Variables the function reads become captured inputs, so gradients reach them.
 */
import { Tensor } from "../core/tensor.js";
import { anyRecorderTracks, recorders, withHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import type { OpDef } from "../ops/registry.js";
import { zerosLikeTensor } from "../ops/fill.js";
import { GradientTape } from "../ad/tape.js";
import { FunctionLibrary } from "../graph/ir.js";
import { TraceContext, type SymbolRef } from "./trace-context.js";
import { ConcreteFunction, OutputLeaf } from "./concrete-function.js";
import { replay } from "./replay.js";
import { stage, type StagedFunction } from "./stage.js";

interface Split {
  forward: ConcreteFunction;
  numOutputs: number;
  /**
   * VJP of the forward with respect to all its outputs, saved values included, by replaying
   * it under a tape: (args..., captures..., cotangents of every forward output...) ->
   * gradients. Needed only when an outer tape differentiates through the saved values
   * (higher-order derivatives).
   */
  fullVjp: StagedFunction<Tensor[], Tensor[]>;
  /** Backward staged function: (cotangents..., backwardCaptures...) -> gradients of every forward input. */
  backward: StagedFunction<Tensor[], Tensor[]>;
  /** For each backward capture: index into the forward's saved outputs, or the outside tensor. */
  backwardInputs: ({ saved: number } | { tensor: Tensor })[];
}

/** Splits per concrete function and per set of captured tensors that need gradients. */
const splits = new WeakMap<ConcreteFunction, Map<string, Split>>();

function splitFor(cf: ConcreteFunction, watchCaptures: boolean[]): Split {
  let byMask = splits.get(cf);
  if (!byMask) splits.set(cf, (byMask = new Map()));
  const key = watchCaptures.map((w) => (w ? "1" : "0")).join("");
  let split = byMask.get(key);
  if (!split) byMask.set(key, (split = buildSplit(cf, watchCaptures)));
  return split;
}

/**
 * Builds the forward/backward pair. Closed-over tensors are differentiated only when a tape
 * tracks them (`watchCaptures`), so the forward keeps no more than that backward reads.
 */
function buildSplit(cf: ConcreteFunction, watchCaptures: boolean[]): Split {
  const library = new FunctionLibrary();
  for (const g of cf.library.functions.values()) library.add(g);
  const fwd = new TraceContext(`${cf.name}_forward`, library, null, false, cf.name, true);
  const args = cf.graph.inputs.slice(0, cf.numArgInputs).map((v, i) => fwd.placeholder(v.type, cf.graph.inputNames[i]!));
  const tape = new GradientTape({ persistent: true });
  let outs: Tensor[] = [];
  withoutRecorders(null, () =>
    withHandler(fwd, () =>
      tape.record(() => {
        tape.watch(args);
        const captured = cf.captures.map((c) => c.tensor);
        tape.watch(captured.filter((_, i) => watchCaptures[i]));
        outs = replay(cf.graph, cf.library, [...args, ...captured]);
      }),
    ),
  );
  // Every forward input that gradients are computed for: args, then the forward's captures.
  const sources: Tensor[] = [...args, ...fwd.captures.map((c) => (c.variable ? fwd.variableInputs.get(c.variable)! : c.tensor))];
  // Variable reads while tracing the backward (recomputations) resolve to the forward's inputs.
  const bwd = new TraceContext(`${cf.name}_backward`, library, fwd, false, cf.name, true);
  const cts = outs.map((o, i) => bwd.placeholder({ dtype: o.dtype, shape: o.shape }, `cotangent_${i}`));
  try {
    const grads = withoutRecorders(null, () =>
      withHandler(bwd, () => {
        const diffOuts = outs.filter((o) => isFloat(o.dtype));
        const diffCts = cts.filter((_, i) => isFloat(outs[i]!.dtype));
        const g = diffOuts.length > 0 ? (tape.gradient(diffOuts, sources, { outputGradient: diffCts }) as Tensor[]) : sources.map((s) => zerosLikeTensor(s));
        return g.map((x) => bwd.valueOf(x));
      }),
    );
    bwd.graph.setOutputs(grads, sources.map((_, i) => `grad_${i}`));
  } finally {
    bwd.active = false;
  }
  const saved: Tensor[] = [];
  const backwardInputs = bwd.captures.map((c) => {
    const ref = c.tensor.symbol as SymbolRef | null;
    if (ref && ref.ctx === fwd) {
      saved.push(c.tensor);
      return { saved: saved.length - 1 };
    }
    return { tensor: c.tensor };
  });
  fwd.graph.setOutputs([...outs, ...saved].map((t) => fwd.valueOf(t)));
  fwd.active = false;
  const forward = new ConcreteFunction(fwd.graph, library, fwd.captures, outs.map((_, i) => new OutputLeaf(i)), args.length);
  const bwdGraph = bwd.graph;
  const backward = stage((...xs: Tensor[]) => replay(bwdGraph, library, xs), { name: `${cf.name}_backward`, autograph: false });
  const fwdGraph = fwd.graph;
  const numInputs = fwdGraph.inputs.length;
  const fullVjp = stage(
    (...xs: Tensor[]) => {
      const inputs = xs.slice(0, numInputs);
      const cotangents = xs.slice(numInputs);
      const t = new GradientTape();
      const all = t.record(() => {
        t.watch(inputs);
        return replay(fwdGraph, library, inputs);
      });
      const diff = all.map((o, i) => [o, cotangents[i]!] as const).filter(([o]) => isFloat(o.dtype));
      if (diff.length === 0) return inputs.map((x) => zerosLikeTensor(x));
      return t.gradient(diff.map(([o]) => o), inputs, { outputGradient: diff.map(([, c]) => c) }) as Tensor[];
    },
    { name: `${cf.name}_vjp`, autograph: false },
  );
  return { forward, numOutputs: outs.length, fullVjp, backward, backwardInputs };
}

/** The forward and backward graphs the tape uses for calls of `cf` (for inspection and tests). */
export function gradientGraphs(cf: ConcreteFunction): { forward: ConcreteFunction; backward: ConcreteFunction } {
  const split = splitFor(cf, cf.captures.map(() => true));
  const cts = split.forward.graph.outputs.slice(0, split.numOutputs).map((v) => placeholderLike(v.type));
  const extra = split.backwardInputs.map((b) => ("saved" in b ? placeholderLike(split!.forward.graph.outputs[split!.numOutputs + b.saved]!.type) : b.tensor));
  return { forward: split.forward, backward: split.backward.concrete(...cts, ...extra) };
}

function placeholderLike(t: { dtype: Tensor["dtype"]; shape: readonly number[] }): Tensor {
  return zerosLikeTensor(new Tensor(null, t.shape.map((d) => Math.max(d, 1)), t.dtype));
}

/**
 * Runs `cf` on `args` and records it on the active tapes as one entry whose VJP calls the
 * staged backward function.
 */
export function recordStagedCall(cf: ConcreteFunction, args: Tensor[]): unknown {
  const split = splitFor(cf, cf.captures.map((c) => anyRecorderTracks(c.tensor)));
  const { forward, numOutputs, backward, backwardInputs, fullVjp } = split;
  // Reading captured variables through `read()` lets the tapes watch them.
  const captureValues = forward.captures.map((c) => (c.variable ? c.variable.read() : c.tensor));
  const inputs = [...args, ...captureValues];
  // An output that is one of the inputs (a passed-through value) gets its own handle, so the
  // tape never sees a tensor produced by the entry that consumes it.
  const inputSet = new Set(inputs);
  const flat = withoutRecorders(null, () => forward.callFlat(args)).map((t) =>
    inputSet.has(t) ? new Tensor(t.concrete(), t.shape, t.dtype, t.device) : t,
  );
  const outputs = flat.slice(0, numOutputs);
  const saved = flat.slice(numOutputs);
  // Saved values are outputs of the entry too, so outer tapes see how they depend on the inputs.
  const def: OpDef = {
    name: `call:${cf.name}`,
    family: "ad",
    inputs: inputs.map((_, i) => `x${i}`),
    infer: () => flat.map((o) => ({ dtype: o.dtype, shape: o.shape })),
    kernels: { cpu: () => flat.map((o) => o.dataSync()) },
    vjp: (_ctx, cts) => {
      const filled = cts.map((c, i) => c ?? zerosLikeTensor(flat[i]!));
      if (cts.slice(numOutputs).every((c) => c === null)) {
        const extra = backwardInputs.map((b) => ("saved" in b ? saved[b.saved]! : b.tensor));
        return backward(...filled.slice(0, numOutputs), ...extra);
      }
      return fullVjp(...inputs, ...filled);
    },
  };
  for (const r of recorders.slice()) r.recordOp(def, inputs, {}, flat);
  return cf.structureOutputs(outputs);
}

export type { SymbolRef };
