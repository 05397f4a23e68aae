/**
 * Staged functions compiled for the webgpu device. A graph is specialized once per input signature:
 *
 * - it is prepared as for the CPU's compiled executor (exec/prepare.ts: concrete types, the
 *   optimizer's passes, elementwise chains fused into fusedElementwise nodes, each of which becomes
 *   one WGSL kernel);
 * - every node's WebGPU kernel is run once against a recorder instead of the device: the kernels'
 *   buffers become slots and their dispatches steps of a plan, with parameters fixed (shapes are
 *   known), uploaded once;
 * - slots are planned: graph inputs and variables are bound per call, outputs and variable
 *   assignments get fresh buffers per call (tensors leave the call), intermediates share
 *   persistent scratch buffers whose lifetimes do not overlap, constants are written once;
 * - calls are inlined; while loops and conds become steps the device's runtime runs itself: a loop
 *   reads its one-element predicate each iteration (or, when its trip count is known from
 *   constants, reads nothing), its variables stay in GPU buffers;
 * - a call of the function is one command: the runtime records the whole plan into its open
 *   command buffer and submits it.
 *
 * A graph with something a plan cannot hold (a host op such as hostCall or print, iteration stacks,
 * shapes known only at run time, float64/int64 values, assignments inside regions) is not planned:
 * it runs node by node on the device's kernels (webgpu-executor.ts).
 */
import type { DType } from "../core/dtype.js";
import { atNode } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import type { TensorType } from "../core/tensor-type.js";
import type { Variable } from "../core/variable.js";
import { getOp } from "../ops/registry.js";
import type { FunctionLibrary, Graph, Node, Value } from "../graph/ir.js";
import type { GpuDevice, KernelDevice, KernelSource } from "../backends/webgpu/device.js";
import type { PlanStep } from "../backends/webgpu/protocol.js";
import type { GpuArray } from "../backends/webgpu/kernels/common.js";
import type { WebGpuBackend, WebGpuEntry } from "../backends/webgpu/backend.js";
import { GpuStorage, onGpu } from "../backends/webgpu/storage.js";
import { sizeClass } from "../backends/webgpu/runtime.js";
import { prepareForExecution } from "./prepare.js";

/** Raised while recording: the graph cannot be planned (it runs node by node instead). */
export class Unplannable extends Error {}

type SlotKind = "input" | "variable" | "output" | "scratch" | "const" | "error";

interface Slot {
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

const MAX_INLINE_DEPTH = 16;

/** A KernelDevice that records kernels' work into plan steps over slots. */
class Recorder implements KernelDevice {
  readonly slots: Slot[] = [];
  /** The step list being recorded (a loop body or branch while recording one). */
  steps: PlanStep[] = [];
  readonly errorBuffer: number;

  constructor(readonly dev: GpuDevice) {
    this.errorBuffer = this.slot("error", 16);
  }

  get limits() {
    return this.dev.limits;
  }

  slot(kind: SlotKind, bytes: number, extra: Partial<Slot> = {}): number {
    this.slots.push({ kind, bytes, first: Infinity, last: -1, ...extra });
    return this.slots.length - 1;
  }

  alloc(bytes: number): number {
    return this.slot("scratch", Math.max(4, bytes));
  }
  free(): void {
    // (lifetimes come from the uses recorded in the steps)
  }
  write(id: number, data: ArrayBufferView, offset = 0): void {
    const s = this.slots[id]!;
    if (s.kind !== "scratch" || offset !== 0 || s.data) throw new Unplannable("a kernel writes host data into a buffer twice");
    s.kind = "const";
    s.data = data;
  }
  kernel(k: KernelSource): number {
    return this.dev.kernel(k);
  }
  run(kernel: number, buffers: number[], params: Uint32Array | null, groups: readonly [number, number, number]): void {
    this.steps.push({ k: "run", kernel, slots: buffers.slice(), params, groups });
  }
  copy(src: number, srcOffset: number, dst: number, dstOffset: number, bytes: number): void {
    if (bytes > 0) this.steps.push({ k: "copy", src, srcOffset, dst, dstOffset, bytes });
  }
  check(make: (value: number, aux: number) => Error): number {
    return this.dev.check(make, true);
  }

