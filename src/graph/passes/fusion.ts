/**
 * Elementwise fusion: chains and trees of elementwise registry nodes (ops with an
 * `elementwise` expression: unary, binary, comparisons, where, clip) whose outputs all have
 * the same, fully known shape become one `fusedElementwise` node (ops/fused.ts), computed by a
 * single loop with no intermediate tensors. Inputs of the group may broadcast.
 *
 * The fused node's attributes are plain JSON (ops/fused.ts):
 *   { numInputs, steps: [{ op, args, attrs }], outputs }
 * where arg k < numInputs is fused input k and k >= numInputs is step k - numInputs, and
 * `outputs` lists the steps whose values leave the group (used by other nodes, or graph
 * outputs), in the node's output order.
 *
 * The node takes the place of the group's last member; a member joins a group only if no
 * node outside the group uses the group's values before that place, so moving the (pure)
 * computation there keeps every use after its definition. Stateful nodes are never fused or
 * moved. Groups stop growing at `maxSteps` steps.
 *
 * Fused nodes are NOT differentiable (no VJP): fusion runs last, after any AD, on a graph
 * that is about to be executed. Optimize a copy (optimizeCopy) when the original graph is
 * also replayed by tapes or exported.
 */
import { fusedElementwiseOp, type FusedAttrs, type FusedStep } from "../../ops/fused.js";
import type { FunctionLibrary, Graph, Node, Value } from "../ir.js";
import { shapesEqual } from "../../core/shape.js";
import { allGraphs, isFullyKnown, makeNode, registryDef, replaceUses } from "./util.js";

export type { FusedAttrs, FusedStep };

export interface FusionOptions {
  /** Most steps in one fused node. Default 64. */
  maxSteps?: number;
}

/** Fuses elementwise groups in `g`, its regions and library functions. Mutates; returns g. */
export function fuse(g: Graph, lib: FunctionLibrary, options: FusionOptions = {}): Graph {
  runFusion(g, lib, options);
  return g;
}

/** @internal Returns the number of fused nodes created. */
export function runFusion(g: Graph, lib: FunctionLibrary | undefined, options: FusionOptions = {}): number {
  let created = 0;
  for (const graph of allGraphs(g, lib)) created += fuseGraph(graph, options.maxSteps ?? 64);
  return created;
}

/** Whether `node` may be a step of a fused node. */
function fusible(node: Node): boolean {
  if (node.outputs.length !== 1 || node.regions.length > 0) return false;
  const def = registryDef(node.op);
  if (!def || !def.elementwise || def.stateful) return false;
  if (node.inputs.length !== def.inputs.length) return false;
  for (const v of Object.values(node.attrs ?? {})) if (typeof v !== "number") return false;
  return isFullyKnown(node.outputs[0]!.type);
}

interface Group {
  members: Node[];
  /** Position (in the original node order) of the last member. */
  last: number;
}

function fuseGraph(g: Graph, maxSteps: number): number {
  const pos = new Map<Node, number>();
  g.nodes.forEach((n, i) => pos.set(n, i));
  const users = new Map<Value, Node[]>();
  for (const n of g.nodes) for (const v of n.inputs) {
    let l = users.get(v);
    if (!l) users.set(v, (l = []));
    if (!l.includes(n)) l.push(n);
  }
  const groupOf = new Map<Node, Group>();
  const groups: Group[] = [];

  /** Every user outside `members` (node users only) comes after position `at`. */
  const usesAfter = (members: Set<Node>, at: number): boolean => {
    for (const m of members) {
      for (const u of users.get(m.outputs[0]!) ?? []) if (!members.has(u) && pos.get(u)! <= at) return false;
    }
    return true;
  };

  g.nodes.forEach((node, i) => {
    if (!fusible(node)) return;
    const out = node.outputs[0]!.type;
    let current = new Set<Node>([node]);
    const merged: Group[] = [];
    for (const v of node.inputs) {
      const p = v.producer;
      if (!p) continue;
      const grp = groupOf.get(p);
      if (!grp || merged.includes(grp)) continue;
      if (!shapesEqual(out.shape, p.outputs[0]!.type.shape)) continue;
      if (current.size + grp.members.length > maxSteps) continue;
      const union = new Set<Node>([...current, ...grp.members]);
      if (!usesAfter(union, i)) continue;
      current = union;
      merged.push(grp);
    }
    const group: Group = { members: [...current].sort((a, b) => pos.get(a)! - pos.get(b)!), last: i };
    for (const m of group.members) groupOf.set(m, group);
    for (const grp of merged) groups.splice(groups.indexOf(grp), 1);
    groups.push(group);
  });

  const outputsOfGraph = new Set(g.outputs);
  let created = 0;
  const replacement = new Map<Node, Node>(); // last member -> fused node
  const removed = new Set<Node>();
  const exitMap = new Map<Value, Value>();
  for (const group of groups) {
    if (group.members.length < 2) continue;
    const members = new Set(group.members);
    const inputs: Value[] = [];
    const index = new Map<Value, number>();
    const steps: FusedStep[] = [];
    const stepOf = new Map<Value, number>();
    const internal = new Set(group.members.map((m) => m.outputs[0]!));
    for (const m of group.members) {
      for (const v of m.inputs) {
        if (internal.has(v) || index.has(v)) continue;
        index.set(v, inputs.length);
        inputs.push(v);
      }
    }
    const ni = inputs.length;
    for (const m of group.members) {
      const args = m.inputs.map((v) => (stepOf.has(v) ? ni + stepOf.get(v)! : index.get(v)!));
      stepOf.set(m.outputs[0]!, steps.length);
      steps.push({ op: m.op, args, attrs: { ...(m.attrs as Record<string, number>) } });
    }
    const exits: Value[] = [];
    for (const m of group.members) {
      const v = m.outputs[0]!;
      if (outputsOfGraph.has(v) || (users.get(v) ?? []).some((u) => !members.has(u))) exits.push(v);
    }
    const attrs: FusedAttrs = { numInputs: ni, steps, outputs: exits.map((v) => stepOf.get(v)!) };
    const fused = makeNode(fusedElementwiseOp.name, inputs, attrs as unknown as Record<string, unknown>, exits.map((v) => v.type), [], group.members[group.members.length - 1]!.loc);
    const lastNode = g.nodes[group.last]!;
    replacement.set(lastNode, fused);
    for (const m of group.members) if (m !== lastNode) removed.add(m);
    exits.forEach((v, k) => exitMap.set(v, fused.outputs[k]!));
    created++;
  }
  if (created > 0) {
    g.nodes = g.nodes.filter((n) => !removed.has(n)).map((n) => replacement.get(n) ?? n);
    replaceUses(g, exitMap);
  }
  return created;
}
