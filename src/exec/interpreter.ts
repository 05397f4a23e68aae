/**
 * The reference executor: walks a graph node by node, running registry kernels on concrete
 * tensors, and the structural ops (cond, while, call, variables, hostCall) directly. The
 * compiled executor (exec/compile.ts) must agree with it.
 */
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { withEagerContext } from "../core/context.js";
import { atNode } from "../core/errors.js";
import { getOp, runOp } from "../ops/registry.js";
import type { FunctionLibrary, Graph, Node } from "../graph/ir.js";
import { structuralHandlers, type RunGraph } from "./structural.js";

export interface ExecEnv {
  library: FunctionLibrary;
}

/** Runs `graph` on concrete inputs (one per graph input) and returns its outputs. */
export function interpret(graph: Graph, inputs: Tensor[], env: ExecEnv): Tensor[] {
  if (inputs.length !== graph.inputs.length) {
    throw new Error(`graph ${graph.name} takes ${graph.inputs.length} inputs, got ${inputs.length}`);
  }
  return withEagerContext(() => {
    const values = new Map<number, Tensor>();
    graph.inputs.forEach((v, i) => values.set(v.id, inputs[i]!));
    for (const node of graph.nodes) {
      const args = node.inputs.map((v) => {
        const t = values.get(v.id);
        if (t === undefined) throw new Error(`graph ${graph.name}: value ${v.id} used by ${node.op} before it is defined`);
        return t;
      });
      const outs = runNode(node, args, env);
      node.outputs.forEach((v, i) => values.set(v.id, outs[i]!));
    }
    return graph.outputs.map((v) => values.get(v.id)!);
  });
}

/** One node: shape rule + kernel, or a structural op whose regions `runRegion` runs. */
export function runNode(node: Node, args: Tensor[], env: ExecEnv, runRegion: RunGraph = interpret): Tensor[] {
  const structural = structuralHandlers[node.op];
  if (structural) return structural(node, args, env, runRegion);
  const def = getOp(node.op);
  return atNode(node.loc, () => runOp(def, args, node.attrs));
}

export type { Variable };
