/**
 * Tensors on the wire: a tensor's storage bytes with its dtype and shape, read back into a
 * tensor after checking that the declared type, the limits and the byte count agree; and the
 * cutting of large tensors into chunks for streamed transfers.
 */
import { allocStorage, isDType, storageBytes, type DType, type TypedArray } from "../core/dtype.js";
import { Tensor } from "../core/tensor.js";

/** Why bytes from the wire are not a tensor (or too large a one): the caller picks the error class. */
export class WireCheckFailed extends Error {
  constructor(
    message: string,
    /** Over a size limit (as opposed to malformed). */
    readonly overLimit: boolean,
  ) {
    super(message);
  }
}

export interface SizeLimits {
  maxTensorElements: number;
  maxTensorBytes: number;
}

/** The storage bytes of a concrete tensor (a view, no copy, for host tensors). */
export async function tensorBytes(t: Tensor): Promise<Uint8Array> {
  const data = await t.data();
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** The element count and byte size of a declared tensor type, checked against `limits`. */
export function checkDeclared(dtype: string | undefined, shape: readonly number[] | undefined, limits: SizeLimits): { dtype: DType; shape: number[]; elements: number; bytes: number } {
  if (!isDType(dtype)) throw new WireCheckFailed(`unknown dtype ${JSON.stringify(dtype)}`, false);
  const dims = [...(shape ?? [])];
  let elements = 1;
  for (const d of dims) {
    if (!Number.isSafeInteger(d) || d < 0) throw new WireCheckFailed(`bad dimension ${d} in shape [${dims.join(", ")}]`, false);
    elements *= d;
  }
  const bytes = elements * storageBytes(dtype);
  if (elements > limits.maxTensorElements) {
    throw new WireCheckFailed(`a ${dtype} tensor of shape [${dims.join(", ")}] has ${elements} elements, over the limit of ${limits.maxTensorElements} per tensor`, true);
  }
  if (bytes > limits.maxTensorBytes) throw new WireCheckFailed(`a ${dtype} tensor of shape [${dims.join(", ")}] is ${bytes} bytes, over the limit of ${limits.maxTensorBytes} per tensor`, true);
  return { dtype, shape: dims, elements, bytes };
}

/** A tensor of the declared type from its storage bytes (copied: gRPC's buffers need not be aligned). */
export function tensorFromBytes(dtype: string | undefined, shape: readonly number[] | undefined, data: Uint8Array, limits: SizeLimits): Tensor {
  const t = checkDeclared(dtype, shape, limits);
  if (data.byteLength !== t.bytes) {
    throw new WireCheckFailed(`a ${t.dtype} tensor of shape [${t.shape.join(", ")}] takes ${t.bytes} bytes, ${data.byteLength} came`, false);
  }
  const storage: TypedArray = allocStorage(t.dtype, t.elements);
  new Uint8Array(storage.buffer, storage.byteOffset, storage.byteLength).set(data);
  return new Tensor(storage, t.shape, t.dtype);
}

/** Collects the chunks of one streamed tensor (into the tensor's own storage): the first declares its type and total size. */
export class ChunkAssembler {
  private storage: TypedArray | null = null;
  private bytes: Uint8Array | null = null;
  private filled = 0;
  private dtype: DType = "float32";
  private shape: number[] = [];

  constructor(private readonly limits: SizeLimits) {}

  add(chunk: { dtype?: string; shape?: number[]; totalBytes?: number; data?: Uint8Array }): void {
    if (this.bytes === null) {
      const t = checkDeclared(chunk.dtype, chunk.shape, this.limits);
      if (chunk.totalBytes !== t.bytes) throw new WireCheckFailed(`the first chunk declares ${chunk.totalBytes} bytes for a ${t.dtype} tensor of shape [${t.shape.join(", ")}], which takes ${t.bytes}`, false);
      this.storage = allocStorage(t.dtype, t.elements);
      this.bytes = new Uint8Array(this.storage.buffer, this.storage.byteOffset, this.storage.byteLength);
      this.dtype = t.dtype;
      this.shape = t.shape;
    }
    const data = chunk.data ?? new Uint8Array(0);
    if (this.filled + data.byteLength > this.bytes.byteLength) throw new WireCheckFailed(`chunks carry more than the ${this.bytes.byteLength} bytes declared`, false);
    this.bytes.set(data, this.filled);
    this.filled += data.byteLength;
  }

  /** The tensor, once every declared byte came. */
  finish(): Tensor {
    if (this.bytes === null) throw new WireCheckFailed("the transfer carried no chunk", false);
    if (this.filled !== this.bytes.byteLength) throw new WireCheckFailed(`the transfer ended after ${this.filled} of ${this.bytes.byteLength} bytes`, false);
    return new Tensor(this.storage, this.shape, this.dtype);
  }
}

/** `bytes` cut into chunks of at most `size` bytes (one empty chunk for an empty tensor). */
export function* chunksOf(bytes: Uint8Array, size: number): Generator<Uint8Array> {
  if (bytes.byteLength === 0) yield bytes;
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, Math.min(at + size, bytes.byteLength));
}
