/**
 * Which variables a node may assign: an assignVariable node its own, a structural node those of
 * its regions and of the functions it calls. Tracing asks after it emits a cond, loop or call
 * (a value it knew for such a variable no longer holds), and regions before hoisting their
 * reads (region-variables.ts).
 */
import type { Variable } from "../core/variable.js";
import { assignVariableOp } from "../ops/structural.js";
import { calleeOf } from "../graph/declarations.js";
import type { FunctionLibrary, Graph, Node } from "../graph/ir.js";

/** Variables some node may assign; ALL when that is not known (a call of a function still being traced). */
export type AssignedVariables = ReadonlySet<Variable> | typeof ALL;
export const ALL = "all" as const;

const NONE: ReadonlySet<Variable> = new Set();

/** The trace building each function graph, while it does (a call of one may assign anything yet). */
const traces = new WeakMap<Graph, { readonly active: boolean }>();

export function registerTrace(g: Graph, trace: { readonly active: boolean }): void {
  traces.set(g, trace);
}

/** Function graphs being traced as copies of finished ones (gradient splits): they assign what those do. */
const copies = new WeakMap<Graph, Graph>();

/**
 * Declares that function graph `g`, while it is traced, is a copy of the finished graph
 * `original` (a replay of it: its gradient split), so calls of it assign what `original`
 * assigns rather than anything.
 */
export function tracedAsCopyOf(g: Graph, original: Graph): void {
  copies.set(g, original);
}

/** The graph whose assignments calls of `g` have: itself, or what it copies; null while that is not known. */
function assignmentsOf(g: Graph): Graph | null {
  if (traces.get(g)?.active !== true) return g;
  const original = copies.get(g);
  return original && traces.get(original)?.active !== true ? original : null;
}

/** The variables `node` may assign: itself (assignVariable), in its regions, or in the functions it calls. */
export function variablesAssignedBy(node: Node, library: FunctionLibrary): AssignedVariables {
  if (node.op === assignVariableOp.name) return new Set([node.attrs.variable as Variable]);
  if (node.regions.length === 0 && calleeOf(node) === null) return NONE;
  const found = new Set<Variable>();
  const seen = new Set<Graph>();
  const collect = (n: Node): boolean => {
    if (n.op === assignVariableOp.name) found.add(n.attrs.variable as Variable);
    for (const r of n.regions) for (const m of r.nodes) if (!collect(m)) return false;
    const name = calleeOf(n);
    if (name === null) return true;
    const callee = library.functions.get(name);
    const f = callee && assignmentsOf(callee);
    if (!f) return false;
    if (seen.has(f)) return true;
    seen.add(f);
    return f.nodes.every(collect);
  };
  return collect(node) ? found : ALL;
}
