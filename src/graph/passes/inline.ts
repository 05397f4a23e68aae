/**
 * Inlining: a `call` node whose callee is small (at most `threshold` nodes, regions
 * included) and not recursive (it cannot reach itself through calls) is replaced by a copy
 * of the callee's body, its inputs bound to the call's arguments. Calls inside inlined bodies
 * are considered in turn (a non-recursive call chain flattens), within a growth budget.
 * Applies to `g`, its regions and every library function. Where arguments are more precise
 * than the callee's parameters (known dims for unknown ones), the copied nodes' types are
 * refined by their shape rules.
 */
import type { FunctionLibrary, Graph } from "../ir.js";
import { calleeOf } from "../declarations.js";
import { allGraphs, countNodes, refineTypes, replaceAllUses, spliceGraph } from "./util.js";

export interface InlineOptions {
  /** Largest callee (nodes, regions included) that is inlined. Default 32. */
  threshold?: number;
  /** Most nodes one graph may gain from inlining in one run. Default 10000. */
  maxGrowth?: number;
}

export const DEFAULT_INLINE_THRESHOLD = 32;

/** Inlines small non-recursive calls in `g`, its regions and library functions. Mutates; returns g. */
export function inline(g: Graph, lib: FunctionLibrary, options: InlineOptions = {}): Graph {
  runInline(g, lib, options);
  return g;
}

/** Names of the library functions that can reach themselves through calls. */
export function recursiveFunctions(lib: FunctionLibrary): Set<string> {
  const callees = new Map<string, Set<string>>();
  const collect = (g: Graph, into: Set<string>) => {
    for (const n of g.nodes) {
      const callee = calleeOf(n);
      if (callee !== null) into.add(callee);
      for (const r of n.regions) collect(r, into);
    }
  };
  for (const [k, f] of lib.functions) {
    const s = new Set<string>();
    collect(f, s);
    callees.set(k, s);
  }
  const recursive = new Set<string>();
  for (const k of lib.functions.keys()) {
    const seen = new Set<string>();
    const stack = [...(callees.get(k) ?? [])];
    while (stack.length > 0) {
      const c = stack.pop()!;
      if (c === k) {
        recursive.add(k);
        break;
      }
      if (seen.has(c)) continue;
      seen.add(c);
      for (const d of callees.get(c) ?? []) stack.push(d);
    }
  }
  return recursive;
}

/** @internal Returns the number of calls inlined. */
export function runInline(g: Graph, lib: FunctionLibrary | undefined, options: InlineOptions = {}): number {
  if (!lib) return 0;
  const threshold = options.threshold ?? DEFAULT_INLINE_THRESHOLD;
  const maxGrowth = options.maxGrowth ?? 10_000;
  const recursive = recursiveFunctions(lib);
  const sizes = new Map<string, number>();
  const sizeOf = (k: string, f: Graph) => {
    let s = sizes.get(k);
    if (s === undefined) sizes.set(k, (s = countNodes(f)));
    return s;
  };
  let inlined = 0;
  for (const graph of allGraphs(g, lib)) {
    let growth = 0;
    let changed = false;
    for (let i = 0; i < graph.nodes.length; i++) {
      const node = graph.nodes[i]!;
      const callee = calleeOf(node);
      if (callee === null) continue;
      const f = lib.functions.get(callee);
      if (!f || f === graph || recursive.has(callee)) continue;
      const size = sizeOf(callee, f);
      if (size > threshold || growth + size > maxGrowth) continue;
      if (f.inputs.length !== node.inputs.length || f.outputs.length !== node.outputs.length) continue;
      const results = spliceGraph(graph, i + 1, f, node.inputs);
      graph.nodes.splice(i, 1);
      node.outputs.forEach((v, k) => replaceAllUses(graph, v, results[k]!));
      growth += size;
      inlined++;
      changed = true;
      i--; // the inlined body may itself contain calls
    }
    if (changed) refineTypes(graph);
  }
  return inlined;
}
