/**
 * The storage of a tensor on the webgpu device, and its lifetime.
 *
 * A GpuStorage holds a GPU buffer (4 bytes per element: f32, i32, or u32 for uint8/bool), a host
 * copy, or both: data made on the host (a tensor literal under `sc.device("webgpu")`, the result of
 * a host-side op) is uploaded the first time a kernel needs it; data read back is kept, so reading
 * a tensor twice costs one transfer. Storage is immutable, so both copies stay equal.
 *
 * float64 and int64 have no WGSL type: their storage stays on the host (never uploaded). Creation,
 * casts, views and residual records work on it; any op that would compute on it on the GPU raises
 * a DtypeError (backend.ts).
 *
 * Lifetime: tensors sharing a storage (views: reshape, identity) each hold one reference.
 * `tensor.dispose()` drops its reference at once; otherwise a FinalizationRegistry drops it when
 * the tensor is garbage collected. The GPU buffer is freed (returned to the runtime's pool) when
 * the last reference goes. `tidy(fn)` disposes the tensors fn made that it does not return.
 */
import type { DType, TypedArray } from "../../core/dtype.js";
import { DtypeError, ValueError } from "../../core/errors.js";
import type { DeviceBuffer, Tensor } from "../../core/tensor.js";
import type { GpuDevice } from "./device.js";
import { SyncReadUnavailable } from "./transport.js";

/** The dtypes stored in GPU buffers (as 32-bit words: bool and uint8 widened to u32). */
const GPU_DTYPES: ReadonlySet<DType> = new Set<DType>(["float32", "int32", "uint8", "bool"]);

/** Whether `dtype` has a 32-bit GPU representation. */
export function onGpu(dtype: DType): boolean {
  return GPU_DTYPES.has(dtype);
}

/**
 * Whether tensors of `dtype` stay in host memory on the webgpu device: WGSL has no 64-bit types
 * (float64, int64, uint64) and, without the shader-f16 feature, no float16; the 8- and 16-bit
 * integers and uint32 have no kernels here yet. Ops that make, move or convert them run on the
 * host; any other op raises hostDtypeMessage's DtypeError.
 */
export function hostDtype(dtype: DType): boolean {
  return !GPU_DTYPES.has(dtype);
}

/** The dtype to cast a host dtype to for the GPU. */
function gpuTwin(dtype: DType): DType {
  return dtype === "float64" || dtype === "float16" ? "float32" : "int32";
}

/** Why `op` cannot compute with `dtype` on the webgpu device, and what to do instead. */
export function hostDtypeMessage(dtype: DType, op: string): string {
  const why = dtype === "float16" ? "float16 has no WGSL type without the shader-f16 feature" : dtype.endsWith("64") ? `${dtype} has no WGSL type` : `${dtype} has no WebGPU kernels`;
  return `${why}, so ${op} cannot compute with ${dtype} on the webgpu device (it never computes ${dtype} in another dtype); cast to ${gpuTwin(dtype)} first, or run it on the CPU (sc.device("cpu", ...) or x.to("cpu"))`;
}

/** Host data as the words a GPU buffer holds (bool/uint8 widened to u32). */
export function toWords(data: TypedArray, dtype: DType): Float32Array | Int32Array | Uint32Array {
  if (dtype === "float32") return data instanceof Float32Array ? data : Float32Array.from(data);
  if (dtype === "int32") return data instanceof Int32Array ? data : Int32Array.from(data);
  return Uint32Array.from(data);
}

/** GPU words back as the host storage of `dtype`. */
export function fromWords(words: ArrayBuffer, dtype: DType): TypedArray {
  if (dtype === "float32") return new Float32Array(words);
  if (dtype === "int32") return new Int32Array(words);
  return Uint8Array.from(new Uint32Array(words));
}

export class GpuStorage {
  /** References held by tensors (and plans); the buffer is freed when they are gone. */
  refs = 0;
  private freed = false;

  constructor(
    readonly dev: GpuDevice,
    /** The GPU buffer, or 0 while the data is only on the host. */
    public id: number,
    readonly size: number,
    readonly dtype: DType,
    /** The host copy (made on the host, or read back), or null. */
    public host: TypedArray | null,
  ) {}

  get bytes(): number {
    return 4 * this.size;
  }

