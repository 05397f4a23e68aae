/**
 * The client's side of one worker task: its gRPC channel, its session on the worker, and the
 * calls, each with a deadline and the token, whose failures become typed errors (errors.ts)
 * naming the worker and the call, with the user's line taken when the call started. The
 * session is kept alive by a keep-alive call on a timer that does not hold the process open;
 * handles released by the garbage collector are sent back in batches.
 */
import type * as grpc from "@grpc/grpc-js";
import { loadGrpc } from "./grpc.js";
import type { SourceLocation } from "../core/errors.js";
import { Tensor } from "../core/tensor.js";
import { workerService } from "./proto.js";
import type {
  CallRequest, Empty, HandleInfo, HandlesReply, OpenSessionReply, OpenSessionRequest, RegisterRequest, ReleaseRequest, SessionRequest, StatsReply, TensorChunk, TensorRef, VariablesRequest,
} from "./proto.js";
import { remoteErrorOf, RemoteLimitError, RemoteUnavailableError, type RemoteError } from "./errors.js";
import { TOKEN_METADATA_KEY } from "./limits.js";
import { ChunkAssembler, chunksOf, tensorBytes, WireCheckFailed } from "./wire.js";
import { chunkBytesFor } from "./worker.js";
import { CLIENT_HANDLES_FROM } from "./session.js";

// (made at the first connection: gRPC and the schema load then, not with the package entry)
let workerClient: grpc.ServiceClientConstructor | undefined;
const WorkerClient = (): grpc.ServiceClientConstructor => (workerClient ??= loadGrpc().makeGenericClientConstructor(workerService(), "Worker"));

/** The unary methods' request and reply types. */
interface Unary {
  openSession: [OpenSessionRequest, OpenSessionReply];
  keepAlive: [SessionRequest, Empty];
  closeSession: [SessionRequest, Empty];
  register: [RegisterRequest, Empty];
  call: [CallRequest, HandlesReply];
  release: [ReleaseRequest, Empty];
  readVariables: [VariablesRequest, HandlesReply];
  stats: [SessionRequest, StatsReply];
}

export interface ConnectionOptions {
  token?: string;
  /** TLS: true (the system's roots) or the PEM of the CA that signed the worker's certificate. */
  tls?: boolean | { ca?: string | Uint8Array };
  /** Milliseconds each call may take before it fails with a RemoteUnavailableError. */
  timeoutMs: number;
}

/** Tensors a call's message carries inline stay under this share of the worker's message limit; larger ones are uploaded first. */
const INLINE_SHARE = 0.5;

