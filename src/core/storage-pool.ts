/**
 * Reuse of large host storage whose tensors were disposed (issue 28: per-example gradients).
 *
 * A 205 MB output made per call (the w1 per-example gradient of an MLP) costs more than its
 * kernel: V8 counts each new ArrayBuffer as external memory, and one this large starts a
 * scavenge and a mark-compact of the whole heap in every call (bench/RESULTS.md, "vmap"). When
 * the caller says the previous output is dead (`tensor.dispose()`), its ArrayBuffer can serve the
 * next output of the same size instead: no new external memory, no collection.
 *
 * Reuse is only safe when nothing can still read the old storage, so a buffer is reused only when
 * all of these hold (anything else keeps it out of the pool, and then it is freed by the garbage
 * collector as before):
 * - it was made by a kernel that writes every element of its output, through `takeStorage`
 *   (backends/cpu/matmul.ts productStorage: large matrix products), and is at least
 *   POOL_MIN_BYTES: no other storage (scalars a cache shares, variables, views of a caller's
 *   memory) is ever pooled;
 * - every Tensor made on it has been disposed (the Tensor constructor counts them: reshapes share
 *   the ArrayBuffer), and none was made on part of it (a slice or row that is a view: that is an
 *   escape, so a view's tensor never needs counting);
 * - it never "escaped": handed out by `dataSync()` or `data()`, read through `concrete()` or
 *   `_data` outside a kernel run (executors, exports, checkpoints, ONNX Runtime, uploads,
 *   worker messages: whatever may keep the array), or stored into a tensor other than by the
 *   constructor (a variable's assignment). Kernels run by the eager dispatch (ops/registry.ts,
 *   `beginKernel`) read their inputs during the call only; their outputs become Tensors, counted.
 * A disposed tensor whose storage may still be reused is cut from it (reading it is an error),
 * whether the storage went to the pool or not (another holder lives); one whose storage escaped
 * is left as it is (that storage is never reused).
 * Each reuse hands out a new view object, so identity caches of storage (exec/compiled's operand
 * slots, resident rows) see new storage and copy it again.
 */
import type { TypedArray } from "./dtype.js";

/**
 * Smallest storage pooled: 16 MB. Below it glibc's heap already reuses the blocks (platform/node.ts
 * keepLargeHostBlocks) and V8's external-memory limit (64 MB over the last collection's count)
 * is not passed by one allocation, so a collection per call does not follow.
 */
export const POOL_MIN_BYTES = 16 << 20;
/**
 * Most bytes the pool keeps: 512 MB, the oldest dropped first (then collected as usual). Enough
 * for two of the largest outputs this was made for (205 MB), and half of what glibc is already
 * allowed to keep mapped after frees (1 GiB, platform/node.ts): memory a disposed tensor gave
 * back is held only while it may be asked for again.
 */
export const POOL_MAX_BYTES = 512 << 20;

interface Lease {
  /** Tensors made on the buffer (each on its whole data region) and not yet disposed. */
  holders: number;
  /** Handed out, stored where it may be kept, or a tensor made on part of it: never reused. */
  escaped: boolean;
}

/**
 * Byte offset of the data in a poolable buffer. A tensor on part of a poolable buffer (a slice
 * or row of it) makes it escape, which the Tensor constructor must see; the lease is found from
 * the array's buffer, but reading `.buffer` of a small typed array that V8 keeps on its heap (64
 * bytes and less, at offset 0) moves it off the heap, a cost every small tensor would pay. With
 * the data at offset 64, every view of a poolable buffer is at an offset, so the constructor
 * looks up only arrays at an offset (views, off the heap already) and skips every array made
 * fresh (offset 0).
 */
export const POOL_DATA_OFFSET = 64;

/** Whether any poolable buffer was ever made: until then no check runs (a load of this flag). */
export const pool = { inUse: false };

const leases = new WeakMap<ArrayBufferLike, Lease>();
/** Free buffers by byte length (the data's bytes, plus POOL_DATA_OFFSET), oldest first. */
const free = new Map<number, ArrayBuffer[]>();
let freeBytes = 0;
/** Free buffers in the order they were given back (for eviction). */
const order: ArrayBuffer[] = [];
const stats = { reused: 0, released: 0 };

/** Depth of kernel runs of the eager dispatch: their reads do not make storage escape. */
let kernelDepth = 0;

/**
 * Before a kernel of the eager dispatch runs (ops/registry.ts runOn): a kernel that keeps no
 * input past the call (`def` given and not stateful: a host kernel) runs as a kernel run, whose
 * reads of its inputs are not escapes; one that may keep them (`def` null: another backend's, or
 * a stateful op) reads as outside one, even when run from inside another kernel. At the top level
 * a kernel run is only entered when an input is poolable-sized (no megamorphic `stateful` load
 * per small op). Returns what `endKernel` needs, after the kernel (also when it throws).
 */