  /** The GPU buffer, uploading the host copy the first time (a DtypeError for a host dtype). */
  buffer(op: string): number {
    if (this.id !== 0) return this.id;
    if (this.freed) throw new ValueError(`a disposed tensor was used (its memory on the GPU has been freed)`, op);
    if (!onGpu(this.dtype)) {
      throw new DtypeError(hostDtypeMessage(this.dtype, op), op);
    }
    this.id = this.dev.alloc(this.bytes);
    this.dev.write(this.id, toWords(this.host!, this.dtype));
    return this.id;
  }

  readSync(): TypedArray | null {
    if (this.host) return this.host;
    this.checkLive();
    try {
      this.host = fromWords(this.dev.readSync(this.id, this.bytes), this.dtype);
    } catch (e) {
      if (e instanceof SyncReadUnavailable) return null;
      throw e;
    }
    return this.host;
  }

  async read(): Promise<TypedArray> {
    if (this.host) return this.host;
    this.checkLive();
    const data = fromWords(await this.dev.read(this.id, this.bytes), this.dtype);
    this.host ??= data;
    return this.host;
  }

  private checkLive(): void {
    if (this.freed) throw new ValueError(`a disposed tensor was read (its memory on the GPU has been freed)`, "dataSync");
  }

  retain(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs > 0 || this.freed) return;
    this.freed = true;
    if (this.id !== 0) this.dev.free(this.id, this.bytes);
    this.id = 0;
    this.host = null;
  }

  get disposed(): boolean {
    return this.freed;
  }

}

// ---------------------------------------------------------------------------------------------
// Tensors' references

/**
 * One tensor's reference to a storage (the tensor's `_buffer`): released once, by dispose() or when
 * the garbage collector finds the tensor unreachable; reads through it fail after that.
 */
export class TensorHold implements DeviceBuffer {
  released = false;
  constructor(readonly storage: GpuStorage) {}

  /** The storage (an error once released). */
  live(op: string): GpuStorage {
    if (this.released) throw new ValueError(`a disposed tensor was used (its memory on the GPU has been freed)`, op);
    return this.storage;
  }
  readSync(): TypedArray | null {
    return this.live("dataSync").readSync();
  }
  read(): Promise<TypedArray> {
    return this.live("data").read();
  }
  release(): void {
    if (this.released) return;
    this.released = true;
    this.storage.release();
  }
  dispose(): void {
    this.release();
  }
}

const collected = new FinalizationRegistry<TensorHold>((h) => h.release());
const scopes: Set<Tensor>[] = [];

/** Makes `t` hold a reference to `s` (dropped by dispose, or when t is collected). */
export function attach(t: Tensor, s: GpuStorage): void {
  s.retain();
  const h = new TensorHold(s);
  t._buffer = h;
  collected.register(t, h);
  if (scopes.length > 0) scopes[scopes.length - 1]!.add(t);
}

/** Drops `t`'s reference to its GPU storage now (later reads are an error). No-op for other tensors. */
export function disposeTensor(t: Tensor): void {
  if (t._buffer instanceof TensorHold) t._buffer.release();
}

/** Whether `t` holds GPU storage it has not disposed. */
export function holdsGpuStorage(t: Tensor): boolean {
  return t._buffer instanceof TensorHold && !t._buffer.released;
}

/**
 * Runs `fn`, then disposes the webgpu tensors made during it except those in its result (any
 * nesting of arrays and objects of tensors). Returns fn's result.
 */
export function tidy<T>(fn: () => T): T {
  const made = new Set<Tensor>();
  scopes.push(made);
  let result: T;
  try {
    result = fn();
  } finally {
    scopes.pop();
  }
  const keep = new Set<Tensor>();
  collect(result, keep);
  const outer = scopes[scopes.length - 1];
  for (const t of made) {
    if (keep.has(t)) outer?.add(t);
    else disposeTensor(t);
  }
  return result;
}

function collect(v: unknown, into: Set<Tensor>, seen = new Set<unknown>()): void {
  if (v === null || typeof v !== "object" || seen.has(v)) return;
  seen.add(v);
  if (holdsGpuStorage(v as Tensor)) {
    into.add(v as Tensor);
    return;
  }
  for (const x of Array.isArray(v) ? v : Object.values(v)) collect(x, into, seen);
}
