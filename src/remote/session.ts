/**
 * A client's session on a worker: the tensors it holds by handle, the variables its functions
 * created, its registered functions, and the bytes all of them take (charged against the
 * session's limit). Everything is freed with the session: when the client closes it, or when it
 * has been idle (no call, no keep-alive) longer than the session timeout, as after the client's
 * process died.
 */
import type { status } from "@grpc/grpc-js";
import { loadGrpc } from "./grpc.js";
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

/**
 * Handles at or above this are named by the client for a call's outputs (CallRequest.outputHandles:
 * the remote eager ops, which send a call on an earlier op's output before its reply came); the
 * worker numbers the others from 1.
 */
export const CLIENT_HANDLES_FROM = 2 ** 31;

interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class Session {
  private readonly handles = new Map<number, Tensor>();
  /** Client-named handles whose call failed: why (a call reading one fails at once). Cleared by release. */
  private readonly failedHandles = new Map<number, string>();
  /** Calls waiting for client-named handles that an earlier call, not done yet, makes. */
  private readonly waiters = new Map<number, Waiter[]>();
  /** Calls now waiting for their inputs; releases wait for them (one of them may read what is released). */
  private waitingCalls = 0;
  /** Uploads under way (each holds its tensor's bytes from its first chunk: `reserved`). */
  private uploads = 0;
  /** Bytes held by uploads under way, charged with `bytes` against the session's limit. */
  private reserved = 0;
  private deferredReleases: number[] = [];
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
    const total = this.bytes + this.reserved + bytes;
    if (total > this.limits.maxSessionBytes) {
      throw new CallFault(loadGrpc().status.RESOURCE_EXHAUSTED, `${what} (${bytes} bytes) would take the session to ${total} bytes${this.reserved > 0 ? ` (${this.reserved} of them held by uploads under way)` : ""}, over its limit of ${this.limits.maxSessionBytes}`);
    }
    this.bytes += bytes;
  }

  /** Calls in flight that hold memory: waiting for inputs, and uploads under way. */
  get callsInFlight(): number {
    return this.waitingCalls + this.uploads;
  }

  /** Refuses one more call in flight past maxCallsInFlight (RESOURCE_EXHAUSTED: a RemoteLimitError on the client). */
  private admit(what: string): void {
    if (this.callsInFlight >= this.limits.maxCallsInFlight) {
      throw new CallFault(
        loadGrpc().status.RESOURCE_EXHAUSTED,
        `${what} would be call ${this.callsInFlight + 1} of this session in flight at once (waiting for inputs, or uploading), over the worker's limit of ${this.limits.maxCallsInFlight} (maxCallsInFlight)`,
      );
    }
  }

  /**
   * An upload under way: `bytes` held against the session's limit (and one call in flight) until
   * the returned function is called, at its end or failure (then `put` charges the tensor).
   */
  reserve(bytes: number, what: string): () => void {
    this.admit(what);
    this.charge(bytes, what);
    this.bytes -= bytes;
    this.reserved += bytes;
    this.uploads++;
    const epoch = this.epoch;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      // (a session cleared meanwhile has dropped its reservations already)
      if (epoch !== this.epoch) return;
      this.reserved -= bytes;
      this.uploads--;
    };
  }

  /** Counts clear() calls: what was held before one is no longer held. */
  private epoch = 0;

  /** Keeps `t` under a new handle (charged to the session). */
  put(t: Tensor): HandleInfo {
    this.charge(bytesOf(t), `a ${t.dtype} tensor of shape [${t.shape.join(", ")}]`);
    const handle = this.nextHandle++;
    this.handles.set(handle, t);
    return { handle, dtype: t.dtype, shape: t.shape.slice() };
  }

  /** Keeps `t` under `handle`, a client-named one (CLIENT_HANDLES_FROM and above, unused). */
  putAs(handle: number, t: Tensor): HandleInfo {
    if (!Number.isInteger(handle) || handle < CLIENT_HANDLES_FROM || handle >= 2 ** 32) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `an output handle named by the client must be in [${CLIENT_HANDLES_FROM}, ${2 ** 32}), got ${handle}`);
    if (this.handles.has(handle) || this.failedHandles.has(handle)) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `output handle ${handle} is already in use in this session`);
    this.charge(bytesOf(t), `a ${t.dtype} tensor of shape [${t.shape.join(", ")}]`);
    this.handles.set(handle, t);
    this.wake(handle, null);
    return { handle, dtype: t.dtype, shape: t.shape.slice() };
  }

  /** The call that was to make client-named `handles` failed: calls that read them fail too. */
  failAs(handles: readonly number[], why: string): void {
    for (const h of handles) {
      if (h < CLIENT_HANDLES_FROM || this.handles.has(h)) continue;
      this.failedHandles.set(h, why);
      this.wake(h, new CallFault(loadGrpc().status.FAILED_PRECONDITION, `an input (handle ${h}) is the output of a call that failed: ${why}`));
    }
  }

  private wake(handle: number, error: unknown): void {
    const ws = this.waiters.get(handle);
    if (ws === undefined) return;
    this.waiters.delete(handle);
    for (const w of ws) (error === null ? w.resolve() : w.reject(error));
  }

  /**
   * Resolves once every handle of `handles` is here: at once (null, no promise) when they are;
   * a client-named one an earlier call is still making is waited for, until `deadline` (ms since
   * the epoch). Releases made meanwhile wait for the waiting call.
   */
  whenPresent(handles: readonly number[], deadline: number): Promise<void> | null {
    const missing = handles.filter((h) => h >= CLIENT_HANDLES_FROM && !this.handles.has(h));
    if (missing.length === 0) return null;
    for (const h of missing) {
      const why = this.failedHandles.get(h);
      if (why !== undefined) return Promise.reject(new CallFault(loadGrpc().status.FAILED_PRECONDITION, `an input (handle ${h}) is the output of a call that failed: ${why}`));
    }
    this.admit(`a call waiting for inputs (handles ${missing.join(", ")}) that earlier calls make`);
    this.waitingCalls++;
    const all = Promise.all(
      missing.map(
        (h) =>
          new Promise<void>((resolve, reject) => {
            let ws = this.waiters.get(h);
            if (ws === undefined) this.waiters.set(h, (ws = []));
            ws.push({ resolve, reject });
          }),
      ),
    );
    // (bounded by the worker's inputWaitMs too: a call without a deadline waiting for a handle no
    // call makes would otherwise hold the session's releases, and itself, for ever)
    const untilDeadline = deadline - Date.now();
    const bounded = this.limits.inputWaitMs < untilDeadline;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new CallFault(
              loadGrpc().status.DEADLINE_EXCEEDED,
              bounded
                ? `the call waited ${this.limits.inputWaitMs} ms (the worker's inputWaitMs) for inputs (handles ${missing.join(", ")}) that no earlier call made`
                : `the call waited past its deadline for inputs (handles ${missing.join(", ")}) that no earlier call made`,
            ),
          ),
        Math.max(0, Math.min(bounded ? this.limits.inputWaitMs : untilDeadline, 2 ** 31 - 1)),
      );
    });
    return Promise.race([all.then(() => {}), timeout]).finally(() => {
      clearTimeout(timer);
      if (--this.waitingCalls === 0) {
        const rs = this.deferredReleases;
        this.deferredReleases = [];
        for (const h of rs) this.release(h);
      }
    });
  }

  get(handle: number): Tensor {
    const t = this.handles.get(handle);
    if (t === undefined) throw new CallFault(loadGrpc().status.NOT_FOUND, `no tensor has handle ${handle} in this session (released, or never made here)`);
    return t;
  }

  release(handle: number): void {
    if (this.waitingCalls > 0) {
      this.deferredReleases.push(handle);
      return;
    }
    this.failedHandles.delete(handle);
    const t = this.handles.get(handle);
    if (t === undefined) return;
    this.handles.delete(handle);
    this.bytes -= bytesOf(t);
  }

  /** Drops everything (the tensors go to the garbage collector). */
  clear(): void {
    for (const h of [...this.waiters.keys()]) this.wake(h, new CallFault(loadGrpc().status.FAILED_PRECONDITION, "the session was closed"));
    this.failedHandles.clear();
    this.handles.clear();
    this.variables.clear();
    this.functions.clear();
    this.boundVariables.clear();
    this.bytes = 0;
    this.reserved = 0;
    this.uploads = 0;
    this.epoch++;
  }
}
