/**
 * Pruning: removes nodes whose outputs reach no graph output. Nodes with effects (stateful
 * ops, ops that write variables, structural nodes whose regions or callees have effects,
 * unknown ops) are kept with everything they need.
 *
 * Also, inside control flow (as the structural ops' declarations allow): a node whose
 * predicate selects a region (cond) loses the outputs nobody uses (from the node and all
 * regions); operands that no region reads are dropped (cond operands, while loop invariants);
 * regions are pruned against their (fixed) outputs. Library functions are pruned against
 * their outputs (their signatures stay: other graphs call them), and functions no longer
 * reachable from the root graph are removed from the library. Graph inputs are never
 * removed (they are the signature).
 */
import { FunctionLibrary, type Graph, type Node, type Value } from "../ir.js";
import { calleeOf, structuralOf } from "../declarations.js";
import { EffectAnalysis } from "./util.js";

/** Prunes `g`, its regions and its library. Mutates; returns g. */
export function prune(g: Graph, lib: FunctionLibrary): Graph {
  runPrune(g, lib);
  return g;
}

/** @internal Returns the number of nodes (and function-library entries) removed. */
export function runPrune(g: Graph, lib: FunctionLibrary | undefined): number {
  // Without a library, every call counts as having effects.
  const effects = new EffectAnalysis(lib ?? new FunctionLibrary());
  let removed = pruneGraph(g, effects);
  if (lib) {
    for (const f of lib.functions.values()) if (f !== g) removed += pruneGraph(f, effects);
    removed += pruneLibrary(g, lib);
  }
  return removed;
}

function isUsedIn(r: Graph, v: Value): boolean {
  if (r.outputs.includes(v)) return true;
  for (const n of r.nodes) if (n.inputs.includes(v)) return true;
  return false;
}

/** Removes region input `k` (and its name) and renumbers the rest. */
function removeRegionInput(r: Graph, k: number): void {
  r.inputs.splice(k, 1);
  r.inputNames.splice(k, 1);
  r.inputs.forEach((v, i) => (v.index = i));
}

function pruneGraph(g: Graph, effects: EffectAnalysis): number {
  const needed = new Set<Value>(g.outputs);
  const keep: Node[] = [];
  let removed = 0;
  for (let i = g.nodes.length - 1; i >= 0; i--) {
    const node = g.nodes[i]!;
    const live = effects.hasEffects(node) || node.outputs.some((v) => needed.has(v));
    if (!live) {
      removed += 1;
      continue;
    }
    const s = structuralOf(node);
    if (s?.selectsRegion) removed += trimSelected(node, needed);
    for (const r of node.regions) removed += pruneGraph(r, effects);
    if (s?.droppableFrom && node.regions.length > 0) removed += dropUnusedOperands(node, s.droppableFrom(node.attrs), s.regionOperandsFrom);
    for (const v of node.inputs) needed.add(v);
    keep.push(node);
  }
  keep.reverse();
  g.nodes = keep;
  return removed;
}

/** Drops the outputs nobody needs of a node that returns the outputs of the region it selects (from the node and every region). */
function trimSelected(node: Node, needed: Set<Value>): number {
  let removed = 0;
  for (let i = node.outputs.length - 1; i >= 0; i--) {
    if (needed.has(node.outputs[i]!)) continue;
    node.outputs.splice(i, 1);
    for (const r of node.regions) {
      r.outputs.splice(i, 1);
      r.outputNames.splice(i, 1);
    }
    removed++;
  }
  if (removed > 0) node.outputs.forEach((v, i) => (v.index = i));
  return removed;
}

/**
 * Drops operands (node input k >= first) whose region input (k - offset) no region reads.
 */
function dropUnusedOperands(node: Node, first: number, offset: number): number {
  let removed = 0;
  for (let k = node.inputs.length - 1; k >= first; k--) {
    const j = k - offset;
    if (node.regions.some((r) => j < r.inputs.length && isUsedIn(r, r.inputs[j]!))) continue;
    if (!node.regions.every((r) => j < r.inputs.length)) continue;
    node.inputs.splice(k, 1);
    for (const r of node.regions) removeRegionInput(r, j);
    removed++;
  }
  return removed;
}

/** Removes library functions that the root graph no longer reaches. */
function pruneLibrary(root: Graph, lib: FunctionLibrary): number {
  const reached = new Set<string>();
  const visit = (g: Graph) => {
    for (const n of g.nodes) {
      const callee = calleeOf(n);
      if (callee !== null && !reached.has(callee)) {
        reached.add(callee);
        const f = lib.functions.get(callee);
        if (f) visit(f);
      }
      for (const r of n.regions) visit(r);
    }
  };
  visit(root);
  let removed = 0;
  for (const [k, f] of [...lib.functions]) {
    if (f === root || reached.has(k)) continue;
    lib.functions.delete(k);
    removed++;
  }
  return removed;
}
