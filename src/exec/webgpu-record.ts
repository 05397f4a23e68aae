/**
 * Recording a graph into a webgpu plan (webgpu-plan.ts): every node's WebGPU kernel runs once
 * against the Recorder, whose buffers are slots and whose dispatches are steps.
 *
 * Beyond registry ops:
 * - calls are inlined; variables are read from per-call inputs and assigned per-call outputs;
 * - while loops and conds become runtime steps (the device reads their predicates); a counting loop
 *   (its predicate compares a counter with a number; the body adds a number to the counter) whose
 *   start and bound are known at plan time runs a fixed trip count, reading nothing;
 * - iteration stacks (what a differentiated loop keeps per iteration) live in GPU buffers sized for
 *   the loop's trip count: a push writes the row at the loop's iteration counter (a GPU word the
 *   plan increments), a read gathers the row its GPU index names, and after the loop the stack has
 *   a static row count, so the backward loop and the products after it plan like any other op.
 *
 * Numbers known at plan time: scalar constants and fills, host-side int32 scalar inputs (their
 * values key the plan, webgpu-executor.ts), and the final values of counters of loops with a
 * known trip count.
 */
import type { DType } from "../core/dtype.js";
import { atNode } from "../core/errors.js";
import type { TensorType } from "../core/tensor-type.js";
import type { Variable } from "../core/variable.js";
import { getOp, kernelFor } from "../ops/registry.js";
import type { Backend } from "../backends/backend.js";
import type { FunctionLibrary, Graph, Node, Value } from "../graph/ir.js";
import type { KernelDevice } from "../backends/webgpu/device.js";
import type { PlanStep } from "../backends/webgpu/protocol.js";
import { bindings, launch, lazy, Params, type GpuArray } from "../backends/webgpu/kernels/common.js";
import type { WebGpuEntry } from "../backends/webgpu/op-kernels/types.js";
import { shapeGpu } from "../backends/webgpu/op-kernels/shape.js";
import { onGpu } from "../backends/webgpu/storage.js";

/** Raised while recording: the graph cannot be planned (it runs node by node instead). */
export class Unplannable extends Error {}

export type SlotKind = "input" | "variable" | "output" | "scratch" | "const" | "error";

export interface Slot {
  kind: SlotKind;
  bytes: number;
  /** input: graph input index; variable: the variable read. */
  input?: number;
  variable?: Variable;
  /** const: the words written at plan creation. */
  data?: ArrayBufferView;
  /** Live range in step positions (scratch planning). */
  first: number;
  last: number;
}

/** What recording needs of the recorder (webgpu-plan.ts Recorder). */
export interface RecordingDevice extends KernelDevice {
  readonly slots: Slot[];
  steps: PlanStep[];
  slot(kind: SlotKind, bytes: number, extra?: Partial<Slot>): number;
  nested(fn: () => void): PlanStep[];
}

/** An iteration stack: a buffer with room for `cap` rows of `rowSize` elements. */
export interface StackInfo {
  cap: number;
  rowSize: number;
  /** Rows before the loop (inside a loop body: the stack has base + iteration rows). */
  base: number;
  /** Inside a loop body: the slot of the loop's iteration counter; null when the row count is static. */
  iter: number | null;
}

/** A value during recording: its slot, shape and dtype; its number when known at plan time. */
export interface Rec extends GpuArray {
  known?: number;
  /** The graph inputs whose values `known` was computed from. */
  knownFrom?: readonly number[];
  stack?: StackInfo;
}

export interface Ctx {
  rec: RecordingDevice;
  /** The webgpu backend (elementwise ops' kernels are its renderings of their expressions). */
  backend: Backend;
  library: FunctionLibrary;
  depth: number;
  /** Variables assigned so far at the top level: later reads see the assigned value. */
  assigned: Map<Variable, Rec>;
  assignments: [Variable, Rec][];
  variableSlots: Map<Variable, number>;
  topLevel: boolean;
  /** Graph inputs whose known values the plan used (a trip count): the plan is keyed on them. */
  dependsOn: Set<number>;
}

