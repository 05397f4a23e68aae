/**
 * What every structural gradient rule (cond, while, call) shares: the tape entry it records for
 * the node it emitted, and the recomputing VJP of a region, for the cases a forward/backward
 * split cannot serve (higher-order gradients through a record, loops whose kept values change
 * shape, conds and calls inside a loop iteration).
 */
import type { Tensor } from "../core/tensor.js";
import { recorders } from "../core/context.js";
import { atNode, executing, GradientError, userLocation } from "../core/errors.js";
import type { OpDef } from "../ops/registry.js";
import { GradientTape } from "../ad/tape.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import { replay } from "../staging/replay.js";
import { differentiating, tapeGradient } from "./backward-trace.js";

/**
 * Records one entry on every active tape. Its VJP runs at the location where the structural
 * node was written (its gradient's nodes and errors name that line) and says which staged
 * function (`functionName`) is differentiated.
 */
export function recordEntry(
  name: string,
  functionName: string,
  inputs: Tensor[],
  outputs: Tensor[],
  vjp: (cts: (Tensor | null)[]) => (Tensor | null)[],
): void {
  if (outputs.length === 0 || recorders.length === 0) return;
  const loc = executing.at ?? userLocation();
  const def: OpDef = {
    name,
    family: "ad",
    inputs: inputs.map((_, i) => `x${i}`),
    infer: () => outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
    kernels: {
      cpu: () => {
        throw new GradientError(`a structural tape entry has no kernel`, name);
      },
    },
    vjp: (_ctx, cts) => atNode(loc, () => differentiating(functionName, () => vjp(cts))),
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
  return tapeGradient(tape, outs, cts, all, wanted);
}
