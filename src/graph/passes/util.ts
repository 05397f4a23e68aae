/**
 * Helpers shared by the graph passes: registry lookups, effect analysis, value replacement,
 * node insertion, graph walking, cloning and type refinement.
 *
 * Conventions every pass keeps:
 * - A pass never mutates an attrs object in place (attrs may be shared with other graphs);
 *   it builds a new object.
 * - A region sees only its own inputs and nodes, so replacing a value is local to one graph.
 * - Nodes with effects (stateful ops, ops that write variables, unknown ops, and structural
 *   nodes whose regions or callees contain any of these) are never removed, merged, folded or
 *   moved relative to each other.
 */
import { withEagerContext } from "../../core/context.js";
import type { Tensor } from "../../core/tensor.js";
import { runOp, type OpDef } from "../../ops/registry.js";
import { declarationOf, registryDef } from "../declarations.js";
import { FunctionLibrary, Graph, Node, type Value, type ValueType } from "../ir.js";

export { registryDef };

export function isFullyKnown(t: ValueType): boolean {
  for (let i = 0; i < t.shape.length; i++) if (!(t.shape[i]! >= 0)) return false;
  return true;
}

export function sizeOfType(t: ValueType): number {
  let n = 1;
  for (let i = 0; i < t.shape.length; i++) n *= t.shape[i]!;
  return n;
}

export function sameType(a: ValueType, b: ValueType): boolean {
  if (a.dtype !== b.dtype || a.shape.length !== b.shape.length) return false;
  for (let i = 0; i < a.shape.length; i++) if (a.shape[i] !== b.shape[i]) return false;
  return true;
}