interface Disposals {
  handles: number[];
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class WorkerConnection {
  private readonly client: grpc.Client;
  session = "";
  /** The worker's devices ("cpu:0", ...). */
  devices: string[] = [];
  maxMessageBytes = Infinity;
  private keepAlive: ReturnType<typeof setInterval> | null = null;
  private pendingRelease: number[] = [];
  private nextClientHandle = 0;
  /** Handles the user disposed, waiting for the next call to carry them (releaseSoon). */
  private disposals: Disposals | null = null;
  private releaseScheduled = false;
  closed = false;
  /** Variables (client ids) the worker holds for this session. */
  readonly knownVariables = new Set<number>();

  constructor(
    /** host:port */
    readonly address: string,
    /** "/job:worker/task:0" */
    readonly prefix: string,
    private readonly options: ConnectionOptions,
  ) {
    const tls = options.tls;
    const creds =
      tls === undefined || tls === false
        ? loadGrpc().credentials.createInsecure()
        : loadGrpc().credentials.createSsl(typeof tls === "object" && tls.ca !== undefined ? Buffer.from(tls.ca) : null);
    this.client = new (WorkerClient())(address, creds, {
      // (the worker's limit is the one that applies: it refuses what is over it, with a status the caller gets)
      "grpc.max_send_message_length": -1,
      "grpc.max_receive_message_length": -1,
      // (a refused connection fails the call at once rather than waiting for the deadline)
      "grpc.enable_retries": 0,
    });
  }

  private metadata(): grpc.Metadata {
    const md = new (loadGrpc().Metadata)();
    if (this.options.token !== undefined) md.set(TOKEN_METADATA_KEY, this.options.token);
    return md;
  }

  private callOptions(timeoutMs = this.options.timeoutMs): grpc.CallOptions {
    return { deadline: Date.now() + timeoutMs };
  }

  private fail(e: grpc.ServiceError, call: string, loc: SourceLocation | null): RemoteError {
    const err = remoteErrorOf(e, this.address, call, loc);
    if (e.code === loadGrpc().status.RESOURCE_EXHAUSTED && this.maxMessageBytes !== Infinity && /message larger than max/i.test(e.details ?? "")) {
      return new RemoteLimitError(`${e.details} (the worker takes messages of at most ${this.maxMessageBytes} bytes)`, this.address, call, err.code, loc);
    }
    return err;
  }

  /** One unary call; `call` names it in errors. */
  unary<K extends keyof Unary>(method: K, request: Unary[K][0], call: string, loc: SourceLocation | null, timeoutMs?: number): Promise<Unary[K][1]> {
    if (this.closed && method !== "closeSession") return Promise.reject(new RemoteUnavailableError("the connection is closed", this.address, call, "LOCAL", loc));
    const def = workerService()[method] as unknown as grpc.MethodDefinition<Unary[K][0], Unary[K][1]>;
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, this.metadata(), this.callOptions(timeoutMs), (e, r) =>
        e ? reject(this.fail(e, call, loc)) : resolve(r as Unary[K][1]),
      );
    });
  }

  /** Opens the session and starts its keep-alive. */
  async open(loc: SourceLocation | null): Promise<void> {
    const r = await this.unary("openSession", { client: `pid ${process.pid}` }, "OpenSession", loc);
    this.session = r.session;
    this.devices = r.devices;
    this.maxMessageBytes = r.maxMessageBytes > 0 ? r.maxMessageBytes : Infinity;
    const every = r.sessionTimeoutMs > 0 ? Math.max(20, r.sessionTimeoutMs / 3) : 0;
    if (every > 0) {
      this.keepAlive = setInterval(() => {
        this.unary("keepAlive", { session: this.session }, "KeepAlive", null).catch(() => {});
      }, every);
      this.keepAlive.unref();
    }
  }

  /** Ends the session (the worker frees its tensors) and the channel; a worker already gone is no error. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    await this.unary("closeSession", { session: this.session }, "CloseSession", null, Math.min(this.options.timeoutMs, 2000)).catch(() => {});
    this.client.close();
  }

  /** The largest tensor (bytes) a call carries inline. */
  get inlineBytes(): number {
    return this.maxMessageBytes === Infinity ? 4 * 2 ** 20 : Math.floor(this.maxMessageBytes * INLINE_SHARE);
  }

  /**
   * What a call sends for local tensor `t`: its bytes inline when they fit in `budget` (which it
   * lowers), else a handle after uploading it (pushed on `uploaded`: the caller releases it).
   */
  async refOf(t: Tensor, budget: { bytes: number }, uploaded: number[], loc: SourceLocation | null): Promise<TensorRef> {
    const bytes = await tensorBytes(t);
    if (bytes.byteLength <= budget.bytes) {
      budget.bytes -= bytes.byteLength;
      return { value: { dtype: t.dtype, shape: t.shape.slice(), totalBytes: bytes.byteLength, data: bytes } };
    }
    const info = await this.upload(t.dtype, t.shape, bytes, loc);
    uploaded.push(info.handle);
    return { handle: info.handle };
  }

  /** Streams a tensor's bytes to the worker in chunks; returns its handle there. */
  upload(dtype: string, shape: readonly number[], bytes: Uint8Array, loc: SourceLocation | null): Promise<HandleInfo> {
    const def = workerService().upload;
    return new Promise((resolve, reject) => {
      const stream = this.client.makeClientStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, this.metadata(), this.callOptions(), (e, r) =>
        e ? reject(this.fail(e, "Upload", loc)) : resolve(r as HandleInfo),
      );
      const size = chunkBytesFor(this.maxMessageBytes === Infinity ? 2 ** 31 : this.maxMessageBytes);
      const chunks = chunksOf(bytes, size);
      let first = true;
      // (written as the stream drains, so a large tensor is not buffered whole)
      const pump = (): void => {
        for (;;) {
          const next = chunks.next();
          if (next.done) {
            stream.end();
            return;
          }
          const msg: TensorChunk = first ? { session: this.session, dtype, shape: shape.slice(), totalBytes: bytes.byteLength, data: next.value } : { data: next.value };
          first = false;
          if (!stream.write(msg)) {
            stream.once("drain", pump);
            return;
          }
        }
      };
      pump();
    });
  }

  /** The tensor under `handle`, streamed back in chunks. */
  fetch(handle: number, call: string, loc: SourceLocation | null): Promise<Tensor> {
    const def = workerService().fetch;
    return new Promise((resolve, reject) => {
      const stream = this.client.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, { session: this.session, handle }, this.metadata(), this.callOptions());
      const assembler = new ChunkAssembler({ maxTensorElements: Infinity, maxTensorBytes: Infinity });
      let failed = false;
      stream.on("data", (chunk: TensorChunk) => {
        try {
          assembler.add(chunk);
        } catch (e) {
          failed = true;
          stream.cancel();
          reject(new RemoteUnavailableError(`the worker sent a malformed tensor: ${(e as Error).message}`, this.address, call, "LOCAL", loc));
        }
      });
      stream.on("error", (e: grpc.ServiceError) => {
        if (!failed) reject(this.fail(e, call, loc));
        failed = true;
      });
      stream.on("end", () => {
        if (failed) return;
        try {
          resolve(assembler.finish());
        } catch (e) {
          reject(new RemoteUnavailableError(e instanceof WireCheckFailed ? e.message : String(e), this.address, call, "LOCAL", loc));
        }
      });
    });
  }

  /**
   * Frees `handle` with the next call (CallRequest.release), or with a Release of its own if no
   * call is made before the event loop turns: disposing a result in a loop of remote ops costs no
   * round trip. The promise settles when the worker has freed it.
   */
  releaseSoon(handle: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.disposals === null) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((a, b) => ((resolve = a), (reject = b)));
      this.disposals = { handles: [], promise, resolve, reject };
      setImmediate(() => this.flushDisposals());
    }
    this.disposals.handles.push(handle);
    return this.disposals.promise;
  }

  /**
   * What a call frees once it is done: `uploaded` (its own uploads) and the handles disposed
   * since the last call; `done(error)` when the call returned: its disposals are then freed, or
   * after a failed call (which may not have reached the worker) sent again with a Release
   * (freeing is idempotent).
   */
  takeReleases(uploaded: number[]): { release: number[]; done: (error: unknown) => void } {
    const d = this.disposals;
    if (d === null) return { release: uploaded, done: () => {} };
    this.disposals = null;
    return {
      release: uploaded.length === 0 ? d.handles : [...uploaded, ...d.handles],
      done: (error) => (error === null ? d.resolve() : this.release(d.handles, null).then(d.resolve, d.reject)),
    };
  }

  private flushDisposals(): void {
    const d = this.disposals;
    if (d === null) return;
    this.disposals = null;
    this.release(d.handles, null).then(d.resolve, d.reject);
  }

  /** A new handle named by this client for a call's output (CallRequest.outputHandles). */
  clientHandle(): number {
    return CLIENT_HANDLES_FROM + this.nextClientHandle++;
  }

  /** Frees `handles` on the worker now. */
  async release(handles: number[], loc: SourceLocation | null): Promise<void> {
    if (handles.length === 0 || this.closed) return;
    await this.unary("release", { session: this.session, handles }, "Release", loc);
  }

  /** Frees `handle` soon (the garbage collector collected its RemoteTensor): batched, errors ignored. */
  releaseLater(handle: number): void {
    if (this.closed) return;
    this.pendingRelease.push(handle);
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    setTimeout(() => {
      this.releaseScheduled = false;
      const handles = this.pendingRelease;
      this.pendingRelease = [];
      this.release(handles, null).catch(() => {});
    }, 0).unref();
  }
}
