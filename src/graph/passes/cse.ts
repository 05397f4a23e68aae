/**
 * Common-subexpression elimination: a node computing the same op on the same inputs with
 * deep-equal attributes (and structurally equal regions) as an earlier node of the same
 * graph is dropped, its outputs replaced by the earlier node's.
 *
 * Never merged: nodes with effects (stateful registry ops such as hostCall and print,
 * assignVariable, cond/while/call nodes whose regions or callees have effects), random ops
 * (family "random"), and nodes without outputs. `readVariable` nodes of the same variable
 * merge only when no node with effects runs between them (an assignment, or a host call
 * that might assign, changes what the second read sees); so do cond/while/call nodes that
 * read a variable somewhere inside.
 *
 * The inputs of commutative ops (add, mul, equal, notEqual, logical and/or/xor) are
 * compared as unordered pairs: IEEE addition and multiplication are commutative exactly.
 */
import { attrValuesEqual, graphsEqual } from "../equal.js";
import { FunctionLibrary, type Graph, type Node, type Value } from "../ir.js";
import { allGraphs, EffectAnalysis, registryDef, replaceUses, sameType } from "./util.js";

/** Whether a node's two inputs may be swapped (its op declares it commutative). */
const commutative = (node: Node): boolean => registryDef(node.op)?.commutative === true;

/** Eliminates common subexpressions in `g`, its regions and library functions. Mutates; returns g. */
export function cse(g: Graph, lib: FunctionLibrary): Graph {
  runCse(g, lib);
  return g;
}

/** @internal Returns the number of nodes removed. */
export function runCse(g: Graph, lib: FunctionLibrary | undefined): number {
  // Without a library, every call counts as having effects.
  const effects = new EffectAnalysis(lib ?? new FunctionLibrary());
  let removed = 0;
  for (const graph of allGraphs(g, lib)) removed += cseGraph(graph, lib, effects);
  return removed;
}

function cseGraph(g: Graph, lib: FunctionLibrary | undefined, effects: EffectAnalysis): number {
  const ids = new Map<Value, number>();
  let nextId = 0;
  const idOf = (v: Value): number => {
    let id = ids.get(v);
    if (id === undefined) ids.set(v, (id = nextId++));
    return id;
  };
  const buckets = new Map<string, Node[]>();
  const replace = new Map<Value, Value>();
  const kept: Node[] = [];
  let epoch = 0;
  let removed = 0;

  for (const node of g.nodes) {
    // Inputs already merged away read the surviving value.
    for (let i = 0; i < node.inputs.length; i++) {
      const r = replace.get(node.inputs[i]!);
      if (r) node.inputs[i] = r;
    }
    kept.push(node);
    if (effects.hasEffects(node)) {
      epoch++;
      continue;
    }
    if (node.outputs.length === 0) continue;
    const def = registryDef(node.op);
    if (def && def.family === "random") continue;
    let inputIds = node.inputs.map(idOf);
    if (commutative(node)) inputIds = inputIds.slice().sort((a, b) => a - b);
    const key = `${node.op}|${inputIds.join(",")}${effects.readsState(node) ? `|epoch ${epoch}` : ""}`;
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = []));
    const same = bucket.find((m) => equivalent(m, node, lib));
    if (!same) {
      bucket.push(node);
      continue;
    }
    kept.pop();
    node.outputs.forEach((v, i) => replace.set(v, same.outputs[i]!));
    removed++;
  }
  g.nodes = kept;
  replaceUses(g, replace);
  return removed;
}

function equivalent(a: Node, b: Node, lib: FunctionLibrary | undefined): boolean {
  if (a.op !== b.op || a.inputs.length !== b.inputs.length || a.outputs.length !== b.outputs.length || a.regions.length !== b.regions.length) return false;
  if (!commutative(a)) {
    for (let i = 0; i < a.inputs.length; i++) if (a.inputs[i] !== b.inputs[i]) return false;
  } else {
    const rest = b.inputs.slice();
    for (const v of a.inputs) {
      const k = rest.indexOf(v);
      if (k < 0) return false;
      rest.splice(k, 1);
    }
  }
  if (!attrValuesEqual(a.attrs ?? {}, b.attrs ?? {})) return false;
  for (let i = 0; i < a.outputs.length; i++) if (!sameType(a.outputs[i]!.type, b.outputs[i]!.type)) return false;
  for (let i = 0; i < a.regions.length; i++) if (!graphsEqual(a.regions[i]!, b.regions[i]!, lib, lib)) return false;
  return true;
}