export function beginKernel(inputs: readonly { _store: TypedArray | null }[], def: { readonly stateful?: boolean } | null): number {
  if (kernelDepth === 0) {
    for (let i = 0; i < inputs.length; i++) {
      const d = inputs[i]!._store;
      if (d !== null && d.byteLength >= POOL_MIN_BYTES) {
        if (def === null || def.stateful) return 0;
        kernelDepth = 1;
        return -1;
      }
    }
    return 0;
  }
  if (def !== null && !def.stateful) {
    kernelDepth++;
    return -1;
  }
  const outer = kernelDepth;
  kernelDepth = 0;
  return outer;
}
export function endKernel(mode: number): void {
  if (mode === -1) kernelDepth--;
  else if (mode > 0) kernelDepth = mode;
}

/**
 * A buffer for `bytes` bytes of data at POOL_DATA_OFFSET, not cleared (its contents are a previous
 * tensor's), for a kernel that writes every element: one from the pool, else `make()`'s,
 * registered as poolable. Null below POOL_MIN_BYTES (the caller allocates as before).
 */
export function takeStorage(bytes: number, make: (bytes: number) => ArrayBuffer): ArrayBuffer | null {
  if (bytes < POOL_MIN_BYTES || bytes > POOL_MAX_BYTES) return null;
  const total = bytes + POOL_DATA_OFFSET;
  const list = free.get(total);
  const pooled = list?.pop();
  if (pooled !== undefined) {
    if (list!.length === 0) free.delete(total);
    order.splice(order.indexOf(pooled), 1);
    freeBytes -= total;
    leases.set(pooled, { holders: 0, escaped: false });
    stats.reused++;
    return pooled;
  }
  const b = make(total);
  leases.set(b, { holders: 0, escaped: false });
  pool.inUse = true;
  return b;
}

/**
 * The Tensor constructor, for storage at an offset (POOL_DATA_OFFSET says why not the others): one
 * more tensor on a poolable buffer, or, for a tensor on part of it, an escape.
 */
export function noteHolder(data: TypedArray): void {
  const buf = data.buffer;
  const l = leases.get(buf);
  if (l === undefined) return;
  if (data.byteOffset === POOL_DATA_OFFSET && data.byteLength === buf.byteLength - POOL_DATA_OFFSET) l.holders++;
  else l.escaped = true;
}

/**
 * `data` (a tensor's whole storage) may be kept by whoever read it: never reused, unless it is
 * read by a kernel of the eager dispatch. Called for storage of POOL_MIN_BYTES and more only (a
 * tensor on part of a poolable buffer made it escape when it was made).
 */
export function noteEscape(data: TypedArray): void {
  if (kernelDepth > 0) return;
  markEscaped(data);
}

/** As noteEscape, also inside a kernel run (storage stored into a tensor, or handed to the caller). */
export function markEscaped(data: TypedArray): void {
  if (data.byteLength < POOL_MIN_BYTES) return;
  const l = leases.get(data.buffer);
  if (l !== undefined) l.escaped = true;
}

/**
 * Whether `data` may still be reused: poolable storage that has not escaped. A disposed tensor
 * holding such storage is cut from it (its holder counted off once); one holding storage that
 * escaped keeps it (it is never reused, so nothing needs protecting).
 */
export function isPoolable(data: TypedArray): boolean {
  if (data.byteLength < POOL_MIN_BYTES) return false;
  const l = leases.get(data.buffer);
  return l !== undefined && !l.escaped;
}

/**
 * A tensor on `data` was disposed: one holder less; with none left and no escape, the buffer goes
 * to the pool (the oldest free buffers dropped past POOL_MAX_BYTES). Returns whether it did.
 */
export function releaseStorage(data: TypedArray): boolean {
  const buf = data.buffer;
  const l = leases.get(buf);
  if (l === undefined) return false;
  l.holders--;
  if (l.holders > 0 || l.escaped || !(buf instanceof ArrayBuffer)) return false;
  leases.delete(buf); // (in the pool: no tensor's storage until taken again)
  const total = buf.byteLength;
  let list = free.get(total);
  if (!list) free.set(total, (list = []));
  list.push(buf);
  order.push(buf);
  freeBytes += total;
  stats.released++;
  while (freeBytes > POOL_MAX_BYTES + 2 * POOL_DATA_OFFSET) {
    const old = order.shift()!;
    const same = free.get(old.byteLength)!;
    same.splice(same.indexOf(old), 1);
    if (same.length === 0) free.delete(old.byteLength);
    freeBytes -= old.byteLength;
  }
  return true;
}

/** The pool's state (tests, benchmarks): free buffers and bytes, buffers reused and given back so far. */
export function storagePoolStats(): { freeBuffers: number; freeBytes: number; reused: number; released: number } {
  return { freeBuffers: order.length, freeBytes, reused: stats.reused, released: stats.released };
}

/** Drops every free buffer (tests). */
export function clearStoragePool(): void {
  free.clear();
  order.length = 0;
  freeBytes = 0;
}
