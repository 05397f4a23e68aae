/**
 * A graph compiled for concrete input shapes: the generated code's instances (one per
 * re-entrant call), and how its outputs become tensors.
 */
import { executing } from "../../core/errors.js";
import type { TypedArray } from "../../core/dtype.js";
import { currentDevice } from "../../core/device.js";
import { sizeOf } from "../../core/shape.js";
import { Tensor } from "../../core/tensor.js";
import type { TensorType } from "../../core/tensor-type.js";
import type { FunctionLibrary, Graph } from "../../graph/ir.js";
import { isScopedStorage, StackScope, withStackScope } from "../../ops/stack-storage.js";
import { copyStorage } from "../../ops/iteration-stack.js";
import { enterCall, exitCall } from "../call-depth.js";

/** A compiled graph's output: concrete type known at compile time, or null (a Tensor at run time). */
export type OutputDesc = TensorType | null;

/** One instance of the generated code: storage in, storage (static outputs) or Tensors (dynamic ones) out. */
export type RawFn = (ins: TypedArray[], dev: string) => (TypedArray | Tensor)[];

/** Instances (buffer sets) kept per compiled graph for re-entrant calls. */
const MAX_POOLED_INSTANCES = 64;

/** A graph specialized for concrete input shapes. */
export class CompiledGraph {
  /** Output descriptors (set once built). */
  outs: OutputDesc[] = [];
  /** The generated source (for inspection and debugging). */
  source = "";
  /** Output types assumed by recursive callers while this graph was being compiled. */
  assumedOuts: OutputDesc[] | null = null;
  private factory: (() => RawFn) | null = null;
  private readonly pool: RawFn[] = [];
  /** Stack storage scopes of calls from JavaScript (one per re-entrant call). */
  private readonly scopes: StackScope[] = [];
  private wrapShapes: (readonly number[])[] = [];

  constructor(
    readonly graph: Graph,
    readonly library: FunctionLibrary,
    readonly inputTypes: readonly TensorType[],
  ) {}

  get built(): boolean {
    return this.factory !== null;
  }

  /** @internal Installs the generated code. */
  finish(outs: OutputDesc[], source: string, factory: () => RawFn): void {
    this.outs = outs;
    this.source = source;
    this.factory = factory;
    this.wrapShapes = outs.map((o) => (o ? Object.freeze(o.shape.slice()) : []));
  }

  /** Runs on raw storage; outputs are storage (static outputs) or Tensors (dynamic ones). */
  raw(ins: TypedArray[], dev: string): (TypedArray | Tensor)[] {
    const inst = this.pool.length > 0 ? this.pool.pop()! : this.factory!();
    const at = executing.at;
    try {
      return inst(ins, dev);
    } finally {
      executing.at = at;
      // Re-entrant calls (recursion) create more instances; a few are kept for next time.
      if (this.pool.length < MAX_POOLED_INSTANCES) this.pool.push(inst);
    }
  }

  /** `raw` as a call node of another graph runs it: one call deeper (exec/call-depth.ts). */
  call(ins: TypedArray[], dev: string): (TypedArray | Tensor)[] {
    enterCall(this.graph.name);
    try {
      return this.raw(ins, dev);
    } finally {
      exitCall();
    }
  }

  /** `rawTensors` as a call node runs it. */
  callTensors(ins: TypedArray[], dev: string): Tensor[] {
    enterCall(this.graph.name);
    try {
      return this.rawTensors(ins, dev);
    } finally {
      exitCall();
    }
  }

  /** Like raw, with every output as a Tensor. */
  rawTensors(ins: TypedArray[], dev: string): Tensor[] {
    return this.wrap(this.raw(ins, dev), dev);
  }

  private wrap(outs: (TypedArray | Tensor)[], dev: string): Tensor[] {
    const res = new Array<Tensor>(outs.length);
    for (let i = 0; i < outs.length; i++) {
      const d = this.outs[i];
      res[i] = d ? new Tensor(outs[i] as TypedArray, isStack(d) ? runtimeShape(d, outs[i] as TypedArray) : this.wrapShapes[i]!, d.dtype, dev) : (outs[i] as Tensor);
    }
    return res;
  }

  /**
   * Runs the graph on concrete tensors (the entry from JavaScript): stacks it grows take their
   * storage from a scope of this graph, reused by its next call, so outputs in that storage
   * are copied (ops/stack-storage.ts).
   */
  run(inputs: Tensor[]): Tensor[] {
    const n = inputs.length;
    const ins = new Array<TypedArray>(n);
    for (let i = 0; i < n; i++) ins[i] = inputs[i]!.concrete();
    const dev = currentDevice();
    const scope = this.scopes.pop() ?? new StackScope();
    try {
      return withStackScope(scope, () => {
        const outs = this.raw(ins, dev);
        for (let i = 0; i < outs.length; i++) {
          const o = outs[i]!;
          outs[i] = o instanceof Tensor ? leavingTensor(o) : leavingStorage(o);
        }
        return this.wrap(outs, dev);
      });
    } finally {
      if (this.scopes.length < MAX_POOLED_INSTANCES) this.scopes.push(scope);
    }
  }
}

/**
 * A stack (ops/iteration-stack.ts): only the leading dim is unknown, the rows have a known,
 * non-empty shape, so the storage's length tells the row count. Compiled code passes stacks
 * as storage like any static value; nodes that read or write them run their shape rule and
 * kernel at run time ("runtime" strategy), and loops carrying them compile once.
 */
export function isStack(t: TensorType): boolean {
  return t.shape.length >= 1 && t.shape[0] === -1 && t.shape.slice(1).every((d) => d > 0);
}

/** The run-time shape of storage `data` of static type `t` (a stack's rows from its length). */
export function runtimeShape(t: TensorType, data: { length: number }): number[] {
  if (!isStack(t)) return t.shape.slice();
  const rest = t.shape.slice(1);
  return [data.length / sizeOf(rest), ...rest];
}

/** Storage leaving a compiled call: copied if a stack scope owns it (it is reused after the call). */
// A value kept beyond the call (a variable, a residual record) may also be a graph input in a
// caller's planned buffers (its arena), which the caller overwrites later: copied too.
// (copies keep the residual records a stack's rows stand for: ops/iteration-stack.ts)
export function leavingStorage(x: TypedArray): TypedArray {
  return reusedStorage(x) ? copyStorage(x) : x;
}

/**
 * Storage whose contents change while the object stays the same: a compiled instance's planned
 * buffers (a caller's, passed in as an argument) and stack-scope storage. Generated code that
 * keeps a copy of an input (a WebAssembly operand slot) may skip copying it again only when the
 * same storage comes back and it is not such storage.
 */
export function reusedStorage(x: TypedArray): boolean {
  return isScopedStorage(x.buffer) || arenas.has(x.buffer);
}

export function leavingTensor(t: Tensor): Tensor {
  const data = t.concrete();
  return isScopedStorage(data.buffer) || arenas.has(data.buffer) ? new Tensor(copyStorage(data), t.shape, t.dtype, t.device) : t;
}

/** The planned-buffer memory of every compiled instance. */
export const arenas = new WeakSet<ArrayBufferLike>();
