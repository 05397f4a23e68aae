/**
 * Synchronous onnxruntime-node sessions, for callers that must return their result at once (an
 * eager op's kernel, a staged function's call). The public `InferenceSession.run` of
 * onnxruntime-node only wraps its native binding's synchronous `run(feeds, fetches, options)`
 * in a Promise (dist/backend.js); this module calls the binding itself. Outputs are
 * preallocated by the caller (the native kernel writes into the op's own output storage). The
 * binding refuses views of a SharedArrayBuffer: callers pass ordinary typed arrays (`unshared`).
 *
 * onnxruntime-node is an optional dependency: `syncRuntime()` is null where it cannot be loaded.
 */
import { createRequire } from "../core/platform/node.js";
import { OnnxError } from "./errors.js";

interface OrtTensorCtor {
  new (type: "float32" | "float64", data: Float32Array | Float64Array, dims: readonly number[]): object;
}
interface BindingSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: object): void;
  /**
   * Runs the model. Without `options` the session's default run options serve (made once when it
   * was loaded); with them, the binding makes and fills new ones at every call (~0.2 us, measured
   * on a tiny model: the public InferenceSession.run always passes an object).
   */
  run(feeds: Record<string, object>, fetches: Record<string, object | null>, options?: object): Record<string, { data: unknown }>;
  dispose(): void;
}
interface SyncRuntime {
  Session: new () => BindingSession;
  Tensor: OrtTensorCtor;
}

let runtime: SyncRuntime | null | undefined;

/**
 * Whether onnxruntime-node is installed where this module can find it, without loading it
 * (loading its binding and its first session cost most of a second: the "auto" default engine
 * loads it only when a graph gets warm; api/wiring.ts). False in browsers (no require).
 */
export function onnxRuntimeInstalled(): boolean {
  if (runtime !== undefined) return runtime !== null;
  try {
    const req = createRequire(import.meta.url) as unknown as { resolve?: (id: string) => string };
    return typeof req.resolve === "function" && typeof req.resolve("onnxruntime-node/dist/binding.js") === "string";
  } catch {
    return false;
  }
}

/** onnxruntime-node's native binding and its tensor class, or null where it cannot be loaded. */
export function syncRuntime(): SyncRuntime | null {
  if (runtime !== undefined) return runtime;
  runtime = null;
  try {
    const req = createRequire(import.meta.url);
    const b = req("onnxruntime-node/dist/binding.js") as { binding: { InferenceSession: new () => BindingSession }; initOrt(): void };
    const common = req("onnxruntime-common") as { Tensor: OrtTensorCtor };
    b.initOrt();
    runtime = { Session: b.binding.InferenceSession, Tensor: common.Tensor };
  } catch {
    runtime = null;
  }
  return runtime;
}

export type Dense = Float32Array | Float64Array;

/** One loaded model, run synchronously with preallocated outputs. */
export class SyncSession {
  private readonly s: BindingSession;

  constructor(private readonly rt: SyncRuntime, model: Uint8Array, readonly threads: number) {
    this.s = new rt.Session();
    try {
      this.s.loadModel(model.buffer, model.byteOffset, model.byteLength, {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: "sequential",
        graphOptimizationLevel: "all",
        // a thread of ours that spins would take the core the caller needs next
        extra: { session: { intra_op: { allow_spinning: "0" } } },
      });
    } catch (e) {
      throw new OnnxError(`onnxruntime could not load the model: ${(e as Error).message}`, "onnxruntime");
    }
  }

  /** Runs the model: inputs and outputs by name, as [data, dims]; outputs are written in place. */
  run(inputs: Record<string, [Dense, readonly number[]]>, outputs: Record<string, [Dense, readonly number[]]>): void {
    const T = this.rt.Tensor;
    const feeds: Record<string, object> = {};
    const fetches: Record<string, object> = {};
    for (const k in inputs) {
      const [d, dims] = inputs[k]!;
      feeds[k] = new T(d instanceof Float64Array ? "float64" : "float32", d, dims);
    }
    for (const k in outputs) {
      const [d, dims] = outputs[k]!;
      fetches[k] = new T(d instanceof Float64Array ? "float64" : "float32", d, dims);
    }
    this.s.run(feeds, fetches);
  }
}

/** Sessions by key (the model and the thread count), each built once, the least recently used dropped past `limit`. */
export class SessionCache {
  private readonly map = new Map<string, SyncSession>();
  constructor(private readonly limit = 256) {}

  /** The session of `key` on `threads` threads, built from `model()` the first time; null without onnxruntime. */
  get(key: string, threads: number, model: () => Uint8Array): SyncSession | null {
    const rt = syncRuntime();
    if (rt === null) return null;
    const full = `${threads}|${key}`;
    let s = this.map.get(full);
    if (s !== undefined) {
      this.map.delete(full);
      this.map.set(full, s);
      return s;
    }
    s = new SyncSession(rt, model(), threads);
    this.map.set(full, s);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
    return s;
  }

  get size(): number {
    return this.map.size;
  }
}

/** Non-shared scratch arrays by slot, grown as needed. */
const scratch: Float32Array[] = [];

/**
 * `x` itself when it is an ordinary array; otherwise a view of scratch slot `slot` (holding x's
 * values when `copy`). A slot's storage is reused by the next call that takes it.
 */
export function unshared(x: Float32Array, slot: number, copy: boolean): Float32Array {
  if (!(x.buffer instanceof SharedArrayBuffer)) return x;
  let s = scratch[slot];
  if (s === undefined || s.length < x.length) scratch[slot] = s = new Float32Array(Math.max(x.length, (s?.length ?? 0) * 2));
  const v = s.subarray(0, x.length);
  if (copy) v.set(x);
  return v;
}
