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
import type { Tensor } from "../core/tensor.js";
import type { TensorType } from "../core/tensor-type.js";
import type { Variable } from "../core/variable.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import type { GpuDevice, KernelSource } from "../backends/webgpu/device.js";
import type { LazyKernel } from "../backends/webgpu/kernels/common.js";
import type { PlanStep } from "../backends/webgpu/protocol.js";
import type { WebGpuBackend } from "../backends/webgpu/backend.js";
import type { Backend } from "../backends/backend.js";
import { GpuStorage, TensorHold } from "../backends/webgpu/storage.js";
import { sizeClass } from "../backends/webgpu/runtime.js";
import { prepareForExecution } from "./prepare.js";
import { checkStatic, copyOf, recordGraph, size, Unplannable, type Ctx, type Rec, type RecordingDevice, type Slot, type SlotKind } from "./webgpu-record.js";

/** A KernelDevice that records kernels' work into plan steps over slots. */
class Recorder implements RecordingDevice {
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
  kernel(k: KernelSource | LazyKernel): number {
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
    dev.runPlan(this.id, ids);
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

/** A plan, and the graph inputs whose values it was specialized on (trip counts of loops). */
export interface PlanResult {
  plan: GpuPlan;
  dependsOn: number[];
}

/**
 * Plans `graph` for these inputs (their types; with `useValues`, the values of int32 scalar inputs
 * held on the host, which may fix loops' trip counts), or returns why it cannot be planned.
 */
export function planGraph(backend: WebGpuBackend, graph: Graph, library: FunctionLibrary, inputs: readonly Tensor[], useValues: boolean): PlanResult | string {
  try {
    const inputTypes: TensorType[] = inputs.map((t) => ({ dtype: t.dtype, shape: t.shape }));
    checkStatic("stage", inputTypes);
    const prepared = prepareForExecution(graph, library, inputTypes);
    const rec = new Recorder(backend.dev);
    const recs: Rec[] = inputs.map((t, i) => {
      const r: Rec = { id: rec.slot("input", 4 * size(t.shape), { input: i }), shape: t.shape, dtype: t.dtype };
      const v = useValues ? hostScalar(t) : undefined;
      return v === undefined ? r : { ...r, known: v, knownFrom: [i] };
    });
    const ctx: Ctx = { rec, backend: backend as unknown as Backend, library: prepared.library, depth: 0, assigned: new Map(), assignments: [], variableSlots: new Map(), topLevel: true, dependsOn: new Set() };
    const outs = recordGraph(ctx, prepared.graph, recs);
    // What leaves the call: inputs as they are; constants and plan-owned values through a fresh copy.
    const leaving = (r: Rec): Leaving => {
      const s = rec.slots[r.id]!;
      if (s.kind === "input") return { input: s.input!, shape: r.shape };
      if (s.kind !== "scratch" || r.stack) r = copyOf(rec, r);
      return { slot: r.id, shape: r.shape, dtype: r.dtype };
    };
    const outputs = outs.map(leaving);
    const assignments = ctx.assignments.map(([v, r]): [Variable, Leaving] => [v, leaving(r)]);
    return { plan: new GpuPlan(backend, rec, rec.steps, outputs, assignments), dependsOn: [...ctx.dependsOn].sort((a, b) => a - b) };
  } catch (e) {
    if (e instanceof Unplannable) return e.message;
    throw e;
  }
}

/** The value of an int32 scalar whose data is on the host (no read from the GPU), else undefined. */
export function hostScalar(t: Tensor): number | undefined {
  if (t.dtype !== "int32" || t.shape.length !== 0) return undefined;
  const host = t._data ?? (t._buffer instanceof TensorHold && !t._buffer.released ? t._buffer.storage.host : null);
  return host ? host[0] : undefined;
}