const MAX_INLINE_DEPTH = 16;

export function size(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function types(recs: readonly Rec[]): TensorType[] {
  return recs.map((r) => ({ shape: r.shape, dtype: r.dtype }));
}

export function checkStatic(op: string, t: readonly TensorType[]): void {
  for (const x of t) {
    if (x.shape.some((d) => d < 0)) throw new Unplannable(`${op} has a shape known only at run time`);
    if (!onGpu(x.dtype)) throw new Unplannable(`${op} has a ${x.dtype} value`);
  }
}

/** The number a node's single scalar output is at plan time (constants and fills). */
function knownScalar(node: Node, t: TensorType): number | undefined {
  if (t.shape.length !== 0) return undefined;
  if (node.op === "constant") return (node.attrs.values as number[])[0];
  if (node.op === "fill") return node.attrs.value as number;
  return undefined;
}

export function recordGraph(ctx: Ctx, graph: Graph, inputs: Rec[]): Rec[] {
  const values = new Map<number, Rec>();
  graph.inputs.forEach((v, i) => values.set(v.id, inputs[i]!));
  const get = (v: Value): Rec => {
    const r = values.get(v.id);
    if (!r) throw new Unplannable(`value ${v.id} of ${graph.name} used before it is defined`);
    return r;
  };
  for (const node of graph.nodes) {
    const args = node.inputs.map(get);
    const outs = atNode(node.loc, () => recordNode(ctx, node, args));
    node.outputs.forEach((v, i) => values.set(v.id, outs[i]!));
  }
  return graph.outputs.map(get);
}

function recordNode(ctx: Ctx, node: Node, args: Rec[]): Rec[] {
  const { rec } = ctx;
  switch (node.op) {
    case "call":
      if (ctx.depth >= MAX_INLINE_DEPTH) throw new Unplannable("calls nested too deep to inline (recursion)");
      return recordGraph({ ...ctx, depth: ctx.depth + 1 }, ctx.library.get(node.attrs.callee as string), args);
    case "readVariable": {
      const v = node.attrs.variable as Variable;
      const now = ctx.assigned.get(v);
      if (now) return [now];
      const t = node.outputs[0]!.type;
      checkStatic("readVariable", [t]);
      let slot = ctx.variableSlots.get(v);
      if (slot === undefined) ctx.variableSlots.set(v, (slot = rec.slot("variable", 4 * size(t.shape), { variable: v })));
      return [{ id: slot, shape: t.shape, dtype: t.dtype }];
    }
    case "assignVariable": {
      if (!ctx.topLevel) throw new Unplannable("a variable is assigned inside a loop or branch");
      const v = node.attrs.variable as Variable;
      ctx.assigned.set(v, args[0]!);
      ctx.assignments.push([v, args[0]!]);
      return [];
    }
    case "while":
      return recordWhile(ctx, node, args);
    case "cond":
      return recordCond(ctx, node, args);
    case "emptyStack": {
      const like = args[0]!;
      const rowSize = size(like.shape);
      return [{ id: rec.alloc(4), shape: [0, ...like.shape], dtype: like.dtype, stack: { cap: 0, rowSize, base: 0, iter: null } }];
    }
    case "stackPush":
      return [stackPush(rec, args[0]!, args[1]!)];
    case "stackRead":
      return [stackRead(rec, args[0]!, args[1]!, node.outputs[0]!.type)];
  }
  const def = getOp(node.op);
  const entry = (def.kernels.webgpu ?? (def.elementwise ? kernelFor(def, ctx.backend) : undefined)) as WebGpuEntry | undefined;
  if (!entry?.gpu) throw new Unplannable(`${node.op} runs on the host`);
  if (args.some((a) => a.stack?.iter != null)) throw new Unplannable(`${node.op} uses an iteration stack while its loop grows it`);
  checkStatic(node.op, types(args));
  const outTypes = def.infer(types(args), node.attrs);
  checkStatic(node.op, outTypes);
  const outs = entry.gpu(rec, args, node.attrs, outTypes);
  return outs.map((o, i) => {
    const t = outTypes[i]!;
    const known = outs.length === 1 ? knownScalar(node, t) : undefined;
    return { id: o.id, shape: t.shape, dtype: t.dtype, ...(known !== undefined ? { known } : {}) };
  });
}

/** A fresh scratch slot holding a copy of `r`'s first `count` elements (appended to the current steps). */
export function copyOf(rec: RecordingDevice, r: Rec, count = size(r.shape), capacity = count): Rec {
  const id = rec.alloc(4 * Math.max(1, capacity));
  rec.copy(r.id, 0, id, 0, 4 * count);
  return { id, shape: r.shape, dtype: r.dtype };
}

// ---------------------------------------------------------------------------------------------
// Iteration stacks

/** Writes a value as row (base + iteration counter) of a stack buffer. */
function pushAtIteration(rec: RecordingDevice, stack: Rec, value: Rec): void {
  const s = stack.stack!;
  const b = bindings([
    ["src", "r", "u32"],
    ["iter", "r", "i32"],
    ["dst", "w", "u32"],
  ]);
  const p = new Params().u32("n", s.rowSize).u32("base", s.base);
  const source = `${b.wgsl}${p.wgsl(3)}
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < p.n) { dst[(p.base + u32(iter[0])) * p.n + g.x] = src[g.x]; }
}`;
  launch(rec, lazy("stackPush", () => ({ source, layout: "rrwu", label: "stack_push" })), [value.id, s.iter!, stack.id], p, [Math.ceil(s.rowSize / 256), 1, 1]);
}

function stackPush(rec: RecordingDevice, stack: Rec, value: Rec): Rec {
  checkStatic("stackPush", [value]);
  const rowSize = size(value.shape);
  const s = stack.stack;
  if (s?.iter != null) {
    if (rowSize !== s.rowSize) throw new Unplannable("a stack push of a row of another size");
    pushAtIteration(rec, stack, value);
    return stack;
  }
  // A static stack: a new buffer with one more row.
  const rows = stack.shape[0]!;
  if (rows < 0) throw new Unplannable("a stack push onto a stack of unknown rows");
  const out = copyOf(rec, stack, rows * rowSize, (rows + 1) * rowSize);
  rec.copy(value.id, 0, out.id, 4 * rows * rowSize, 4 * rowSize);
  return { id: out.id, shape: [rows + 1, ...value.shape], dtype: value.dtype, stack: { cap: rows + 1, rowSize, base: rows + 1, iter: null } };
}

function stackRead(rec: RecordingDevice, stack: Rec, index: Rec, t: TensorType): Rec {
  // Row `index` (a GPU int32 scalar): a gather along the rows, bounded by the rows pushed so far
  // (a growing stack: by its capacity).
  const s = stack.stack;
  const rows = s?.iter != null ? s.cap : stack.shape[0]!;
  if (rows < 0) throw new Unplannable("a stack read of a stack of unknown rows");
  const rowShape = t.shape;
  checkStatic("stackRead", [t]);
  const [out] = shapeGpu.gather.gpu!(rec, [{ id: stack.id, shape: [rows, ...rowShape], dtype: stack.dtype }, index], { axis: 0 }, [t]);
  return { id: out!.id, shape: rowShape, dtype: t.dtype };
}

// ---------------------------------------------------------------------------------------------
// Loops

/** A counting loop: the predicate compares a loop variable with a number, the body adds a number to it. */
export interface Counting {
  /** The counter's index among the loop variables. */
  k: number;
  cmp: string;
  bound: number;
  step: number;
  dtype: DType;
  maxIterations: number;
}

/** The number added to loop variable k each iteration (body output k = input k + c, or - c), or undefined. */
function increment(bodyG: Graph, k: number, args: Rec[]): { step: number; from: readonly number[] } | undefined {
  const out = bodyG.outputs[k];
  const op = out?.producer;
  if (!op || (op.op !== "add" && op.op !== "sub") || op.inputs[0] !== bodyG.inputs[k]) return undefined;
  const c = numberOf(op.inputs[1]!, bodyG, args);
  if (!c) return undefined;
  return { step: op.op === "add" ? c.value : -c.value, from: c.from };
}

/** A value's number at plan time: a constant node of the region, or a known input of the region. */
function numberOf(v: Value, g: Graph, args: Rec[]): { value: number; from: readonly number[] } | undefined {
  if (v.producer) {
    const x = v.producer.outputs.length === 1 ? knownScalar(v.producer, v.type) : undefined;
    return x === undefined ? undefined : { value: x, from: [] };
  }
  const a = args[g.inputs.indexOf(v)];
  return a?.known === undefined ? undefined : { value: a.known, from: a.knownFrom ?? [] };
}

function countingLoop(condG: Graph, bodyG: Graph, args: Rec[], n: number, maxIterations: number): { c: Counting; from: readonly number[] } | null {
  if (condG.nodes.length > 3 || condG.outputs.length !== 1) return null;
  const cmp = condG.outputs[0]!.producer;
  if (!cmp || !["less", "lessEqual", "greater", "greaterEqual", "notEqual"].includes(cmp.op)) return null;
  const [a, b] = cmp.inputs as [Value, Value];
  const k = condG.inputs.indexOf(a);
  const bound = numberOf(b, condG, args);
  if (k < 0 || k >= n || !bound || a.type.shape.length !== 0) return null;
  const inc = increment(bodyG, k, args);
  if (!inc || inc.step === 0) return null;
  return { c: { k, cmp: cmp.op, bound: bound.value, step: inc.step, dtype: a.type.dtype, maxIterations }, from: [...bound.from, ...inc.from] };
}

/** Runs the counter: the trip count and the counter's final value (null past 10^7 iterations). */
export function tripCount(c: Counting, init: number): { count: number; last: number } | null {
  const test = (i: number) => (c.cmp === "less" ? i < c.bound : c.cmp === "lessEqual" ? i <= c.bound : c.cmp === "greater" ? i > c.bound : c.cmp === "greaterEqual" ? i >= c.bound : i !== c.bound);
  // (the counter's own arithmetic: float32 sums rounded, int32 sums wrapped)
  const round = c.dtype === "float32" ? Math.fround : (x: number) => x | 0;
  let count = 0;
  let i = init;
  for (; test(i) && count < c.maxIterations; i = round(i + c.step)) if (++count > 1e7) return null;
  return { count, last: i };
}

/** Sets an int32 word to 0, or adds 1 to it (a loop's iteration counter). */
function counterKernel(rec: RecordingDevice, slot: number, op: "zero" | "increment"): void {
  const source = `${bindings([["c", "w", "i32"]]).wgsl}
@compute @workgroup_size(1) fn main() { c[0] = ${op === "zero" ? "0" : "c[0] + 1"}; }`;
  launch(rec, lazy(`counter|${op}`, () => ({ source, layout: "w", label: `counter_${op}` })), [slot], null, [1, 1, 1]);
}

function recordWhile(ctx: Ctx, node: Node, args: Rec[]): Rec[] {
  const { rec } = ctx;
  const n = node.attrs.numLoopVars as number;
  const maxIterations = (node.attrs.maxIterations as number | undefined) ?? Infinity;
  const [condG, bodyG] = node.regions as [Graph, Graph];
  const inner = { ...ctx, topLevel: false };
  // A counting loop whose start and bound are known runs a fixed trip count.
  const counting = countingLoop(condG, bodyG, args, n, maxIterations);
  const init = counting ? args[counting.c.k]! : null;
  const trip = counting && init!.known !== undefined ? tripCount(counting.c, init!.known) : null;
  if (trip) for (const i of [...counting!.from, ...(init!.knownFrom ?? [])]) ctx.dependsOn.add(i);
  // Loop variables live in slots of their own; stacks in buffers sized for the whole loop.
  const stackVars = bodyG.outputs.slice(0, n).map((v, k) => v.producer?.op === "stackPush" && v.producer.inputs[0] === bodyG.inputs[k]);
  const iter = stackVars.some(Boolean) ? rec.alloc(4) : null;
  if (iter !== null && !trip) throw new Unplannable("a loop pushing onto an iteration stack has a trip count known only when it runs");
  const vars: Rec[] = args.slice(0, n).map((a, k) => {
    if (!stackVars[k]) {
      if (a.stack?.iter != null) throw new Unplannable("a stack growing in an outer loop is an inner loop's variable");
      return copyOf(rec, a);
    }
    const rows = a.shape[0]!;
    if (rows < 0 || a.stack?.iter != null) throw new Unplannable("a loop's stack starts with rows known only when it runs");
    const rowSize = size(a.shape.slice(1));
    const cap = rows + trip!.count;
    const buf = copyOf(rec, a, rows * rowSize, cap * rowSize);
    return { id: buf.id, shape: [-1, ...a.shape.slice(1)], dtype: a.dtype, stack: { cap, rowSize, base: rows, iter } };
  });
  const invariants = args.slice(n);
  if (iter !== null) counterKernel(rec, iter, "zero");
  let pred = -1;
  const cond = rec.nested(() => {
    const [p] = recordGraph(inner, condG, [...vars, ...invariants]);
    if (p!.dtype !== "bool" || size(p!.shape) !== 1) throw new Unplannable("a loop predicate that is not one bool");
    pred = p!.id;
  });
  const carry: [number, number, number][] = [];
  const body = rec.nested(() => {
    const outs = recordGraph(inner, bodyG, [...vars, ...invariants]);
    outs.forEach((o, i) => {
      if (o.id === vars[i]!.id) return;
      if (stackVars[i]) throw new Unplannable("a loop's stack is replaced, not pushed onto");
      // (through a copy: a result may be another variable's slot, overwritten by an earlier carry)
      carry.push([copyOf(rec, o).id, vars[i]!.id, 4 * size(o.shape)]);
    });
    if (iter !== null) counterKernel(rec, iter, "increment");
  });
  rec.steps.push({ k: "while", cond, pred, body, carry, maxIterations, count: trip ? trip.count : null });
  // After the loop: stacks have their final rows; counters with a known start and step their final value.
  return vars.map((v, k) => {
    if (v.stack) {
      const rows = v.stack.base + trip!.count;
      return { id: v.id, shape: [rows, ...v.shape.slice(1)], dtype: v.dtype, stack: { ...v.stack, base: rows, iter: null } };
    }
    const a = args[k]!;
    const inc = trip && a.known !== undefined ? increment(bodyG, k, args) : undefined;
    if (!inc) return v;
    const round = v.dtype === "float32" ? Math.fround : (x: number) => x | 0;
    let last = a.known!;
    for (let i = 0; i < trip!.count; i++) last = round(last + inc.step);
    return { ...v, known: last, knownFrom: [...(a.knownFrom ?? []), ...inc.from, ...counting!.from, ...(init!.knownFrom ?? [])] };
  });
}

function recordCond(ctx: Ctx, node: Node, args: Rec[]): Rec[] {
  const { rec } = ctx;
  const [p, ...operands] = args;
  if (p!.dtype !== "bool" || size(p!.shape) !== 1) throw new Unplannable("a branch predicate that is not one bool");
  if (operands.some((a) => a.stack?.iter != null)) throw new Unplannable("a branch uses a stack its loop grows");
  const inner = { ...ctx, topLevel: false };
  const outs = node.outputs.map((v) => {
    checkStatic("cond", [v.type]);
    return { id: rec.alloc(4 * size(v.type.shape)), shape: v.type.shape, dtype: v.type.dtype } as Rec;
  });
  const branch = (g: Graph) =>
    rec.nested(() => {
      const r = recordGraph(inner, g, operands);
      r.forEach((o, i) => rec.copy(o.id, 0, outs[i]!.id, 0, 4 * size(o.shape)));
    });
  const [thenG, elseG] = node.regions as [Graph, Graph];
  rec.steps.push({ k: "cond", pred: p!.id, then: branch(thenG), else: branch(elseG) });
  return outs;
}
