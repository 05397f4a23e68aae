/**
 * Memory the library has handed to user code as a tensor's storage: `dataSync()` and `data()`
 * return the storage itself (no copy), under the contract "do not mutate". Tensors are
 * immutable, and views, tapes and the compiled executor's input caches rely on it, so an
 * operation that writes into a host array the caller owns (`sc.distributed.allReduceInPlace`)
 * refuses one of these instead of silently changing a tensor.
 *
 * The ArrayBuffer is recorded, not the view: `new Float32Array(t.dataSync().buffer)` and
 * `subarray` views of it are caught too. Weakly held: a buffer no tensor or view reaches is
 * forgotten with it.
 */
const exposed = new WeakSet<ArrayBufferLike>();

/** Records that `data`'s memory was handed out as a tensor's storage. */
export function markExposedStorage(data: { buffer: ArrayBufferLike }): void {
  exposed.add(data.buffer);
}

/** Whether `data`'s memory is (or shares an ArrayBuffer with) storage handed out by dataSync()/data(). */
export function isExposedStorage(data: { buffer: ArrayBufferLike }): boolean {
  return exposed.has(data.buffer);
}
