/**
 * The trainable variables that called functions read. A region (a cond's branches, a loop's
 * condition and body) that calls staged functions reads those functions' variables without
 * showing them among its operands; differentiated, their gradients must still leave the region.
 */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import { calleeOf } from "../graph/declarations.js";
import { readVariableOp } from "../ops/structural.js";
import type { TraceContext } from "../staging/trace-context.js";
import type { FunctionBundle } from "../staging/concrete-function.js";

/** Variables a function reads, directly, in regions, or in the functions it calls. */
export function variablesReadBy(bundle: FunctionBundle): Variable[] {
  const found = new Set<Variable>();
  const seen = new Set<Graph>();
  const walk = (g: Graph): void => {
    if (seen.has(g)) return;
    seen.add(g);
    for (const node of g.nodes) {
      if (node.op === readVariableOp.name) found.add(node.attrs.variable as Variable);
      const name = calleeOf(node);
      const callee = name === null ? undefined : bundle.library.functions.get(name);
      if (callee) walk(callee);
      node.regions.forEach(walk);
    }
  };
  walk(bundle.graph);
  return [...found].filter((v) => v.trainable);
}

/**
 * Variables that the calls in `g` (a branch or loop body, with its regions) read inside their
 * callees: a region's operands do not show them, but their gradients must leave the region.
 */
function variablesReadByCalls(g: Graph, library: FunctionLibrary): Variable[] {
  const found = new Set<Variable>();
  const walk = (r: Graph): void => {
    for (const node of r.nodes) {
      const name = calleeOf(node);
      const callee = name === null ? undefined : library.functions.get(name);
      if (callee) for (const v of variablesReadBy({ graph: callee, library })) found.add(v);
      node.regions.forEach(walk);
    }
  };
  walk(g);
  return [...found];
}

/**
 * The variables that calls in `regions` read become extra operands (inputs the region graphs
 * ignore), so that their gradients leave the region; returns the operands with them appended.
 */
export function withCalleeVariables(ctx: TraceContext, regions: Graph[], operands: Tensor[]): Tensor[] {
  const all = operands.slice();
  const vars = new Set(regions.flatMap((g) => variablesReadByCalls(g, ctx.library)));
  for (const v of vars) {
    const t = v.read();
    if (all.includes(t)) continue;
    all.push(t);
    for (const g of regions) g.addInput({ dtype: t.dtype, shape: t.shape }, `variable_${v.name}`);
  }
  return all;
}
