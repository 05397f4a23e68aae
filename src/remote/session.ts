/**
 * A client's session on a worker: the tensors it holds by handle, the variables its functions
 * created, its registered functions, and the bytes all of them take (charged against the
 * session's limit). Everything is freed with the session: when the client closes it, or when it
 * has been idle (no call, no keep-alive) longer than the session timeout, as after the client's
 * process died.
 */
import { status } from "@grpc/grpc-js";
import { storageBytes } from "../core/dtype.js";
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { ConcreteFunction } from "../staging/concrete-function.js";
import type { HandleInfo } from "./proto.js";
import type { WorkerLimits } from "./limits.js";

/** A call refused with a gRPC status; the worker's handlers turn it into the call's error. */
export class CallFault extends Error {
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

export function bytesOf(t: { dtype: Tensor["dtype"]; shape: readonly number[] }): number {
  return t.shape.reduce((a, b) => a * b, 1) * storageBytes(t.dtype);
}

export class Session {
  private readonly handles = new Map<number, Tensor>();
  private nextHandle = 1;
  /** The client's variables by the client's variable id. */
  readonly variables = new Map<number, Variable>();
  readonly functions = new Map<string, ConcreteFunction>();
  /** A function's own variables, set from each call's values (RegisterRequest.boundVariables). */
  readonly boundVariables = new Map<string, Variable[]>();
  /** Bytes of handles, variables and captured constants. */
  bytes = 0;
  /** Calls of registered functions (the remote eager ops' one-op functions among them). */
  calls = 0;
  lastSeen = Date.now();

  constructor(
    readonly id: string,
    readonly client: string,
    private readonly limits: WorkerLimits,
  ) {}

  get handleCount(): number {
    return this.handles.size;
  }

  /** Refuses `bytes` more when the session would go over its limit. */
  charge(bytes: number, what: string): void {
    if (this.bytes + bytes > this.limits.maxSessionBytes) {
      throw new CallFault(status.RESOURCE_EXHAUSTED, `${what} (${bytes} bytes) would take the session to ${this.bytes + bytes} bytes, over its limit of ${this.limits.maxSessionBytes}`);
    }
    this.bytes += bytes;
  }

  /** Keeps `t` under a new handle (charged to the session). */
  put(t: Tensor): HandleInfo {
    this.charge(bytesOf(t), `a ${t.dtype} tensor of shape [${t.shape.join(", ")}]`);
    const handle = this.nextHandle++;
    this.handles.set(handle, t);
    return { handle, dtype: t.dtype, shape: t.shape.slice() };
  }

  get(handle: number): Tensor {
    const t = this.handles.get(handle);
    if (t === undefined) throw new CallFault(status.NOT_FOUND, `no tensor has handle ${handle} in this session (released, or never made here)`);
    return t;
  }

  release(handle: number): void {
    const t = this.handles.get(handle);
    if (t === undefined) return;
    this.handles.delete(handle);
    this.bytes -= bytesOf(t);
  }

  /** Drops everything (the tensors go to the garbage collector). */
  clear(): void {
    this.handles.clear();
    this.variables.clear();
    this.functions.clear();
    this.boundVariables.clear();
    this.bytes = 0;
  }
}
