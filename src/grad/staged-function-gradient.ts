/**
 * The gradient of a staged function called from eager code. A staged call made while tapes
 * record is one tape entry. Its forward is a staged function that also returns what the backward needs, and
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
import { functionNameOf, TraceContext, type SymbolRef } from "../staging/trace-context.js";
import { ConcreteFunction, OutputLeaf } from "../staging/concrete-function.js";
import { replay } from "../staging/replay.js";
import { stage, type StagedFunction } from "../staging/stage.js";
import { differentiating } from "./backward-trace.js";

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
  /** For each backward capture: the forward's output or saved value it is, or the outside tensor. */
  backwardInputs: BackwardInput[];
  /** For each forward input: whether any float output depends on it (the backward's zeros elsewhere are no gradient). */
  connected: boolean[];
}

type BackwardInput = { output: number } | { saved: number } | { tensor: Tensor };

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
  const fwd = new TraceContext(`${cf.name}_forward`, library, null, false, functionNameOf(cf.graph), true);
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
  const bwd = new TraceContext(`${cf.name}_backward`, library, fwd, false, fwd.functionName, true);
  const cts = outs.map((o, i) => bwd.placeholder({ dtype: o.dtype, shape: o.shape }, `cotangent_${i}`));
  let connected: boolean[] = [];
  try {
    const grads = withoutRecorders(null, () =>
      withHandler(bwd, () => {
        const diffOuts = outs.filter((o) => isFloat(o.dtype));
        const diffCts = cts.filter((_, i) => isFloat(outs[i]!.dtype));
        // (null: no output depends on that source; the graph returns zeros there, and the tape
        // entry's VJP gives the tape null, so an eager tape sees the source unconnected as it
        // would have without staging)
        const g = diffOuts.length > 0 ? (tape.gradient(diffOuts, sources, { outputGradient: diffCts, unconnected: "none" }) as (Tensor | null)[]) : sources.map(() => null);
        connected = g.map((x) => x !== null);
        return g.map((x, i) => bwd.valueOf(x ?? zerosLikeTensor(sources[i]!)));
      }),
    );
    bwd.graph.setOutputs(grads, sources.map((_, i) => `grad_${i}`));
  } finally {
    bwd.active = false;
  }
  // A value the backward reads that the forward already returns (an op whose VJP reads its
  // own output, such as exp, as the last op) is read from that output, not returned twice.
  const saved: Tensor[] = [];
  const outputOf = new Map(outs.map((o, i) => [fwd.valueOf(o), i] as const).reverse());
  const backwardInputs = bwd.captures.map((c): BackwardInput => {
    const ref = c.tensor.symbol as SymbolRef | null;
    if (ref && ref.ctx === fwd) {
      const output = outputOf.get(ref.value);
      if (output !== undefined) return { output };
      saved.push(c.tensor);
      return { saved: saved.length - 1 };
    }
    return { tensor: c.tensor };
  });
  fwd.graph.setOutputs([...outs, ...saved].map((t) => fwd.valueOf(t)));
  fwd.active = false;
  const forward = new ConcreteFunction(fwd.graph, library, fwd.captures, outs.map((_, i) => new OutputLeaf(i)), args.length);
  // (the forward and backward run on the engine the function runs on)
  forward.engine = cf.engine;
  const engine = cf.engine !== null ? { engine: cf.engine } : {};
  const bwdGraph = bwd.graph;
  const backward = stage((...xs: Tensor[]) => replay(bwdGraph, library, xs), { name: `${cf.name}_backward`, autograph: false, ...engine });
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
      return t.gradient(diff.map(([o]) => o), inputs, { outputGradient: diff.map(([, c]) => c), unconnected: "zero" }) as Tensor[];
    },
    { name: `${cf.name}_vjp`, autograph: false, ...engine },
  );
  return { forward, numOutputs: outs.length, fullVjp, backward, backwardInputs, connected };
}

/** The forward and backward graphs the tape uses for calls of `cf` (for inspection and tests). */
export function gradientGraphs(cf: ConcreteFunction): { forward: ConcreteFunction; backward: ConcreteFunction } {
  const split = splitFor(cf, cf.captures.map(() => true));
  const cts = split.forward.graph.outputs.slice(0, split.numOutputs).map((v) => placeholderLike(v.type));
  const outputs = split.forward.graph.outputs;
  const extra = split.backwardInputs.map((b) =>
    "output" in b ? placeholderLike(outputs[b.output]!.type) : "saved" in b ? placeholderLike(outputs[split.numOutputs + b.saved]!.type) : b.tensor,
  );
  return { forward: split.forward, backward: split.backward.concrete(...cts, ...extra) };
}

function placeholderLike(t: { dtype: Tensor["dtype"]; shape: readonly number[] }): Tensor {
  return zerosLikeTensor(new Tensor(null, t.shape.map((d) => Math.max(d, 1)), t.dtype));
}

/**
 * The call rule for a staged function called from eager code: runs `cf` on `args` and records
 * it on the active tapes as one entry whose VJP calls the staged backward function. Returns the
 * flat outputs.
 */
export function stagedFunctionGradient(cf: ConcreteFunction, args: Tensor[]): Tensor[] {
  const name = functionNameOf(cf.graph);
  const split = differentiating(name, () => splitFor(cf, cf.captures.map((c) => anyRecorderTracks(c.tensor))));
  const { forward, numOutputs, backward, backwardInputs, fullVjp, connected } = split;
  // Reading captured variables through `read()` lets the tapes watch them.
  const captureValues = forward.captures.map((c) => (c.variable ? c.variable.read() : c.tensor));
  const inputs = [...args, ...captureValues];
  // An output that is one of the inputs (a passed-through value) gets its own handle, so the
  // tape never sees a tensor produced by the entry that consumes it.
  const inputSet = new Set(inputs);
  const flat = differentiating(name, () => withoutRecorders(null, () => forward.callFlat(args))).map((t) =>
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
    vjp: (_ctx, cts) =>
      differentiating(name, () => {
        const filled = cts.map((c, i) => c ?? zerosLikeTensor(flat[i]!));
        if (cts.slice(numOutputs).every((c) => c === null)) {
          const extra = backwardInputs.map((b) => ("output" in b ? outputs[b.output]! : "saved" in b ? saved[b.saved]! : b.tensor));
          return backward(...filled.slice(0, numOutputs), ...extra).map((g, i) => (connected[i] ? g : null));
        }
        return fullVjp(...inputs, ...filled);
      }),
  };
  for (const r of recorders.slice()) r.recordOp(def, inputs, {}, flat);
  return outputs;
}
