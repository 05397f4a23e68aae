/**
 * Which graph inputs a graph needs as known values at trace time (static inputs): the model's
 * inputs that become trace keys (load.ts), and a Loop body's iteration number, which makes the
 * Loop unroll while tracing (ops/control-flow.ts).
 */
import type { GraphProto } from "../protobuf.js";
import { handlerFor } from "./op-table.js";

/**
 * Graph inputs whose values the model needs at trace time: those that reach an input a handler
 * reads as a known value (constInputs), walking back through the nodes that compute it (but not
 * through Shape and Size, which read only shapes).
 */
export function staticInputNames(graph: GraphProto, inputNames: Set<string>): Set<string> {
  const producers = new Map<string, { input: string[]; op: string }>();
  const needed: string[] = [];
  /** Every name the nodes of a subgraph (and its own subgraphs) read: its outer-scope uses among them. */
  const reads = (g: GraphProto): string[] => g.node.flatMap((n) => [...n.input, ...n.attribute.flatMap((a) => [...(a.g ? reads(a.g) : []), ...a.graphs.flatMap(reads)])]);
  const visit = (g: GraphProto): void => {
    for (const n of g.node) {
      // A node with subgraphs (If, Loop, Scan) computes its outputs from what its subgraphs read too.
      const subgraphReads = n.attribute.flatMap((a) => [...(a.g ? reads(a.g) : []), ...a.graphs.flatMap(reads)]);
      for (const o of n.output) producers.set(o, { input: [...n.input, ...subgraphReads], op: n.op_type });
      const h = handlerFor(n.domain ?? "", n.op_type);
      for (const i of h?.constInputsOf?.(n) ?? h?.constInputs ?? []) if (n.input[i]) needed.push(n.input[i]!);
      for (const a of n.attribute) {
        if (a.g) visit(a.g);
        for (const sg of a.graphs) visit(sg);
      }
    }
  };
  visit(graph);
  const out = new Set<string>();
  const seen = new Set<string>();
  while (needed.length > 0) {
    const name = needed.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    if (inputNames.has(name)) out.add(name);
    const p = producers.get(name);
    if (p && p.op !== "Shape" && p.op !== "Size") for (const i of p.input) if (i) needed.push(i);
  }
  return out;
}

