/**
 * Variables read inside regions. A region (a cond's branch, a loop's condition or body) is traced
 * like any graph: a variable read there is a readVariable node of the region. Once a construct's
 * regions are traced, each such read of the value the variable holds where the construct stands
 * is hoisted out of them: it becomes the enclosing graph's read of the variable, which the
 * region captures, so it is an operand of the structural node.
 *
 * Why: tapes recording around the construct, and its gradient rule, see the node's operands. A
 * read inside a region is a value of the region, which no tape outside it ever meets: the
 * variable's gradient through the region was silently zero for a tape used inside a staged
 * function. As an operand, a variable's value is differentiated like any captured tensor, and
 * the enclosing tapes watch it as the variable's read (they are told here). Nested regions
 * hoist level by level: the inner construct's hoisted read is a read in the outer region.
 *
 * A read is hoisted when it reads the value at the construct's entry: no node before it in its
 * region may assign the variable and, for a loop, nothing in the loop (condition, body, the
 * functions they call) assigns it, so every iteration reads the same value. Other reads stay in
 * the region and read the stored value when the graph runs (right values; gradients do not flow
 * through those assignments).
 */
import type { Tensor } from "../core/tensor.js";
import { variableReadObservers, type Variable } from "../core/variable.js";
import { readVariableOp } from "../ops/structural.js";
import type { Node } from "../graph/ir.js";
import { replaceAllUses } from "../graph/passes/util.js";
import type { TraceContext } from "./trace-context.js";
import { ALL, variablesAssignedBy, type AssignedVariables } from "./assigned-variables.js";

function union(into: Set<Variable>, more: AssignedVariables): boolean {
  if (more === ALL) return false;
  for (const v of more) into.add(v);
  return true;
}

/**
 * Hoists the reads of variables in `regions` (the traced regions of one construct about to be
 * emitted in `parent`) that read the value at the construct's entry; `loop`: the regions are
 * a loop's condition and body. Call before the regions' captures are unified into operands.
 */
export function hoistVariableReads(parent: TraceContext, regions: TraceContext[], loop: boolean): void {
  const reads = regions.map((r) => r.graph.nodes.filter((n) => n.op === readVariableOp.name));
  if (reads.every((list) => list.length === 0)) return;
  // A loop: a variable it assigns anywhere has another value in the next iteration.
  const inLoop = new Set<Variable>();
  if (loop && !regions.every((r) => r.graph.nodes.every((n) => union(inLoop, variablesAssignedBy(n, r.library))))) return;
  const outer = new Map<Variable, Tensor>();
  const outerRead = (v: Variable): Tensor => {
    let t = outer.get(v);
    if (t === undefined) {
      outer.set(v, (t = parent.readVariable(v)));
      // This is the variable's read as the tapes around the construct see it.
      for (let i = 0; i < variableReadObservers.length; i++) variableReadObservers[i]!.onVariableRead(v, t);
    }
    return t;
  };
  regions.forEach((r, k) => {
    if (reads[k]!.length === 0) return;
    const g = r.graph;
    const before = new Set<Variable>();
    const hoisted = new Set<Node>();
    for (const node of g.nodes) {
      if (node.op === readVariableOp.name) {
        const v = node.attrs.variable as Variable;
        if (!before.has(v) && !inLoop.has(v)) {
          replaceAllUses(g, node.outputs[0]!, r.valueOf(outerRead(v)));
          hoisted.add(node);
        }
      } else if (!union(before, variablesAssignedBy(node, r.library))) break;
    }
    if (hoisted.size > 0) g.nodes = g.nodes.filter((n) => !hoisted.has(n));
  });
}
