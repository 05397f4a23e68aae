/**
 * Index checks on a partitioned plan's onnxruntime segments. onnxruntime's Gather, GatherND,
 * GatherElements, ScatterND and ScatterElements take negative indices (counting from the end),
 * where ours raise an IndexError for them: on the plan, `gather(x, [-1])` would silently give x's
 * last row. Before each such node of an engine segment (its regions too) the indices pass through
 * `where(i < 0, LOW, i)`, LOW far below any dimension, so onnxruntime refuses the run as it does
 * an index past the end; the plan then falls back to our executor (partition/auto.ts), which runs
 * the call and raises our IndexError. Valid indices are unchanged, so valid programs compute the
 * same. (Found by the seam hunt: docs/architecture.md "Cutting a graph".)
 *
 * oneHot too: its export (Equal against 0..depth-1) gives a row of zeros for an index out of
 * range, where ours raises. Its indices pass through the same `where`, then through
 * `gather(0..depth-1, i)`, which is `i` for every valid index and makes onnxruntime refuse one
 * past the depth (or LOW): the plan falls back, and ours raises oneHot's own IndexError. (Kept
 * ours before, it split graphs that hold it: seq2seq's decoder loop one-hot encodes its tokens,
 * and its graph was cut in three around that loop, where the whole graph as one session is
 * 1.25x as fast as ours; bench/RESULTS.md.)
 */
import { Node, type Graph, type Value } from "../../graph/ir.js";
import { cloneGraph } from "../../graph/passes/util.js";

/** Ops with an index input, and its position. */
export const INDEX_INPUT: ReadonlyMap<string, number> = new Map([
  ["gather", 1],
  ["gatherND", 1],
  ["gatherElements", 1],
  ["scatterAdd", 1],
  ["scatterElements", 1],
  ["scatterND", 1],
  ["oneHot", 0],
]);

const SIGNED = new Set(["int8", "int16", "int32", "int64"]);

/** Far below any dimension, and a value of the index dtype. */
function lowIndex(dtype: string): number {
  return dtype === "int8" ? -128 : dtype === "int16" ? -32768 : dtype === "int32" ? -(2 ** 31) : -(2 ** 62);
}

/** Whether `g` (its regions too) has an index op. */
export function hasIndexOp(g: Graph): boolean {
  return g.nodes.some((n) => INDEX_INPUT.has(n.op) || n.regions.some(hasIndexOp));
}

/** The nodes that give `where(idx < 0, LOW, idx)`. */
function guardNodes(idx: Value): { nodes: Node[]; out: Value } {
  const { dtype, shape } = idx.type;
  const scalar = (v: number): Node => {
    const n = new Node("constant", [], { dtype, shape: [], values: [v] });
    n.addOutputs([{ dtype, shape: [] }]);
    return n;
  };
  const zero = scalar(0), low = scalar(lowIndex(dtype));
  const less = new Node("less", [idx, zero.outputs[0]!], {});
  less.addOutputs([{ dtype: "bool", shape }]);
  const where = new Node("where", [less.outputs[0]!, low.outputs[0]!, idx], {});
  where.addOutputs([{ dtype, shape }]);
  return { nodes: [zero, low, less, where], out: where.outputs[0]! };
}

/** The nodes that give `gather(0..depth-1, idx)` (idx already through the `where`): idx where valid, a refused run where not. */
function rangeNodes(idx: Value, depth: number): { nodes: Node[]; out: Value } {
  const { dtype, shape } = idx.type;
  const range = new Node("constant", [], { dtype, shape: [depth], values: Array.from({ length: depth }, (_, j) => j) });
  range.addOutputs([{ dtype, shape: [depth] }]);
  const gather = new Node("gather", [range.outputs[0]!, idx], { axis: 0 });
  gather.addOutputs([{ dtype, shape }]);
  return { nodes: [range, gather], out: gather.outputs[0]! };
}

/** Whether the guard can check this oneHot's indices (signed: the `where`, then a Gather, which takes int32 and int64 only). */
export function oneHotGuardable(n: Node): boolean {
  const d = n.inputs[0]!.type.dtype;
  return d === "int32" || d === "int64";
}

/** Inserts the index checks into `g` (a segment's own graph) and into copies of its regions that hold index ops. */
export function guardIndices(g: Graph): void {
  if (!hasIndexOp(g)) return;
  const nodes: Node[] = [];
  for (const n of g.nodes) {
    // (regions are shared with the traced graph: the checked ones are copies)
    if (n.regions.some(hasIndexOp)) {
      n.regions = n.regions.map((r) => {
        if (!hasIndexOp(r)) return r;
        const c = cloneGraph(r);
        guardIndices(c);
        return c;
      });
    }
    const k = INDEX_INPUT.get(n.op);
    const idx = k === undefined ? undefined : n.inputs[k];
    if (idx !== undefined && SIGNED.has(idx.type.dtype)) {
      let guard = guardNodes(idx);
      nodes.push(...guard.nodes);
      if (n.op === "oneHot") {
        guard = rangeNodes(guard.out, n.attrs.depth as number);
        nodes.push(...guard.nodes);
      }
      const out = guard.out;
      n.inputs = n.inputs.map((v, i) => (i === k ? out : v));
    }
    nodes.push(n);
  }
  g.nodes = nodes;
}