/** `from` is `to` with some unknown dims of `to` made known (same dtype and rank). */
export function refines(from: ValueType, to: ValueType): boolean {
  if (from.dtype !== to.dtype || from.shape.length !== to.shape.length) return false;
  for (let i = 0; i < to.shape.length; i++) {
    const t = to.shape[i]!;
    if (t >= 0 && from.shape[i] !== t) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Effects

/**
 * Which library functions (transitively) have effects: a fixed point over the call graph,
 * so mutual recursion is handled.
 */
export class EffectAnalysis {
  private readonly fnEffects = new Map<string, boolean>();
  private readonly fnReads = new Map<string, boolean>();

  constructor(readonly lib: FunctionLibrary) {
    for (const k of lib.functions.keys()) {
      this.fnEffects.set(k, false);
      this.fnReads.set(k, false);
    }
    let changed = true;
    while (changed) {
      changed = false;
      for (const [k, f] of lib.functions) {
        if (!this.fnEffects.get(k) && this.graphHasEffects(f)) {
          this.fnEffects.set(k, true);
          changed = true;
        }
        if (!this.fnReads.get(k) && this.graphReadsState(f)) {
          this.fnReads.set(k, true);
          changed = true;
        }
      }
    }
  }

  /** Whether any node of `g` (or of its regions, or of a function it calls) reads state. */
  graphReadsState(g: Graph): boolean {
    for (const n of g.nodes) if (this.readsState(n)) return true;
    return false;
  }

  /**
   * Whether `node`'s outputs may depend on mutable state (a variable's value): ops that read
   * variables, and nodes whose regions or callee do. Such nodes are merged only when nothing
   * with effects runs between them.
   */
  readsState(node: Node): boolean {
    const def = declarationOf(node);
    if (!def) return false;
    if (def.readsVariables) return true;
    return def.structural?.inheritsEffects === true && this.inherited(node, (g) => this.graphReadsState(g), this.fnReads);
  }

  /** Whether any node of `g` (or of its regions, or of a function it calls) has effects. */
  graphHasEffects(g: Graph): boolean {
    for (const n of g.nodes) if (this.hasEffects(n)) return true;
    return false;
  }

  /**
   * Whether running `node` may do something besides computing its outputs (print, call the
   * host, assign a variable, anything unknown). Such nodes are never removed or merged.
   */
  hasEffects(node: Node): boolean {
    const def = declarationOf(node);
    if (!def) return true;
    if (def.stateful || def.writesVariables) return true;
    return def.structural?.inheritsEffects === true && this.inherited(node, (g) => this.graphHasEffects(g), this.fnEffects);
  }

  /** Whether a node's regions or callee have a property (a callee that cannot be resolved has it). */
  private inherited(node: Node, inGraph: (g: Graph) => boolean, byFunction: Map<string, boolean>): boolean {
    const key = declarationOf(node)?.structural?.calleeAttr;
    if (key !== undefined) {
      const callee = node.attrs[key];
      if (typeof callee !== "string") return true;
      if (byFunction.get(callee) ?? true) return true;
    }
    for (const r of node.regions) if (inGraph(r)) return true;
    return false;
  }
}

/** Registry ops that compute only from their inputs and attributes (foldable, mergeable). */
export function isPureRegistryNode(node: Node): OpDef | null {
  if (node.regions.length > 0) return null;
  const def = registryDef(node.op);
  if (!def || def.stateful) return null;
  return def;
}

// ---------------------------------------------------------------------------------------------
// Uses and rewriting

/** Replaces every use of `from` in `g` (node inputs and graph outputs) by `to`. */
export function replaceAllUses(g: Graph, from: Value, to: Value): void {
  if (from === to) return;
  for (const n of g.nodes) {
    const ins = n.inputs;
    for (let i = 0; i < ins.length; i++) if (ins[i] === from) ins[i] = to;
  }
  for (let i = 0; i < g.outputs.length; i++) if (g.outputs[i] === from) g.outputs[i] = to;
}

/** Replaces many values at once (one sweep over the graph). */
export function replaceUses(g: Graph, map: Map<Value, Value>): void {
  if (map.size === 0) return;
  const resolve = (v: Value): Value => {
    let r = v;
    for (let guard = 0; guard < 1000; guard++) {
      const next = map.get(r);
      if (next === undefined || next === r) return r;
      r = next;
    }
    return r;
  };
  for (const n of g.nodes) {
    const ins = n.inputs;
    for (let i = 0; i < ins.length; i++) ins[i] = resolve(ins[i]!);
  }
  for (let i = 0; i < g.outputs.length; i++) g.outputs[i] = resolve(g.outputs[i]!);
}

/** A node that is not (yet) in any graph. */
export function makeNode(op: string, inputs: Value[], attrs: Record<string, unknown>, outTypes: ValueType[], regions: Graph[] = [], loc: Node["loc"] = null): Node {
  const n = new Node(op, inputs, attrs, regions, loc);
  n.addOutputs(outTypes.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })));
  return n;
}

/** Every graph reachable from `g` through regions (g first, then depth first). */
export function graphsWithin(g: Graph, out: Graph[] = []): Graph[] {
  out.push(g);
  for (const n of g.nodes) for (const r of n.regions) graphsWithin(r, out);
  return out;
}

/**
 * The graphs a pass should visit: `g` and its regions, then every library function (other
 * than g) and their regions. Each graph appears once.
 */
export function allGraphs(g: Graph, lib: FunctionLibrary | undefined): Graph[] {
  const out = graphsWithin(g);
  if (lib) for (const f of lib.functions.values()) if (f !== g) graphsWithin(f, out);
  return [...new Set(out)];
}

