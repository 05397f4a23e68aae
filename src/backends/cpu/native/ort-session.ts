/**
 * Synchronous single-model sessions of onnxruntime-node's native binding, for the CPU
 * backend's heavy kernels (native-kernels.ts). onnxruntime-node is an optional dependency:
 * where it cannot be loaded (not installed, a browser, STAGECRAFT_NATIVE=0) `nativeRuntime()`
 * is null and the WebAssembly kernels run everything.
 *
 * The public `InferenceSession.run` of onnxruntime-node only wraps the binding's synchronous
 * `run(feeds, fetches, options)` in a Promise; the binding is what an eager op, which must
 * return its result, can call. Outputs are preallocated (the native kernel writes into the
 * op's own output storage). The binding refuses views of a SharedArrayBuffer: callers pass
 * ordinary typed arrays (see `unshared`).
 */
import { createRequire } from "node:module";
import { encodeModel, type OnnxGraph } from "./onnx-model.js";

interface OrtTensorCtor {
  new (type: "float32" | "float64", data: Float32Array | Float64Array, dims: readonly number[]): object;
}
interface BindingSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: object): void;
  run(feeds: Record<string, object>, fetches: Record<string, object | null>, options: object): Record<string, { data: unknown }>;
  dispose(): void;
}
interface NativeRuntime {
  Session: new () => BindingSession;
  Tensor: OrtTensorCtor;
}

let runtime: NativeRuntime | null | undefined;

/** onnxruntime-node's binding and tensor class, or null where it cannot be loaded or is disabled. */
export function nativeRuntime(): NativeRuntime | null {
  if (runtime !== undefined) return runtime;
  runtime = null;
  const env = typeof process !== "undefined" ? process.env.STAGECRAFT_NATIVE : undefined;
  if (env === "0" || env === "false") return runtime;
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

/** Test hook: forget the loaded runtime (so that STAGECRAFT_NATIVE is read again). */
export function resetNativeRuntime(value?: null): void {
  runtime = value;
}

export type Dense = Float32Array | Float64Array;

/** One loaded model, run synchronously with preallocated outputs. */
export class NativeSession {
  private readonly s: BindingSession;
  private readonly rt: NativeRuntime;

  constructor(rt: NativeRuntime, graph: OnnxGraph, readonly threads: number) {
    this.rt = rt;
    const bytes = encodeModel(graph);
    this.s = new rt.Session();
    this.s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: "all",
      // a thread of ours that spins would take the core the caller needs next
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    });
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
    this.s.run(feeds, fetches, {});
  }
}

/** Sessions by key (the model and the thread count), built once per key, least recently used dropped past `limit`. */
export class SessionCache {
  private readonly map = new Map<string, NativeSession>();
  constructor(private readonly limit = 256) {}

  get(key: string, threads: number, build: () => OnnxGraph): NativeSession | null {
    const rt = nativeRuntime();
    if (rt === null) return null;
    const full = `${threads}|${key}`;
    let s = this.map.get(full);
    if (s !== undefined) {
      this.map.delete(full);
      this.map.set(full, s);
      return s;
    }
    s = new NativeSession(rt, build(), threads);
    this.map.set(full, s);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
    return s;
  }

  get size(): number {
    return this.map.size;
  }
}

/** Non-shared scratch arrays by slot, grown as needed (the binding refuses shared memory). */
const scratch: Float32Array[] = [];

/**
 * `x` itself when it is an ordinary array; otherwise a copy in scratch slot `slot` (when
 * `copy`, with x's values). The slot's storage is reused by the next call that takes it.
 */
export function unshared(x: Float32Array, slot: number, copy: boolean): Float32Array {
  if (!(x.buffer instanceof SharedArrayBuffer)) return x;
  let s = scratch[slot];
  if (s === undefined || s.length < x.length) scratch[slot] = s = new Float32Array(Math.max(x.length, (s?.length ?? 0) * 2));
  const v = s.subarray(0, x.length);
  if (copy) v.set(x);
  return v;
}
