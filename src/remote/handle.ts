/**
 * RemoteTensor: a tensor that lives on a worker, known here by its handle, dtype and shape. Its
 * value comes over only when asked (`await fetch()` / `await data()`); `dispose()` frees it on
 * the worker, and a handle the garbage collector collects is freed there too (a
 * FinalizationRegistry batches the releases). A handle passed to a remote function of the same
 * worker stays there: nothing is copied.
 */
import type { DType, TypedArray } from "../core/dtype.js";
import { userLocation } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import type { WorkerConnection } from "./connection.js";
import { RemoteError } from "./errors.js";
import { tensorOfRemote } from "./eager.js";

const collected = new FinalizationRegistry<{ connection: WorkerConnection; handle: number }>(({ connection, handle }) => connection.releaseLater(handle));

export class RemoteTensor {
  private released = false;

  constructor(
    /** @internal */
    readonly connection: WorkerConnection,
    /** @internal The worker's number for it, in the client's session. */
    readonly handle: number,
    readonly dtype: DType,
    readonly shape: readonly number[],
    /** The remote device it was made on, e.g. "/job:worker/task:0/device:cpu:0". */
    readonly device: string,
  ) {
    collected.register(this, { connection, handle }, this);
  }

  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  get rank(): number {
    return this.shape.length;
  }

  /** Whether dispose() was called. */
  get isDisposed(): boolean {
    return this.released;
  }

  /** @internal A RemoteError for use after dispose(). */
  checkLive(call: string): void {
    if (this.released) {
      throw new RemoteError(`the remote tensor (handle ${this.handle}, ${this.dtype}[${this.shape.join(", ")}]) was disposed`, this.connection.address, call, "LOCAL");
    }
  }

  /** Its value, as a local tensor (streamed in chunks when large). */
  async fetch(): Promise<Tensor> {
    const loc = userLocation();
    this.checkLive("Fetch");
    return this.connection.fetch(this.handle, "Fetch", loc);
  }

  /** Its flat values (as Tensor.data()). */
  async data(): Promise<TypedArray> {
    return (await this.fetch()).dataSync();
  }

  /** Its values as nested arrays (as Tensor.array()). */
  async array(): Promise<unknown> {
    return (await this.fetch()).arraySync();
  }

  /** Frees it on the worker (now; a second call does nothing). */
  async dispose(): Promise<void> {
    if (this.released) return;
    this.released = true;
    collected.unregister(this);
    await this.connection.release([this.handle], userLocation());
  }

  /**
   * This tensor as an `sc.Tensor` of its remote device, which eager ops take (they run on the
   * worker, one at a time: src/remote/eager.ts); nothing is copied. It stays valid while this
   * RemoteTensor is not disposed (it keeps this one from the garbage collector); disposing it
   * frees nothing.
   */
  asTensor(): Tensor {
    return tensorOfRemote(this);
  }

  toString(): string {
    return `RemoteTensor(${this.dtype}[${this.shape.join(", ")}] on ${this.device})`;
  }
}