/** Counts the nodes of `g`, regions included. */
export function countNodes(g: Graph): number {
  let n = 0;
  for (const node of g.nodes) {
    n++;
    for (const r of node.regions) n += countNodes(r);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Cloning

/**
 * Clones the nodes of `src` into fresh nodes whose inputs are mapped through `map` (which
 * must map src's inputs; it is extended with the clones' outputs). Regions are deep-cloned.
 * Attrs objects are shared (passes never mutate attrs in place).
 */
export function cloneNodes(src: Graph, map: Map<Value, Value>): Node[] {
  return src.nodes.map((n) => {
    const inputs = n.inputs.map((v) => {
      const m = map.get(v);
      if (m === undefined) throw new Error(`cloning graph ${src.name}: value used by ${n.op} is not mapped`);
      return m;
    });
    const c = makeNode(n.op, inputs, n.attrs, n.outputs.map((v) => v.type), n.regions.map(cloneGraph), n.loc);
    n.outputs.forEach((v, i) => map.set(v, c.outputs[i]!));
    return c;
  });
}

/** A deep copy of `g` (fresh values and nodes; attrs shared). */
export function cloneGraph(g: Graph): Graph {
  const c = new Graph(g.name);
  const map = new Map<Value, Value>();
  g.inputs.forEach((v, i) => map.set(v, c.addInput({ dtype: v.type.dtype, shape: v.type.shape.slice() }, g.inputNames[i] ?? v.name ?? `input_${i}`)));
  c.nodes = cloneNodes(g, map);
  c.setOutputs(
    g.outputs.map((v) => map.get(v)!),
    g.outputNames.slice(),
  );
  return c;
}

/**
 * A deep copy of a graph and its function library, for optimizing without touching graphs
 * that other concrete functions (or the tape's staged gradients) share. When `g` is itself a
 * member of `lib`, the copy's root is the copied member.
 */
export function cloneProgram(g: Graph, lib: FunctionLibrary): { graph: Graph; library: FunctionLibrary } {
  const library = new FunctionLibrary();
  let graph: Graph | null = null;
  for (const [k, f] of lib.functions) {
    const c = cloneGraph(f);
    library.functions.set(k, c);
    if (f === g) graph = c;
  }
  return { graph: graph ?? cloneGraph(g), library };
}

/**
 * Inlines `body` into `host` at node position `at` (replacing nothing): its nodes are cloned
 * with body.inputs bound to `args`; returns the values standing for body's outputs.
 */
export function spliceGraph(host: Graph, at: number, body: Graph, args: readonly Value[]): Value[] {
  const { nodes, results } = inlineCopy(body, args);
  host.nodes.splice(at, 0, ...nodes);
  return results;
}

/** `body`'s nodes cloned with body.inputs bound to `args` (in no graph yet), and the values standing for body's outputs. */
export function inlineCopy(body: Graph, args: readonly Value[]): { nodes: Node[]; results: Value[] } {
  const map = new Map<Value, Value>();
  body.inputs.forEach((v, i) => map.set(v, args[i]!));
  const nodes = cloneNodes(body, map);
  return { nodes, results: body.outputs.map((v) => map.get(v)!) };
}

// ---------------------------------------------------------------------------------------------
// Types

/**
 * Makes unknown dims known where the shape rule of a registry node now sees fully known
 * inputs (after inlining a function with more precise arguments, or folding). Only refines:
 * a known dim or a dtype is never changed. Recurses into regions. Returns how many values
 * were refined.
 */
export function refineTypes(g: Graph): number {
  let refined = 0;
  for (const n of g.nodes) {
    for (const r of n.regions) refined += refineTypes(r);
    if (n.outputs.every((v) => isFullyKnown(v.type))) continue;
    const def = registryDef(n.op);
    if (!def || !n.inputs.every((v) => isFullyKnown(v.type))) continue;
    let inferred: ValueType[];
    try {
      inferred = def.infer(
        n.inputs.map((v) => v.type),
        n.attrs as never,
      );
    } catch {
      continue;
    }
    if (inferred.length !== n.outputs.length) continue;
    n.outputs.forEach((v, i) => {
      const t = inferred[i]!;
      if (!sameType(t, v.type) && refines(t, v.type)) {
        v.type = { dtype: t.dtype, shape: t.shape.slice() };
        refined++;
      }
    });
  }
  return refined;
}

/** Runs a registry kernel on concrete tensors outside any trace or tape. */
export function evaluateNode(def: OpDef, inputs: Tensor[], attrs: unknown): Tensor[] {
  return withEagerContext(() => runOp(def, inputs, attrs));
}
