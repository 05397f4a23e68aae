/**
 * Cutting a staged graph into segments: maximal runs of the graph's top-level nodes (in its
 * topological order) that the ONNX exporter can express, each to run as one onnxruntime
 * session, and the runs between them, which stay on our compiled executor. A loop or a
 * conditional is one node here: its whole region exports as an ONNX Loop/If or the node stays
 * ours. A call node is exportable when its callee (recursively, no recursion) is.
 *
 * Each segment becomes a graph of its own (its nodes cloned onto new input values): its inputs
 * are the values it reads from the graph's inputs or from earlier segments (the arguments first,
 * then the graph's capture inputs, so that the engine may bake those), its outputs the values
 * later segments or the graph's outputs read. The cut tensors pass between executors as they are
 * (immutable tensors: no copy on our side; the engine wraps their storage).
 */
import { sizeOf } from "../../core/shape.js";
import { Graph, type FunctionLibrary, type Node, type Value } from "../../graph/ir.js";
import { lookupOp, type OpDef } from "../../ops/registry.js";
import { callOp, condOp, whileOp, readVariableOp, assignVariableOp } from "../../ops/structural.js";
import { installLowerings } from "../export/lowerings/index.js";
import { float32OnlyLowerings } from "../export/lowerings/math.js";
import { elementwiseGroup, groupLosesFloat64 } from "../export/elementwise.js";
import { guardIndices, hasIndexOp, indicesProvenInRange, oneHotGuardable } from "./index-guard.js";
import { cloneGraph } from "../../graph/passes/util.js";

/** One segment: its own graph, where it runs, and where its inputs come from and its outputs go (slots of the run's value table). */
export interface Segment {
  graph: Graph;
  /**
   * The graph the engine runs: `graph`, or where that has index ops, a copy whose indices are
   * checked (index-guard.ts). Ours runs `graph` itself, so a segment run on ours after its engine
   * run refused an index raises ours' error for the index the user gave.
   */
  engineGraph: Graph;
  onEngine: boolean;
  /** Slots of the values the segment reads, in the order of its graph's inputs. */
  inputSlots: number[];
  /** How many of its inputs are not the whole graph's capture inputs (those come last). */
  numArgInputs: number;
  /** Slots its graph's outputs are written to. */
  outputSlots: number[];
  /** Its top-level node count and the elements its nodes produce (the size the threshold reads). */
  nodes: number;
  elements: number;
}

/** A graph cut into segments: the slot table's size, and the slots of the graph's outputs. */
export interface Cut {
  segments: Segment[];
  numSlots: number;
  outputSlots: number[];
}

/** Below both of these a would-be engine segment stays ours: a session run costs more than its work (~10-30 us per run). */
export const MIN_ENGINE_NODES = 4;
export const MIN_ENGINE_ELEMENTS = 16384;

/** Whether the exporter has a form for this node (its regions and callees included); the export itself still decides (a lowering may refuse some attributes). */
export function exportable(node: Node, library: FunctionLibrary, stack: string[] = []): boolean {
  const def = lookupOp(node.op);
  if (def === null) return false;
  if (def.structural !== undefined) {
    if (def === readVariableOp || def === assignVariableOp) return true;
    if (def === condOp || def === whileOp) return node.regions.every((r) => r.nodes.every((n) => exportable(n, library, stack)));
    if (def === callOp) {
      const callee = node.attrs.callee as string;
      if (stack.includes(callee) || !library.functions.has(callee)) return false;
      // (a callee is inlined by the export, past the index checks of index-guard.ts: one with an
      // index not known in range stays ours)
      if (!indicesProvenInRange(library.get(callee))) return false;
      return library.get(callee).nodes.every((n) => exportable(n, library, [...stack, callee]));
    }
    return false;
  }
  const op = def as OpDef;
  if (op.onnx?.refused !== undefined) return false;
  if (node.op === "cast" && castDiffersFromOurs(node.inputs[0]!.type.dtype, node.attrs.dtype as string)) return false;
  // (the export gives a row of zeros for an index out of range, where ours raises: index-guard.ts
  // checks int32 and int64 indices on the engine; uint8 ones stay ours)
  if (node.op === "oneHot" && !oneHotGuardable(node)) return false;
  if (op.onnx?.lower === undefined && op.elementwise === undefined) return false;
  return !losesFloat64(node, op);
}

/** The dtypes whose every value a cast to int64 or uint64 holds exactly (by both our rules and onnxruntime's). */
const EXACT_IN_INT64 = new Set(["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32"]);
const EXACT_IN_UINT64 = new Set(["bool", "uint8", "uint16", "uint32"]);

/**
 * Whether a cast can give other values on onnxruntime than on ours: our int64 and uint64 tensors
 * hold numbers (a float truncated toward zero: -0.5 is -0, -3.7 is -3 even as uint64, 1e20
 * stays 1e20), onnxruntime's hold 64-bit integers (C++ conversions: a negative value wraps to
 * 2^64 - 3 as uint64, one out of range becomes -2^63). Such a cast stays ours, so the plan's
 * answers are ours. (Found running the staged sweep with the plan forced.)
 */
function castDiffersFromOurs(from: string, to: string): boolean {
  if (to === "int64") return !EXACT_IN_INT64.has(from) && from !== "int64";
  if (to === "uint64") return !EXACT_IN_UINT64.has(from) && from !== "uint64";
  return false;
}

/**
 * Whether the export computes this node's float64 values in float32 (onnxruntime's CPU provider
 * has float32 kernels only for convolutions, pooling, erf, tan and the inverse and hyperbolic
 * trigonometric functions): such a node stays ours, so that auto is never less accurate than our
 * executor (the whole-graph "onnxruntime" engine accepts that: docs/onnx.md's tolerances).
 */
