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
 * stackRead's row too: its export is a Gather (ours raise a ShapeError for a row out of range).
 *
 * oneHot: its export (Equal against 0..depth-1) gives a row of zeros for an index out of
 * range, where ours raises. Its indices pass through the same `where`, then through
 * `gather(0..depth-1, i)`, which is `i` for every valid index and makes onnxruntime refuse one
 * past the depth (or LOW): the plan falls back, and ours raises oneHot's own IndexError. (Kept
 * ours before, it split graphs that hold it: seq2seq's decoder loop one-hot encodes its tokens,
 * and its graph was cut in three around that loop, where the whole graph as one session is
 * 1.25x as fast as ours; bench/RESULTS.md.)
 *
 * Not every index is checked where it is used (guardIndices): those known in range need no check
 * (index-ranges.ts), and those in a loop body whose values come from outside every loop are
 * checked once, before the loop, on the values they come from. Checked in the body, seq2seq's
 * five checks per decoder step (forward and backward) made its plan 1.7x as slow as the same
 * session unchecked, slower than ours (bench/RESULTS.md, "Index checks out of loops").
 */
import type { DType } from "../../core/dtype.js";
import { Node, type Graph, type Value, type ValueType } from "../../graph/ir.js";
import { cloneGraph } from "../../graph/passes/util.js";
import { SELECTS_ALL, SELECTS_INPUT0, dtypeInterval, isEmpty, rangeOf, valueRanges, type Interval, type Ranges } from "./index-ranges.js";

