/**
 * Binding known inputs: graph inputs whose value is known and will never change (captured
 * eager tensors: their storage is immutable) are replaced, inside the graph, by constant
 * nodes, so that simplification and folding can see them (`x.mul(2)` captures the scalar 2
 * as an input). The inputs themselves stay (the signature does not change); their uses move
 * to the new nodes. Variables' values are not constants: never bind a variable input.
 * Only tensors up to `maxElements` are bound (default 64).
 */
import type { Tensor } from "../../core/tensor.js";
import type { Graph } from "../ir.js";
import { constantAttrsOf, constantOp } from "../../ops/constant.js";
import { makeNode, replaceAllUses, sameType } from "./util.js";

/**
 * Binds graph input k to `values.get(k)` for every entry (skipping symbolic tensors, tensors
 * whose dtype or shape differs from the input's type where known, and tensors over the size
 * limit). Returns the number of inputs bound.
 */
export function bindConstantInputs(g: Graph, values: ReadonlyMap<number, Tensor>, maxElements = 64): number {
  let bound = 0;
  const fresh = [];
  for (const [k, t] of values) {
    const input = g.inputs[k];
    if (!input || t.isSymbolic || t.size > maxElements) continue;
    const type = { dtype: t.dtype, shape: t.shape.slice() };
    if (!sameType(type, input.type)) continue;
    const used = g.outputs.includes(input) || g.nodes.some((n) => n.inputs.includes(input));
    if (!used) continue;
    const attrs = constantAttrsOf(t);
    const node = makeNode(constantOp.name, [], { ...attrs }, [type]);
    replaceAllUses(g, input, node.outputs[0]!);
    fresh.push(node);
    bound++;
  }
  g.nodes.unshift(...fresh);
  return bound;
}
