/**
 * How many nodes of each op a program holds, keyed by the op and the regions it sits in
 * ("while.1/add": an add in the body of a while), library functions under "fn:". Two programs
 * with equal counts execute the same ops (AutoGraph's conversion vs hand-written graph code).
 */
import type { FunctionLibrary, Graph } from "./ir.js";

function countInto(g: Graph, out: Map<string, number>, prefix: string): void {
  for (const n of g.nodes) {
    out.set(prefix + n.op, (out.get(prefix + n.op) ?? 0) + 1);
    n.regions.forEach((r, i) => countInto(r, out, `${prefix}${n.op}.${i}/`));
  }
}

/** The op counts of `graph` and of the library's other functions (in the order first met: compare them as sets). */
export function programOpCounts(graph: Graph, library: FunctionLibrary): Map<string, number> {
  const out = new Map<string, number>();
  countInto(graph, out, "");
  for (const f of library.functions.values()) if (f !== graph) countInto(f, out, "fn:");
  return out;
}
