/**
 * What a graph must be to run on a worker, checked on both sides: the client checks before it
 * sends (its nodes still carry the user's source lines), the worker again on what it parsed (it
 * trusts no client). A node whose op needs JavaScript when it runs (the "host" family: hostCall,
 * print, assert; found through the op declarations, never by name) cannot run there: the
 * function it would call exists only in the client's process. Also collected here: the variables
 * a graph reads or writes, and the static shapes of every value, for the size limits.
 */
import type { SourceLocation } from "../core/errors.js";
import { Variable } from "../core/variable.js";
import type { FunctionLibrary, Graph, Node, Value } from "../graph/ir.js";
import { lookupOp } from "../ops/registry.js";

/** Every node of `g`, its regions' nodes, and those of every function in `lib`. */
export function* allNodes(g: Graph, lib: FunctionLibrary): Generator<Node> {
  const seen = new Set<Graph>();
  function* walk(graph: Graph): Generator<Node> {
    if (seen.has(graph)) return;
    seen.add(graph);
    for (const n of graph.nodes) {
      yield n;
      for (const r of n.regions) yield* walk(r);
    }
  }
  yield* walk(g);
  for (const f of lib.functions.values()) yield* walk(f);
}

/** The first node whose op runs JavaScript of the process that made it, with where it was written. */
export function firstHostNode(g: Graph, lib: FunctionLibrary): { op: string; loc: SourceLocation | null } | null {
  for (const n of allNodes(g, lib)) {
    if (lookupOp(n.op)?.family === "host") return { op: n.op, loc: n.loc };
  }
  return null;
}

/** The variables the graph's nodes name in their attributes (readVariable, assignVariable and the like). */
export function graphVariables(g: Graph, lib: FunctionLibrary): Variable[] {
  const found = new Map<number, Variable>();
  for (const n of allNodes(g, lib)) {
    for (const v of Object.values(n.attrs ?? {})) if (v instanceof Variable) found.set(v.variableId, v);
  }
  return [...found.values()];
}

/** The first value of a static shape with more than `maxElements` elements (every node's outputs). */
export function firstOversizeValue(g: Graph, lib: FunctionLibrary, maxElements: number): { op: string; value: Value; elements: number } | null {
  for (const n of allNodes(g, lib)) {
    for (const v of n.outputs) {
      if (v.type.shape.some((d) => d < 0)) continue;
      const elements = v.type.shape.reduce((a, b) => a * b, 1);
      if (elements > maxElements) return { op: n.op, value: v, elements };
    }
  }
  return null;
}
