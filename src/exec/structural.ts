/** Run-time semantics of the structural ops, shared by every executor. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { Graph, Node } from "../graph/ir.js";
import type { ExecEnv } from "./interpreter.js";

export type RunGraph = (g: Graph, inputs: Tensor[], env: ExecEnv) => Tensor[];
export type StructuralHandler = (node: Node, args: Tensor[], env: ExecEnv, run: RunGraph) => Tensor[];

export const structuralHandlers: Record<string, StructuralHandler> = {
  readVariable(node) {
    return [(node.attrs.variable as Variable).storedValue];
  },
  assignVariable(node, args) {
    (node.attrs.variable as Variable).setStoredValue(args[0]!);
    return [];
  },
  call(node, args, env, run) {
    return run(env.library.get(node.attrs.callee as string), args, env);
  },
  cond(node, args, env, run) {
    const [pred, ...operands] = args;
    const taken = pred!.dataSync()[0] !== 0;
    return run(node.regions[taken ? 0 : 1]!, operands, env);
  },
  while(node, args, env, run) {
    const numLoopVars = node.attrs.numLoopVars as number;
    const maxIterations = (node.attrs.maxIterations as number | undefined) ?? Infinity;
    let loopVars = args.slice(0, numLoopVars);
    const invariants = args.slice(numLoopVars);
    const [condG, bodyG] = node.regions as [Graph, Graph];
    for (let i = 0; i < maxIterations; i++) {
      const [p] = run(condG, [...loopVars, ...invariants], env);
      if (p!.dataSync()[0] === 0) break;
      loopVars = run(bodyG, [...loopVars, ...invariants], env);
    }
    return loopVars;
  },
};