  /** Records `fn` into a fresh step list, which is returned. */
  nested(fn: () => void): PlanStep[] {
    const outer = this.steps;
    this.steps = [];
    try {
      fn();
      return this.steps;
    } finally {
      this.steps = outer;
    }
  }
}

/** A value during recording: its slot, shape and dtype (and its number when it is a known scalar constant). */
interface Rec extends GpuArray {
  known?: number;
}

/** Values of nodes whose outputs are known numbers at plan time (scalar constants and fills). */
function knownScalar(node: Node, types: readonly TensorType[]): number | undefined {
  if (types.length !== 1 || types[0]!.shape.length !== 0) return undefined;
  if (node.op === "constant") return (node.attrs.values as number[])[0];
  if (node.op === "fill") return node.attrs.value as number;
  return undefined;
}

interface Ctx {
  rec: Recorder;
  library: FunctionLibrary;
  depth: number;
  /** Variables assigned so far at the top level: later reads see the assigned value. */
  assigned: Map<Variable, Rec>;
  assignments: [Variable, Rec][];
  variableSlots: Map<Variable, number>;
  topLevel: boolean;
  /** Counting loops whose trip count each call computes from an input (runPlan's counts). */
  counts: { input: number; counting: Counting }[];
}

function types(recs: readonly Rec[]): TensorType[] {
  return recs.map((r) => ({ shape: r.shape, dtype: r.dtype }));
}

function checkStatic(op: string, t: readonly TensorType[]): void {
  for (const x of t) {
    if (x.shape.some((d) => d < 0)) throw new Unplannable(`${op} has a shape known only at run time`);
    if (!onGpu(x.dtype)) throw new Unplannable(`${op} has a ${x.dtype} value`);
  }
}

function recordGraph(ctx: Ctx, graph: Graph, inputs: Rec[]): Rec[] {
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
    case "call": {
      if (ctx.depth >= MAX_INLINE_DEPTH) throw new Unplannable("calls nested too deep to inline (recursion)");
      return recordGraph({ ...ctx, depth: ctx.depth + 1 }, ctx.library.get(node.attrs.callee as string), args);
    }
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
  }
  const def = getOp(node.op);
  const entry = def.kernels.webgpu as WebGpuEntry | undefined;
  if (!entry?.gpu) throw new Unplannable(`${node.op} runs on the host`);
  checkStatic(node.op, types(args));
  const outTypes = def.infer(types(args), node.attrs);
  checkStatic(node.op, outTypes);
  const outs = entry.gpu(rec, args, node.attrs, outTypes) as Rec[];
  const known = knownScalar(node, outTypes);
  return outs.map((o, i) => ({ id: o.id, shape: outTypes[i]!.shape, dtype: outTypes[i]!.dtype, ...(known !== undefined ? { known } : {}) }));
}

function size(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** A fresh scratch slot holding a copy of `r` (appended to the current steps). */
function copyOf(rec: Recorder, r: Rec): Rec {
  const bytes = 4 * size(r.shape);
  const id = rec.alloc(bytes);
  rec.copy(r.id, 0, id, 0, bytes);
  return { id, shape: r.shape, dtype: r.dtype };
}

function recordWhile(ctx: Ctx, node: Node, args: Rec[]): Rec[] {
  const { rec } = ctx;
  const n = node.attrs.numLoopVars as number;
  const maxIterations = (node.attrs.maxIterations as number | undefined) ?? Infinity;
  const [condG, bodyG] = node.regions as [Graph, Graph];
  const inner = { ...ctx, topLevel: false };
  // The loop variables live in slots of their own, initialized from the node's inputs.
  const vars = args.slice(0, n).map((a) => copyOf(rec, a));
  const invariants = args.slice(n);
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
      // (through a copy: a result may be another variable's slot, overwritten by an earlier carry)
      carry.push([copyOf(rec, o).id, vars[i]!.id, 4 * size(o.shape)]);
    });
  });
  // A counting loop runs its trip count without reading its predicate: known now when the counter
  // starts from a constant, per call when it starts from an input whose value is on the host.
  const counting = countingLoop(condG, bodyG, args, n, maxIterations);
  let count: number | null = null;
  let countAt = -1;
  if (counting) {
    const init = args[counting.k]!;
    const slot = rec.slots[init.id]!;
    if (init.known !== undefined) count = tripCount(counting, init.known);
    else if (slot.kind === "input") {
      countAt = ctx.counts.length;
      ctx.counts.push({ input: slot.input!, counting });
    }
  }
  rec.steps.push({ k: "while", cond, pred, body, carry, maxIterations, count, countAt });
  return vars;
}

