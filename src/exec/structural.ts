/** Run-time semantics of the structural ops (ops/structural.ts), shared by every executor. */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { Graph, Node } from "../graph/ir.js";
import { assignVariableOp, callOp, condOp, readVariableOp, whileOp, type WhileAttrs } from "../ops/structural.js";
import type { ExecEnv } from "./interpreter.js";
import { enterCall, exitCall } from "./call-depth.js";

export type RunGraph = (g: Graph, inputs: Tensor[], env: ExecEnv) => Tensor[];
export type StructuralHandler = (node: Node, args: Tensor[], env: ExecEnv, run: RunGraph) => Tensor[];

export const structuralHandlers: Record<string, StructuralHandler> = {
  [readVariableOp.name](node) {
    return [(node.attrs.variable as Variable).storedValue];
  },
  [assignVariableOp.name](node, args) {
    (node.attrs.variable as Variable).setStoredValue(args[0]!);
    return [];
  },
  [callOp.name](node, args, env, run) {
    const callee = node.attrs.callee as string;
    enterCall(callee);
    try {
      return run(env.library.get(callee), args, env);
    } finally {
      exitCall();
    }
  },
  [condOp.name](node, args, env, run) {
    const [pred, ...operands] = args;
    const taken = pred!.dataSync()[0] !== 0;
    return run(node.regions[taken ? 0 : 1]!, operands, env);
  },
  [whileOp.name](node, args, env, run) {
    const { numLoopVars, maxIterations = Infinity } = node.attrs as unknown as WhileAttrs;
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