/** Ops with an index input, and its position. */
export const INDEX_INPUT: ReadonlyMap<string, number> = new Map([
  ["gather", 1],
  ["gatherND", 1],
  ["gatherElements", 1],
  ["scatterAdd", 1],
  ["scatterElements", 1],
  ["scatterND", 1],
  ["oneHot", 0],
  // (an iteration stack's row: exported as a Gather, which takes a negative row from the end)
  ["stackRead", 1],
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

const provenCache = new WeakMap<Graph, boolean>();

/**
 * Whether every index of `g` (its regions too) is known in range whatever g's inputs are, so g
 * needs no check: a callee the export inlines can go to the engine then (a differentiated loop's
 * backward reads its iteration stacks at rows the loop's condition keeps in range).
 */
export function indicesProvenInRange(g: Graph): boolean {
  let proven = provenCache.get(g);
  if (proven === undefined) {
    const ranges = valueRanges(g);
    proven = !hasIndexOp(g) || survey(g).sites.every((s) => within(rangeOf(ranges, s.node.inputs[s.input]!), s.need));
    provenCache.set(g, proven);
  }
  return proven;
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

/** An index op's indices (int32 or int64) and the range they must lie in for the engine to answer as ours does. */
interface Site {
  node: Node;
  input: number;
  /** gather and scatter ops: not negative (onnxruntime refuses one past the end itself); oneHot: [0, depth). */
  need: Interval;
  /** Whether it sits in a region (a loop body or a branch). */
  inRegion: boolean;
}

const NOT_NEGATIVE: Interval = { lo: 0, hi: Infinity };

function within(r: Interval | null, need: Interval): boolean {
  return r !== null && (isEmpty(r) || (r.lo >= need.lo && r.hi <= need.hi));
}

/** Copies the regions of `g`'s nodes that hold index ops (recursively): they are shared with the traced graph. */
function copyIndexRegions(g: Graph): void {
  for (const n of g.nodes) {
    if (!n.regions.some(hasIndexOp)) continue;
    n.regions = n.regions.map((r) => {
      if (!hasIndexOp(r)) return r;
      const c = cloneGraph(r);
      copyIndexRegions(c);
      return c;
    });
  }
}

/** The index sites of `g` and its regions; each region's owner and each value's graph. */
function survey(g: Graph) {
  const sites: Site[] = [];
  const owner = new Map<Graph, Node>();
  const graphOf = new Map<Value, Graph>();
  const walk = (h: Graph, inRegion: boolean) => {
    h.inputs.forEach((v) => graphOf.set(v, h));
    for (const n of h.nodes) {
      n.outputs.forEach((v) => graphOf.set(v, h));
      for (const r of n.regions) {
        owner.set(r, n);
        walk(r, true);
      }
      const k = INDEX_INPUT.get(n.op);
      const idx = k === undefined ? undefined : n.inputs[k];
      if (idx === undefined || !SIGNED.has(idx.type.dtype)) continue;
      const need = n.op === "oneHot" ? { lo: 0, hi: (n.attrs.depth as number) - 1 } : NOT_NEGATIVE;
      sites.push({ node: n, input: k!, need, inRegion });
    }
  };
  walk(g, false);
  return { sites, owner, graphOf };
}

/** Ops at the top level through which a value's check moves to their input (cheap: the input holds the same elements). */
const TOP_PASSES = new Set(["identity", "stopGradient", "reshape", "squeeze", "expandDims", "transpose", "unstack", "split", "slice"]);
/** A check moves to a gather's data, or at the top level to a slice's whole input, only when that is at most this big (a check once of a large tensor can cost more than the checks it saves). */
const MAX_CHECKED_DATA = 1 << 16;
const smallEnough = (v: Value) => v.type.shape.every((d) => d >= 0) && v.type.shape.reduce((a, b) => a * b, 1) <= MAX_CHECKED_DATA;

/**
 * Where to check `v` once, outside every loop, so that `v` lies in `need`: values of `g`'s top
 * level, each with the range to check (written into `at`); false where some of v's values come
 * from an op inside a region that keeps no range (then v is checked where it is used).
 */
function sources(v: Value, need: Interval, g: Graph, ranges: Ranges, owner: Map<Graph, Node>, graphOf: Map<Value, Graph>, at: Map<Value, Interval>): boolean {
  const visiting = new Set<Value>();
  const go = (x: Value, into: Map<Value, Interval>): boolean => {
    if (within(rangeOf(ranges, x), need)) return true;
    // (a loop variable reached again: its other sources are being followed)
    if (visiting.has(x)) return true;
    visiting.add(x);
    const h = graphOf.get(x);
    const p = x.producer;
    if (h === g) {
      if (p !== null && TOP_PASSES.has(p.op) && smallEnough(p.inputs[0]!)) return go(p.inputs[0]!, into);
      // (into a loop or branch, when all its sources are found there; else its output itself)
      const trial = new Map(into);
      if (p !== null && (p.op === "while" || p.op === "cond") && structural(p, x, trial)) trial.forEach((d, y) => into.set(y, d));
      else {
        const d = into.get(x);
        into.set(x, d === undefined ? need : { lo: Math.max(d.lo, need.lo), hi: Math.min(d.hi, need.hi) });
      }
      return true;
    }
    if (p === null) {
      const n = h === undefined ? undefined : owner.get(h);
      if (n?.op === "while") return go(n.inputs[x.index]!, into) && (x.index >= (n.attrs.numLoopVars as number) || go(n.regions[1]!.outputs[x.index]!, into));
      if (n?.op === "cond") return go(n.inputs[x.index + 1]!, into);
      return false;
    }
    if (p.op === "while" || p.op === "cond") return structural(p, x, into);
    if (p.op === "gather" || p.op === "gatherND" || p.op === "gatherElements") return smallEnough(p.inputs[0]!) && go(p.inputs[0]!, into);
    if (SELECTS_INPUT0.has(p.op)) return go(p.inputs[0]!, into);
    if (SELECTS_ALL.has(p.op)) return p.inputs.every((y) => go(y, into));
    if (p.op === "where") return go(p.inputs[1]!, into) && go(p.inputs[2]!, into);
    if (p.op === "cast") {
      const from = dtypeInterval(p.inputs[0]!.type.dtype), to = dtypeInterval(x.type.dtype);
      return from !== null && to !== null && from.lo >= to.lo && from.hi <= to.hi && go(p.inputs[0]!, into);
    }
    // (not negative: x = y + c with c >= 0 is when y is; a loop counter's step)
    if (p.op === "add" && need.hi === Infinity) {
      const [a, b] = p.inputs as [Value, Value];
      if (within(rangeOf(ranges, b), NOT_NEGATIVE)) return go(a, into);
      if (within(rangeOf(ranges, a), NOT_NEGATIVE)) return go(b, into);
    }
    return false;
  };
  // (a while's output: the body's result or the initial value; a cond's: either branch's)
  const structural = (p: Node, x: Value, into: Map<Value, Interval>): boolean => {
    const k = x.index;
    return p.op === "while" ? go(p.regions[1]!.outputs[k]!, into) && go(p.inputs[k]!, into) : go(p.regions[0]!.outputs[k]!, into) && go(p.regions[1]!.outputs[k]!, into);
  };
  return go(v, at);
}

function scalarConstant(dtype: DType, v: number): Node {
  const n = new Node("constant", [], { dtype, shape: [], values: [v] });
  n.addOutputs([{ dtype, shape: [] }]);
  return n;
}

function node(op: string, inputs: Value[], attrs: Record<string, unknown>, type: ValueType, into: Node[]): Value {
  const n = new Node(op, inputs, attrs, []);
  n.addOutputs([type]);
  into.push(n);
  return n.outputs[0]!;
}

/**
 * The nodes that give `v + gather([0], where(min(v) < lo || max(v) > hi, LOW, 0))`: `v` itself
 * when its values lie in `need`, a refused run where not (LOW is past any dimension).
 */
function checkNodes(v: Value, need: Interval): { nodes: Node[]; out: Value } {
  const { dtype, shape } = v.type;
  const nodes: Node[] = [];
  const scalar = { dtype, shape: [] }, flag = { dtype: "bool" as DType, shape: [] };
  const constant = (x: number) => {
    const c = scalarConstant(dtype, x);
    nodes.push(c);
    return c.outputs[0]!;
  };
  const axes = shape.map((_, i) => i);
  const reduce = (op: string) => (shape.length === 0 ? v : node(op, [v], { axes, keepDims: false }, scalar, nodes));
  let bad = node("less", [reduce("min"), constant(need.lo)], {}, flag, nodes);
  if (need.hi !== Infinity) bad = node("logicalOr", [bad, node("greater", [reduce("max"), constant(need.hi)], {}, flag, nodes)], {}, flag, nodes);
  const k = node("where", [bad, constant(lowIndex(dtype)), constant(0)], {}, scalar, nodes);
  const zeros = new Node("constant", [], { dtype, shape: [1], values: [0] });
  zeros.addOutputs([{ dtype, shape: [1] }]);
  nodes.push(zeros);
  const zero = node("gather", [zeros.outputs[0]!, k], { axis: 0 }, scalar, nodes);
  const out = node("add", [v, zero], {}, { dtype, shape }, nodes);
  return { nodes, out };
}

/**
 * Checks `values` (of `g`'s top level) once each, where they are made: each use of one in `g`
 * reads the checked value instead (equal to it; a refused run where it leaves its range).
 * Returns the checked values' ranges (the analysis's seeds).
 */
function insertChecks(g: Graph, values: Map<Value, Interval>): Ranges {
  const seeds: Ranges = new Map();
  const replaced = new Map<Value, Value>();
  const after = new Map<Node | null, Node[]>();
  for (const [v, need] of values) {
    const { nodes, out } = checkNodes(v, need);
    after.set(v.producer, [...(after.get(v.producer) ?? []), ...nodes]);
    replaced.set(v, out);
    seeds.set(out, need);
  }
  const checkNodesOf = new Set<Node>([...after.values()].flat());
  const nodes: Node[] = [...(after.get(null) ?? [])];
  for (const n of g.nodes) {
    nodes.push(n);
    nodes.push(...(after.get(n) ?? []));
  }
  for (const n of nodes) if (!checkNodesOf.has(n)) n.inputs = n.inputs.map((v) => replaced.get(v) ?? v);
  g.nodes = nodes;
  return seeds;
}

/** Puts the local checks (index-guard's `where`, and oneHot's range gather) in front of `guard`'s nodes, in `g` and its regions. */
function insertLocalGuards(g: Graph, guard: Set<Node>): void {
  const nodes: Node[] = [];
  for (const n of g.nodes) {
    // (regions without index ops are the traced graph's own: left as they are)
    n.regions.forEach((r) => hasIndexOp(r) && insertLocalGuards(r, guard));
    if (guard.has(n)) {
      const k = INDEX_INPUT.get(n.op)!;
      let checked = guardNodes(n.inputs[k]!);
      nodes.push(...checked.nodes);
      if (n.op === "oneHot") {
        checked = rangeNodes(checked.out, n.attrs.depth as number);
        nodes.push(...checked.nodes);
      }
      const out = checked.out;
      n.inputs = n.inputs.map((v, i) => (i === k ? out : v));
    }
    nodes.push(n);
  }
  g.nodes = nodes;
}

/**
 * Inserts the index checks into `g` (a segment's own graph; copies of its regions that hold index
 * ops). Indices whose range the analysis (index-ranges.ts) puts in range get none. Indices inside
 * a region whose values come, through ops that keep their range, from values outside every loop
 * (a loop counter from its initial value, tokens gathered from a tensor the loop reads) have
 * those values checked once at the top level instead (`checkNodes`), and then the analysis puts
 * them in range; so do indices at the top level that share such a source (the slices of one
 * unstacked tensor). The rest are checked where they are used, as before. `everyIndex`: every
 * index checked where it is used (for measuring what the analysis saves).
 */
export function guardIndices(g: Graph, everyIndex = false): void {
  if (!hasIndexOp(g)) return;
  copyIndexRegions(g);
  const { sites, owner, graphOf } = survey(g);
  // (every index checked where it is used, as before the analysis: bench/index-checks.ts measures it)
  if (everyIndex) return insertLocalGuards(g, new Set(sites.map((s) => s.node)));
  let ranges = valueRanges(g);
  const open = sites.filter((s) => !within(rangeOf(ranges, s.node.inputs[s.input]!), s.need));
  // where to check once: per site, its sources when they are all found (all of them or none)
  const perSource = new Map<Value, { need: Interval; sites: number }>();
  for (const s of open) {
    const idx = s.node.inputs[s.input]!;
    const at = new Map<Value, Interval>();
    if (!sources(idx, s.need, g, ranges, owner, graphOf, at)) continue;
    for (const [v, need] of at) {
      const p = perSource.get(v);
      perSource.set(v, p === undefined ? { need, sites: 1 } : { need: { lo: Math.max(p.need.lo, need.lo), hi: Math.min(p.need.hi, need.hi) }, sites: p.sites + 1 });
    }
    if (s.inRegion) for (const v of at.keys()) perSource.get(v)!.sites += 1; // (a region's index counts as many: it runs per iteration)
  }
  // (a check once is worth it for a source of a region's index or of two or more indices)
  const checked = new Map<Value, Interval>();
  for (const [v, { need, sites }] of perSource) if (sites >= 2 && checkable(v)) checked.set(v, need);
  if (checked.size > 0) ranges = valueRanges(g, insertChecks(g, checked));
  const guard = new Set(open.filter((s) => !within(rangeOf(ranges, s.node.inputs[s.input]!), s.need)).map((s) => s.node));
  insertLocalGuards(g, guard);
}

/** Whether `checkNodes` can check `v`: int32 or int64 (its Gather's index), a known shape with elements (a reduction over an empty tensor is left alone). */
function checkable(v: Value): boolean {
  return (v.type.dtype === "int32" || v.type.dtype === "int64") && v.type.shape.every((d) => d > 0);
}
