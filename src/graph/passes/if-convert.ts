/**
 * If-conversion: a `cond` whose two branches are a few cheap ops that cannot fail is replaced
 * by both branches, inlined, and a select of their results:
 *
 *   cond(p, then: b, else: p)          -> logicalAnd(p, b)     (AutoGraph's `p && b`)
 *   cond(p, then: p, else: b)          -> logicalOr(p, b)      (AutoGraph's `p || b`)
 *   cond(p, then: t, else: e)          -> where(p, t, e)       (other outputs)
 *
 * A `cond` costs the executor a region dispatch each time it runs; in a loop's condition that
 * is every iteration (L-BFGS's `k < N && norm(g) > tol` and its line search's test, the beam
 * search's `t < L && !all(done)`), where graph code written by hand evaluates both operands
 * with logicalAnd. Evaluating the branch not taken is safe only where it computes nothing
 * but its outputs and cannot fail, and cheap only where it is small, so a branch qualifies
 * when: it has at most MAX_NODES nodes, none with regions or effects; every node is an
 * elementwise op (integer ones only the kinds that cannot trap: no integer division or
 * remainder), a reduction, a fill, a cast (not to a 64-bit integer) or a reshaping view; every value it makes has a
 * fully known type of at most MAX_ELEMENTS elements (none empty). Each result the two branches
 * give differently is selected, so it too must be known and small, also where a branch only
 * passes an operand through (AutoGraph's `if (p) y = a; else y = b;`: a select of two large
 * operands would read and write them every run, where the cond only dispatched). The results
 * are exactly the taken branch's (a select picks values, it computes none).
 */
import { isInteger } from "../../core/dtype.js";
import type { FunctionLibrary, Graph, Node, Value, ValueType } from "../ir.js";
import { condOp } from "../../ops/structural.js";
import { logicalAndOp, logicalOrOp } from "../../ops/compare.js";
import { whereOp } from "../../ops/where.js";
import { castOp } from "../../ops/cast.js";
import { fillOp } from "../../ops/fill.js";
import { addOp, maximumOp, minimumOp, mulOp, subOp } from "../../ops/binary.js";
import { absOp, negOp, reluOp, signOp, squareOp } from "../../ops/unary.js";
import { structuralOf } from "../declarations.js";
import { allGraphs, inlineCopy, isFullyKnown, isPureRegistryNode, makeNode, replaceUses, sameType, sizeOfType } from "./util.js";

/** Most nodes a branch may have. */
export const IF_CONVERT_MAX_NODES = 12;
/** Most elements of any value a branch computes. */
export const IF_CONVERT_MAX_ELEMENTS = 1024;

/** Integer elementwise ops that cannot trap (no division or remainder), besides comparisons. */
const SAFE_INTEGER_OPS = new Set([addOp, subOp, mulOp, maximumOp, minimumOp, negOp, absOp, signOp, squareOp, reluOp].map((d) => d.name));

/** Whether a value of type `t` is known to be small enough to compute or select needlessly (and not empty). */
function smallKnown(t: ValueType): boolean {
  if (!isFullyKnown(t)) return false;
  const size = sizeOfType(t);
  return size > 0 && size <= IF_CONVERT_MAX_ELEMENTS;
}

/** Whether running `n` when its result is not needed is safe (no effect, no failure) and cheap. */
function speculatable(n: Node): boolean {
  const def = isPureRegistryNode(n);
  if (def === null || def.readsVariables || def.writesVariables) return false;
  if (![...n.inputs, ...n.outputs].every((v) => smallKnown(v.type))) return false;
  if (def.elementwise !== undefined) {
    const integral = [...n.inputs, ...n.outputs].some((v) => isInteger(v.type.dtype));
    return !integral || def.family === "compare" || SAFE_INTEGER_OPS.has(def.name);
  }
  // (a cast to a 64-bit integer can fail on NaN or infinity)
  const cast64 = def.name === castOp.name && (n.attrs.dtype === "int64" || n.attrs.dtype === "uint64");
  return def.family === "reduce" || def.name === fillOp.name || (def.name === castOp.name && !cast64) || def.view === "reshape";
}

function branchQualifies(r: Graph): boolean {
  return r.nodes.length <= IF_CONVERT_MAX_NODES && r.nodes.every(speculatable);
}

/** If-converts the small safe conds of `g`, its regions and library functions. Mutates; returns g. */
export function ifConvert(g: Graph, lib?: FunctionLibrary): Graph {
  runIfConvert(g, lib);
  return g;
}

/** @internal Returns the number of conds replaced. */
export function runIfConvert(g: Graph, lib: FunctionLibrary | undefined): number {
  let changes = 0;
  for (const graph of allGraphs(g, lib)) changes += convertGraph(graph);
  return changes;
}

function convertGraph(g: Graph): number {
  let changes = 0;
  const replace = new Map<Value, Value>();
  for (let i = 0; i < g.nodes.length; i++) {
    const node = g.nodes[i]!;
    if (node.op !== condOp.name) continue;
    const [thenR, elseR] = node.regions as [Graph, Graph];
    if (!branchQualifies(thenR) || !branchQualifies(elseR)) continue;
    const typesMatch = node.outputs.every((v, k) => sameType(thenR.outputs[k]!.type, v.type) && sameType(elseR.outputs[k]!.type, v.type));
    if (!typesMatch) continue;
    const p = node.inputs[0]!, operands = node.inputs.slice(structuralOf(node)!.regionOperandsFrom);
    const t = inlineCopy(thenR, operands), e = inlineCopy(elseR, operands);
    // Each result the branches give differently is selected, so it must be small too (a branch's
    // own values were checked above; an operand passed through was not).
    if (node.outputs.some((v, k) => t.results[k] !== e.results[k] && !smallKnown(v.type))) continue;
    const selects: Node[] = [];
    node.outputs.forEach((out, k) => {
      const a = t.results[k]!, b = e.results[k]!;
      if (a === b) {
        replace.set(out, a);
        return;
      }
      const bool = out.type.dtype === "bool" && out.type.shape.length === 0;
      const sel = bool && b === p ? makeNode(logicalAndOp.name, [p, a], {}, [out.type], [], node.loc)
        : bool && a === p ? makeNode(logicalOrOp.name, [p, b], {}, [out.type], [], node.loc)
        : makeNode(whereOp.name, [p, a, b], {}, [out.type], [], node.loc);
      selects.push(sel);
      replace.set(out, sel.outputs[0]!);
    });
    const inserted = [...t.nodes, ...e.nodes, ...selects];
    g.nodes.splice(i, 1, ...inserted);
    i += inserted.length - 1; // past the inserted nodes (the branches hold no conds to convert here)
    changes++;
  }
  replaceUses(g, replace);
  return changes;
}
