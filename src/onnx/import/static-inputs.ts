/**
 * Which graph inputs a graph needs as known values at trace time (static inputs): the model's
 * inputs that become trace keys (load.ts), and a Loop body's iteration number, which makes the
 * Loop unroll while tracing (ops/control-flow.ts). Also the small integer scalar inputs that
 * decide an If (a sample rate, a mode flag): as trace keys they fold the condition, so only the
 * branch taken is traced (conditionInputNames).
 */
import type { GraphProto } from "../protobuf.js";
import { handlerFor } from "./op-table.js";

/**
 * Graph inputs whose values the model needs at trace time: those that reach an input a handler
 * reads as a known value (constInputs), walking back through the nodes that compute it (but not
 * through Shape and Size, which read only shapes).
 */
export function staticInputNames(graph: GraphProto, inputNames: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const name of traceTimeNames(graph, false)) if (inputNames.has(name)) out.add(name);
  return out;
}

/**
 * Every name (of the graph and its subgraphs) whose value the graph reads at trace time: the
 * inputs handlers read as known values (constInputs) and what computes them, walking back
 * through the producing nodes (not through Shape and Size, which read only shapes). With
 * `controlFlow`, also what decides control flow (an If's condition, a Loop's trip count and
 * condition, a Loop body's condition output), which the importer folds when it is known: the
 * Constant nodes that must stay constants (constant-weights.ts) are found this way.
 */
export function traceTimeNames(graph: GraphProto, controlFlow: boolean): Set<string> {
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
      if (controlFlow && (n.domain ?? "") === "" && (n.op_type === "If" || n.op_type === "Loop")) {
        for (const i of n.op_type === "If" ? [0] : [0, 1]) if (n.input[i]) needed.push(n.input[i]!);
        const body = n.op_type === "Loop" ? n.attribute.find((a) => a.name === "body")?.g : null;
        if (body?.output[0]?.name) needed.push(body.output[0].name);
      }
      for (const a of n.attribute) {
        if (a.g) visit(a.g);
        for (const sg of a.graphs) visit(sg);
      }
    }
  };
  visit(graph);
  const seen = new Set<string>();
  while (needed.length > 0) {
    const name = needed.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const p = producers.get(name);
    if (p && p.op !== "Shape" && p.op !== "Size") for (const i of p.input) if (i) needed.push(i);
  }
  return seen;
}

/** A graph input that may key traces when it decides an If: an integer or bool tensor of one element. */
export interface KeyableInput {
  name: string;
  dtype: string | null;
  shape: readonly (number | string | null)[] | null;
}
const KEYABLE_DTYPES = new Set(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]);
/** Whether an input's declared type makes it a one-element integer (or bool) tensor. */
export const isKeyableScalar = (i: KeyableInput): boolean =>
  i.dtype !== null && KEYABLE_DTYPES.has(i.dtype) && i.shape !== null && i.shape.every((d) => d === 1);

/**
 * Graph inputs that decide an If's condition and nothing else run-time: for each If (nested ones
 * too) whose condition derives, through the nodes computing it, from graph inputs that are all
 * one-element integer or bool tensors (`keyable`; besides constants and initializers), those
 * inputs. As static inputs (one trace per distinct value) they make the condition known while
 * tracing, so the branch not taken is never traced: a model branching on its sample rate
 * (Silero VAD's If on sr) has branches whose shapes only fit their own rate, which tracing both
 * under sc.cond would refuse. A condition that also reads a float input, or a Loop body's or
 * branch's own inputs, stays a run-time condition (sc.cond).
 */
export function conditionInputNames(graph: GraphProto, inputNames: Set<string>, keyable: Set<string>): Set<string> {
  const producers = new Map<string, string[]>();
  const localInputs = new Set<string>();
  const conds: string[] = [];
  const reads = (g: GraphProto): string[] => g.node.flatMap((n) => [...n.input, ...n.attribute.flatMap((a) => [...(a.g ? reads(a.g) : []), ...a.graphs.flatMap(reads)])]);
  const visit = (g: GraphProto, top: boolean): void => {
    if (!top) for (const i of g.input) localInputs.add(i.name);
    for (const n of g.node) {
      const subgraphReads = n.attribute.flatMap((a) => [...(a.g ? reads(a.g) : []), ...a.graphs.flatMap(reads)]);
      for (const o of n.output) producers.set(o, [...n.input, ...subgraphReads]);
      if (n.op_type === "If" && (n.domain ?? "") === "" && n.input[0]) conds.push(n.input[0]);
      for (const a of n.attribute) {
        if (a.g) visit(a.g, false);
        for (const sg of a.graphs) visit(sg, false);
      }
    }
  };
  visit(graph, true);
  const out = new Set<string>();
  for (const c of conds) {
    const reached = new Set<string>();
    const seen = new Set<string>();
    const todo = [c];
    let runTime = false;
    while (todo.length > 0 && !runTime) {
      const name = todo.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const p = producers.get(name);
      if (p) for (const i of p) if (i) todo.push(i);
      if (p) continue;
      if (inputNames.has(name)) {
        if (keyable.has(name)) reached.add(name);
        else runTime = true;
      } else if (localInputs.has(name)) runTime = true;
    }
    if (!runTime) for (const r of reached) out.add(r);
  }
  return out;
}