/** A counting loop: the predicate compares a loop variable with a number, the body adds a number to it. */
interface Counting {
  /** The counter's index among the loop variables. */
  k: number;
  cmp: string;
  bound: number;
  step: number;
  dtype: DType;
  maxIterations: number;
}

/**
 * Recognizes a counting loop (its predicate `less`/`lessEqual`/`greater`/`greaterEqual`/`notEqual`
 * of a loop variable and a number, its body adding a number to that variable); null otherwise.
 */
function countingLoop(condG: Graph, bodyG: Graph, args: Rec[], n: number, maxIterations: number): Counting | null {
  if (condG.nodes.length > 3 || condG.outputs.length !== 1) return null;
  const cmp = condG.outputs[0]!.producer;
  if (!cmp || !["less", "lessEqual", "greater", "greaterEqual", "notEqual"].includes(cmp.op)) return null;
  // a number: a constant node of the region, or a known input of the loop (an invariant)
  const numberOf = (v: Value, g: Graph): number | undefined => {
    if (v.producer) return v.producer.outputs.length === 1 ? knownScalar(v.producer, [v.type]) : undefined;
    return args[g.inputs.indexOf(v)]?.known;
  };
  const [a, b] = cmp.inputs as [Value, Value];
  const k = condG.inputs.indexOf(a);
  const bound = numberOf(b, condG);
  if (k < 0 || k >= n || bound === undefined || a.type.shape.length !== 0) return null;
  const add = bodyG.outputs[k]!.producer;
  if (!add || add.op !== "add" || add.inputs[0] !== bodyG.inputs[k]) return null;
  const step = numberOf(add.inputs[1]!, bodyG);
  if (step === undefined || step === 0) return null;
  return { k, cmp: cmp.op, bound, step, dtype: a.type.dtype, maxIterations };
}

/** The trip count of a counting loop from its counter's initial value (null past 10^7 iterations). */
function tripCount(c: Counting, init: number): number | null {
  const test = (i: number) => (c.cmp === "less" ? i < c.bound : c.cmp === "lessEqual" ? i <= c.bound : c.cmp === "greater" ? i > c.bound : c.cmp === "greaterEqual" ? i >= c.bound : i !== c.bound);
  // (the counter's own arithmetic: float32 sums rounded, int32 sums wrapped)
  const round = c.dtype === "float32" ? Math.fround : (x: number) => x | 0;
  let count = 0;
  for (let i = init; test(i) && count < c.maxIterations; i = round(i + c.step)) if (++count > 1e7) return null;
  return count;
}

