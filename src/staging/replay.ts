/**
 * Replays a graph through the op API: every node is issued again to the current handler
 * (eager kernels, another trace, and any recording tapes). This turns a graph back into a
 * JavaScript function, which is how staged gradients and graph inlining reuse everything
 * else: the tape differentiates a replay, a trace of a replay copies a graph.
 */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { atNode, ValueError } from "../core/errors.js";
import { applyOp, getOp } from "../ops/registry.js";
import { assignVariableOp, callOp, condOp, readVariableOp, whileOp } from "../ops/structural.js";
import { calleeOf } from "../graph/declarations.js";
import type { FunctionLibrary, Graph, Node } from "../graph/ir.js";
import { cond, guardedWhileLoop, whileLoop } from "./control-flow.js";
import { currentHandler } from "../core/context.js";
import { TraceContext } from "./trace-context.js";
import { emitCall } from "./call.js";

export function replay(graph: Graph, library: FunctionLibrary, inputs: Tensor[]): Tensor[] {
  if (inputs.length !== graph.inputs.length) {
    throw new ValueError(`graph ${graph.name} takes ${graph.inputs.length} inputs, got ${inputs.length}`, "replay");
  }
  const values = new Map<number, Tensor>();
  graph.inputs.forEach((v, i) => values.set(v.id, inputs[i]!));
  for (const node of graph.nodes) {
    const args = node.inputs.map((v) => values.get(v.id)!);
    // Issued as written at the node's location: an error raised now names the user's line of
    // that op, and nodes traced from it keep that location.
    const outs = atNode(node.loc, () => replayNode(node, args, library));
    node.outputs.forEach((v, i) => values.set(v.id, outs[i]!));
  }
  return graph.outputs.map((v) => values.get(v.id)!);
}

function replayNode(node: Node, args: Tensor[], library: FunctionLibrary): Tensor[] {
  let outs: Tensor[];
  switch (node.op) {
    case readVariableOp.name:
      outs = [(node.attrs.variable as Variable).read()];
      break;
    case assignVariableOp.name:
      (node.attrs.variable as Variable).assign(args[0]!);
      outs = [];
      break;
    case callOp.name: {
      const callee = library.get(calleeOf(node)!);
      // While tracing, a call stays a call (recursion stays finite, and its gradient is the
      // callee's VJP function); eagerly the callee's ops run, so tapes see them.
      outs = currentHandler() instanceof TraceContext ? emitCall({ graph: callee, library }, args, node.outputs.map((v) => v.type)) : replay(callee, library, args);
      break;
    }
    case condOp.name: {
      const [pred, ...operands] = args;
      const [thenG, elseG] = node.regions as [Graph, Graph];
      outs = cond(pred!, () => replay(thenG, library, operands), () => replay(elseG, library, operands));
      break;
    }
    case whileOp.name: {
      const n = node.attrs.numLoopVars as number;
      const inv = args.slice(n);
      const [condG, bodyG] = node.regions as [Graph, Graph];
      const max = node.attrs.maxIterations as number | undefined;
      const condFn = (...vars: Tensor[]) => replay(condG, library, [...vars, ...inv])[0]!;
      const bodyFn = (...vars: Tensor[]) => replay(bodyG, library, [...vars, ...inv]);
      // The node's declared loop types (unknown dims stay unknown, e.g. gradient stacks).
      const shapeInvariants = node.outputs.map((v) => v.type.shape.map((d) => (d < 0 ? null : d)));
      outs =
        max === undefined
          ? whileLoop(condFn, bodyFn, args.slice(0, n), { shapeInvariants })
          : (node.attrs.maxIterationsIsGuard === true ? guardedWhileLoop : whileLoop)(condFn, bodyFn, args.slice(0, n), { maxIterations: max, shapeInvariants });
      break;
    }
    default:
      outs = applyOp(getOp(node.op), args, node.attrs);
  }
  return outs;
}