function losesFloat64(node: Node, op: OpDef): boolean {
  const dtypes = node.inputs.map((v) => v.type.dtype);
  if (!dtypes.includes("float64") && !node.outputs.some((v) => v.type.dtype === "float64")) return false;
  const lower = op.onnx?.lower;
  if (lower !== undefined) {
    if (float32OnlyLowerings.has(lower)) return true;
    const group = op.group?.(node.attrs, node.inputs.map((v) => v.type)) ?? null;
    return group !== null && groupLosesFloat64(group, dtypes);
  }
  return groupLosesFloat64(elementwiseGroup(op.elementwise!, node.attrs, node.inputs.length, node.outputs[0]!.type.dtype), dtypes);
}

/** The elements a node's outputs hold (unknown dimensions count as large; loops count as large). */
function elementsOf(node: Node): number {
  if (node.regions.length > 0 || node.op === callOp.name) return Number.MAX_SAFE_INTEGER / 1024;
  let e = 0;
  for (const v of node.outputs) e += v.type.shape.some((d) => d < 0) ? 1 << 20 : sizeOf(v.type.shape);
  return e;
}

/**
 * Cuts `graph` into segments. `numArgInputs`: how many of its inputs are arguments (the rest are
 * captures). Small exportable runs (below MIN_ENGINE_NODES nodes and MIN_ENGINE_ELEMENTS
 * elements) join the runs of ours around them.
 */
export function cutGraph(graph: Graph, library: FunctionLibrary, numArgInputs: number): Cut {
  installLowerings();
  // runs of nodes with the same placement
  const runs: { nodes: Node[]; onEngine: boolean; elements: number }[] = [];
  for (const node of graph.nodes) {
    const onEngine = exportable(node, library);
    const last = runs[runs.length - 1];
    if (last !== undefined && last.onEngine === onEngine) {
      last.nodes.push(node);
      last.elements += elementsOf(node);
    } else runs.push({ nodes: [node], onEngine, elements: elementsOf(node) });
  }
  // small engine runs become ours, and neighbouring runs of ours merge
  const merged: typeof runs = [];
  for (const r of runs) {
    if (r.onEngine && r.nodes.length < MIN_ENGINE_NODES && r.elements < MIN_ENGINE_ELEMENTS) r.onEngine = false;
    const last = merged[merged.length - 1];
    if (last !== undefined && !last.onEngine && !r.onEngine) {
      last.nodes.push(...r.nodes);
      last.elements += r.elements;
    } else merged.push(r);
  }
  return cutInto(graph, merged, numArgInputs);
}

/** Builds the segments' graphs and the slot table for runs of the graph's nodes (in order). */
export function cutInto(graph: Graph, runs: { nodes: Node[]; onEngine: boolean; elements: number }[], numArgInputs: number): Cut {
  const slotOf = new Map<Value, number>();
  graph.inputs.forEach((v, i) => slotOf.set(v, i));
  let numSlots = graph.inputs.length;
  const isCapture = (v: Value) => v.producer === null && v.index >= numArgInputs && graph.inputs[v.index] === v;
  // which run reads each value last (and the graph's outputs: read after every run)
  const lastReader = new Map<Value, number>();
  runs.forEach((r, k) => {
    for (const n of r.nodes) for (const v of n.inputs) lastReader.set(v, k);
  });
  for (const v of graph.outputs) lastReader.set(v, runs.length);
  const segments: Segment[] = [];
  runs.forEach((r, k) => {
    const g = new Graph(`${graph.name}_seg${k}`);
    const inside = new Map<Value, Value>();
    const produced = new Set<Value>();
    for (const n of r.nodes) for (const v of n.outputs) produced.add(v);
    // inputs: what its nodes read that is made outside it, arguments first, captures last
    const reads: Value[] = [];
    const seen = new Set<Value>();
    for (const n of r.nodes) {
      for (const v of n.inputs) {
        if (produced.has(v) || seen.has(v)) continue;
        seen.add(v);
        reads.push(v);
      }
    }
    const ordered = [...reads.filter((v) => !isCapture(v)), ...reads.filter(isCapture)];
    for (const v of ordered) inside.set(v, g.addInput(v.type, v.name ?? `in_${v.id}`));
    for (const n of r.nodes) {
      const c = g.addNode(n.op, n.inputs.map((v) => inside.get(v)!), n.attrs, n.outputs.map((v) => v.type), n.regions, n.loc);
      n.outputs.forEach((v, i) => inside.set(v, c.outputs[i]!));
    }
    // outputs: what it makes that a later run or the graph's outputs read
    const outs: Value[] = [];
    for (const n of r.nodes) for (const v of n.outputs) if ((lastReader.get(v) ?? -1) > k) outs.push(v);
    g.setOutputs(outs.map((v) => inside.get(v)!));
    // (negative indices: ours raise, onnxruntime counts from the end; index-guard.ts)
    let engineGraph = g;
    if (r.onEngine && hasIndexOp(g)) guardIndices((engineGraph = cloneGraph(g)));
    const outputSlots = outs.map((v) => {
      const s = numSlots++;
      slotOf.set(v, s);
      return s;
    });
    segments.push({
      graph: g,
      engineGraph,
      onEngine: r.onEngine,
      inputSlots: ordered.map((v) => slotOf.get(v)!),
      numArgInputs: ordered.filter((v) => !isCapture(v)).length,
      outputSlots,
      nodes: r.nodes.length,
      elements: r.elements,
    });
  });
  return { segments, numSlots, outputSlots: graph.outputs.map((v) => slotOf.get(v)!) };
}