function recordCond(ctx: Ctx, node: Node, args: Rec[]): Rec[] {
  const { rec } = ctx;
  const [p, ...operands] = args;
  if (p!.dtype !== "bool" || size(p!.shape) !== 1) throw new Unplannable("a branch predicate that is not one bool");
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

// ---------------------------------------------------------------------------------------------
// Planning slots

/** Sets every slot's live range; a slot used inside a loop or branch lives across all of it. */
function liveRanges(rec: Recorder, steps: PlanStep[]): void {
  // Positions: each step one, in order, nested steps right after their control step.
  const span = new Map<PlanStep, [number, number]>();
  let pos = 0;
  const number = (list: PlanStep[]) => {
    for (const st of list) {
      const start = pos++;
      if (st.k === "while") (number(st.cond), number(st.body));
      else if (st.k === "cond") (number(st.then), number(st.else));
      span.set(st, [start, pos - 1]);
    }
  };
  number(steps);
  const touch = (slot: number, [from, to]: [number, number]) => {
    const s = rec.slots[slot]!;
    s.first = Math.min(s.first, from);
    s.last = Math.max(s.last, to);
  };
  // A use inside a control step counts over the outermost control step's whole span.
  const walk = (list: PlanStep[], outer: [number, number] | null) => {
    for (const st of list) {
      const range = outer ?? span.get(st)!;
      if (st.k === "run") for (const x of st.slots) touch(x, range);
      else if (st.k === "copy") (touch(st.src, range), touch(st.dst, range));
      else {
        touch(st.pred, range);
        if (st.k === "while") {
          for (const [x, y] of st.carry) (touch(x, range), touch(y, range));
          (walk(st.cond, range), walk(st.body, range));
        } else (walk(st.then, range), walk(st.else, range));
      }
    }
  };
  walk(steps, null);
}

/** Physical buffers for scratch slots: slots of one size class whose live ranges do not overlap share one. */
function assignScratch(rec: Recorder, pinned: Set<number>): { buffers: { bytes: number }[]; of: Map<number, number> } {
  const buffers: { bytes: number; freeAfter: number }[] = [];
  const of = new Map<number, number>();
  const order = rec.slots.map((s, i) => i).filter((i) => rec.slots[i]!.kind === "scratch" && !pinned.has(i));
  order.sort((a, b) => rec.slots[a]!.first - rec.slots[b]!.first);
  for (const i of order) {
    const s = rec.slots[i]!;
    if (s.last < 0) continue; // (never used)
    const cls = sizeClass(s.bytes);
    let b = buffers.findIndex((x) => x.bytes === cls && x.freeAfter < s.first);
    if (b < 0) {
      buffers.push({ bytes: cls, freeAfter: -1 });
      b = buffers.length - 1;
    }
    buffers[b]!.freeAfter = s.last;
    of.set(i, b);
  }
  return { buffers, of };
}

// ---------------------------------------------------------------------------------------------
// Plans

interface LeavingValue {
  slot: number;
  shape: readonly number[];
  dtype: DType;
}
type Leaving = { input: number; shape: readonly number[] } | LeavingValue;

export class GpuPlan {
  private readonly id: number;
  /** Persistent buffers: scratch and constants (real ids). */
  private readonly owned: { id: number; bytes: number }[] = [];
  /** For each slot: how a call binds it. */
  private readonly binding: ((inputs: Tensor[], fresh: Map<number, number>) => number)[];
  private readonly fresh: number[];

  constructor(
    private readonly backend: WebGpuBackend,
    private readonly rec: Recorder,
    steps: PlanStep[],
    /** Graph outputs: an input's storage (seen with the output's shape), or a value leaving in a fresh buffer. */
    private readonly outputs: Leaving[],
    private readonly assignments: [Variable, Leaving][],
    private readonly counts: { input: number; counting: Counting }[],
  ) {
    const dev = backend.dev;
    const leaving = new Set<number>();
    for (const o of [...outputs, ...assignments.map((a) => a[1])]) if ("slot" in o) leaving.add(o.slot);
    for (const i of leaving) rec.slots[i]!.kind = "output";
    liveRanges(rec, steps);
    const { buffers, of } = assignScratch(rec, leaving);
    const scratch = buffers.map((b) => {
      const id = dev.alloc(b.bytes);
      this.owned.push({ id, bytes: b.bytes });
      return id;
    });
    this.fresh = [...leaving];
    this.binding = rec.slots.map((s, i) => {
      switch (s.kind) {
        case "error":
          return () => dev.errorBuffer;
        case "input":
          return (ins) => backend.array(ins[s.input!]!, "stage").id;
        case "variable":
          return () => backend.array(s.variable!.storedValue, "readVariable").id;
        case "output":
          return (_ins, fresh) => fresh.get(i)!;
        case "const": {
          const id = dev.alloc(s.bytes);
          dev.write(id, s.data!);
          this.owned.push({ id, bytes: s.bytes });
          return () => id;
        }
        case "scratch": {
          const b = of.get(i);
          const id = b === undefined ? 0 : scratch[b]!;
          return () => id;
        }
      }
    });
    this.id = dev.plan(steps);
  }

  get steps(): number {
    return this.rec.steps.length;
  }

  run(inputs: Tensor[]): Tensor[] {
    const dev = this.backend.dev;
    const fresh = new Map<number, number>();
    for (const i of this.fresh) fresh.set(i, dev.alloc(this.rec.slots[i]!.bytes));
    const ids = this.binding.map((b) => b(inputs, fresh));
    // trip counts from counters whose initial values are on the host (else the loop reads its predicate)
    const counts = this.counts.map(({ input, counting }) => {
      const t = inputs[input]!;
      const host = t._data ?? (t._buffer instanceof GpuStorage ? t._buffer.host : null);
      return host ? tripCount(counting, host[0]!) : null;
    });
    dev.runPlan(this.id, ids, counts);
    const made = new Map<number, Tensor>();
    const leave = (o: Leaving): Tensor => {
      if ("input" in o) {
        const x = inputs[o.input]!;
        const same = x.shape.length === o.shape.length && x.shape.every((d, i) => d === o.shape[i]);
        // (an input's storage seen with another shape: a view, sharing it)
        return same ? x : this.backend.tensor(this.backend.storage(x), o.shape, x.dtype, "webgpu:0");
      }
      let t = made.get(o.slot);
      if (!t) {
        const storage = new GpuStorage(dev, fresh.get(o.slot)!, size(o.shape), o.dtype, null);
        made.set(o.slot, (t = this.backend.tensor(storage, o.shape, o.dtype, "webgpu:0")));
      }
      return t;
    };
    for (const [v, o] of this.assignments) v.setStoredValue(leave(o));
    return this.outputs.map(leave);
  }

  dispose(): void {
    const dev = this.backend.dev;
    for (const b of this.owned) dev.free(b.id, b.bytes);
    dev.dropPlan(this.id);
  }
}

/** Plans `graph` for inputs of these types, or returns why it cannot be planned. */
export function planGraph(backend: WebGpuBackend, graph: Graph, library: FunctionLibrary, inputTypes: readonly TensorType[]): GpuPlan | string {
  try {
    checkStatic("stage", inputTypes);
    const prepared = prepareForExecution(graph, library, inputTypes);
    const rec = new Recorder(backend.dev);
    const inputs: Rec[] = inputTypes.map((t, i) => ({ id: rec.slot("input", 4 * size(t.shape), { input: i }), shape: t.shape, dtype: t.dtype }));
    const ctx: Ctx = { rec, library: prepared.library, depth: 0, assigned: new Map(), assignments: [], variableSlots: new Map(), topLevel: true, counts: [] };
    const outs = recordGraph(ctx, prepared.graph, inputs);
    // What leaves the call: inputs as they are; constants and plan-owned values through a fresh copy.
    const leaving = (r: Rec): Leaving => {
      const s = rec.slots[r.id]!;
      if (s.kind === "input") return { input: s.input!, shape: r.shape };
      if (s.kind !== "scratch") r = copyOf(rec, r);
      return { slot: r.id, shape: r.shape, dtype: r.dtype };
    };
    const outputs = outs.map(leaving);
    const assignments = ctx.assignments.map(([v, r]): [Variable, Leaving] => [v, leaving(r)]);
    // (a value leaving twice, or as an output and an assignment, is one tensor: one fresh buffer)
    return new GpuPlan(backend, rec, rec.steps, outputs, assignments, ctx.counts);
  } catch (e) {
    if (e instanceof Unplannable) return e.message;
    throw e;
  }
}
