/**
 * How commands reach the GPU runtime.
 *
 * - WorkerTransport (Node): the device lives in a worker thread. Commands are queued on the main
 *   thread and posted in batches (at the end of the current microtask, or every 512 commands). A
 *   synchronous read posts the batch with a SharedArrayBuffer and blocks on Atomics.wait until the
 *   worker has mapped the buffer and copied the bytes in; an asynchronous read gets its bytes back
 *   in a message. The worker never blocks the main thread otherwise.
 * - LocalTransport (browsers, or Node when asked): the device lives on this thread; commands run at
 *   once and are submitted at the end of the microtask. A synchronous read is impossible there (the
 *   map callback needs this thread's event loop), so it is a typed error.
 */
import type { Command } from "./protocol.js";
import { BatchEncoder, ERROR_WORDS_BYTES, SYNC_DONE, SYNC_ERROR_BYTES, SYNC_FAILED, SYNC_HEADER_BYTES, SYNC_PENDING } from "./protocol.js";
import { GpuRuntime } from "./runtime.js";
import { openDevice, type OpenedDevice } from "./gpu-api.js";
import type { AdapterInfo, DeviceLimits, GpuOptions } from "./device-options.js";
import { workerThreads } from "../../core/platform/node.js";

export interface DeviceDescription {
  adapterInfo: AdapterInfo;
  limits: DeviceLimits;
  features: string[];
}

export interface RuntimeStats {
  /** Pipelines compiled so far and the time spent compiling them (ms). */
  compiled: number;
  compileMs: number;
  /** Predicates of plans' loops and branches read back by the device's runtime. */
  predicateReads: number;
}

export interface Transport {
  readonly description: DeviceDescription;
  /** Whether readSync works here (false on a browser's main thread). */
  readonly canReadSync: boolean;
  /** "worker" or "main": where the device lives. */
  readonly thread: "worker" | "main";
  send(c: Command, transfer?: ArrayBuffer[]): void;
  /** Sends what is queued and asks the runtime to submit it. */
  flush(): void;
  /** The bytes, followed by the device's error words (ERROR_WORDS_BYTES). */
  read(id: number, offset: number, bytes: number): Promise<ArrayBuffer>;
  readSync(id: number, offset: number, bytes: number): ArrayBuffer;
  /** Resolves when the GPU has finished everything sent so far. */
  finish(): Promise<void>;
  stats(): Promise<RuntimeStats>;
  close(): void;
}

/** Thrown where a synchronous read cannot block (message filled in by the backend). */
export class SyncReadUnavailable extends Error {}

class LocalTransport implements Transport {
  readonly canReadSync = false;
  readonly thread = "main" as const;
  private scheduled = false;
  private readonly runtime: GpuRuntime;

  constructor(
    opened: OpenedDevice,
    readonly description: DeviceDescription = { adapterInfo: opened.adapterInfo, limits: opened.limits, features: opened.features },
  ) {
    this.runtime = new GpuRuntime(opened.device, opened.keepAlive);
  }

  send(c: Command): void {
    void this.runtime.submit(c);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }
  flush(): void {
    this.scheduled = false;
    this.runtime.flush();
  }
  read(id: number, offset: number, bytes: number): Promise<ArrayBuffer> {
    return this.runtime.submit({ k: "read", id, offset, bytes, ticket: 0, shared: null }) as Promise<ArrayBuffer>;
  }
  readSync(): ArrayBuffer {
    throw new SyncReadUnavailable("the GPU device lives on this thread, whose event loop must run to map a buffer");
  }
  async finish(): Promise<void> {
    await this.runtime.submit({ k: "finish", ticket: 0 });
  }
  async stats(): Promise<RuntimeStats> {
    return (await this.runtime.submit({ k: "stats", ticket: 0 })) as RuntimeStats;
  }
  close(): void {
    this.runtime.destroy();
  }
}

interface WorkerLike {
  postMessage(m: unknown, transfer?: ArrayBuffer[]): void;
  on(ev: "message", f: (m: any) => void): void;
  on(ev: "error" | "exit", f: (e: any) => void): void;
  ref(): void;
  unref(): void;
  terminate(): Promise<number>;
}

const SYNC_TIMEOUT_MS = 120_000;
const BATCH_COMMANDS = 512;
/** How long the process's exit waits for the worker to destroy the device. */
const CLOSE_AT_EXIT_MS = 5_000;

class WorkerTransport implements Transport {
  readonly canReadSync = true;
  readonly thread = "worker" as const;
  private readonly batch = new BatchEncoder();
  private transfers: ArrayBuffer[] = [];
  private scheduled = false;
  private nextTicket = 1;
  private readonly pending = new Map<number, { resolve: (b: any) => void; reject: (e: Error) => void }>();
  private dead: string | null = null;
  /** Set once the worker was asked to close at the end of the program (batches after it are dropped). */
  private closing = false;

  private constructor(
    private readonly worker: WorkerLike,
    readonly description: DeviceDescription,
  ) {
    worker.on("message", (m: { k: string; ticket: number; data?: ArrayBuffer; message?: string; stats?: RuntimeStats }) => {
      const p = this.pending.get(m.ticket);
      if (!p) return;
      this.pending.delete(m.ticket);
      if (this.pending.size === 0) worker.unref();
      if (m.k === "error") p.reject(new Error(m.message));
      else p.resolve(m.k === "stats" ? m.stats : m.data);
    });
    const die = (why: string) => {
      this.dead = why;
      for (const p of this.pending.values()) p.reject(new Error(why));
      this.pending.clear();
    };
    worker.on("error", (e: Error) => die(`the WebGPU worker failed: ${e.message}`));
    worker.on("exit", (code: number) => die(`the WebGPU worker exited (code ${code})`));
    worker.unref();
    // When the program's work is done, the worker finishes its batches and destroys the device
    // before the process exits. Left to be terminated at exit, a worker still running a batch
    // (frees posted last) made Dawn throw into a JavaScript environment being torn down, which
    // Node turns into "FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw" (an abort).
    // An uncaught exception (or process.exit) ends the program without "beforeExit": then the
    // "exit" handler, which may only run synchronously, asks the worker to close and blocks until
    // it has destroyed the device (or CLOSE_AT_EXIT_MS passed), for the same reason.
    const proc = (globalThis as { process?: { once(ev: "beforeExit" | "exit", f: () => void): unknown } }).process;
    proc?.once("beforeExit", () => this.closeAtExit());
    proc?.once("exit", () => this.closeAtExitSync());
  }

  /** At the process's "exit": the worker closes the device while this thread waits (bounded). */
  private closeAtExitSync(): void {
    if (this.dead || this.closing) return;
    this.flush();
    this.closing = true;
    const closed = new Int32Array(new SharedArrayBuffer(4));
    this.worker.postMessage({ k: "close", closed: closed.buffer });
    Atomics.wait(closed, 0, 0, CLOSE_AT_EXIT_MS);
  }

  /** Asks the worker to finish and close, and keeps the process alive until it has. */
  private closeAtExit(): void {
    if (this.dead || this.closing) return;
    this.flush();
    this.closing = true;
    this.worker.postMessage({ k: "close" });
    this.worker.ref();
  }

  /** Starts the worker and opens the device there; a string says why it could not. */
  static async start(options: GpuOptions): Promise<WorkerTransport | string> {
    // (the platform seam: browsers have no worker_threads, and the device stays on the page's thread)
    if (!workerThreads) return "no worker threads on this platform: the device runs on the calling thread";
    const { Worker } = workerThreads;
    const here = import.meta.url;
    let worker: WorkerLike;
    if (here.endsWith(".ts")) {
      // Running from source under tsx (the tests): tsx's hooks do not reach a worker's entry module,
      // so the worker registers them before importing its TypeScript entry.
      const url = new URL("./gpu-worker.ts", here).href;
      const api = import.meta.resolve("tsx/esm/api");
      const boot = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(url)}); })`;
      worker = new Worker(boot, { eval: true, workerData: { options } }) as unknown as WorkerLike;
    } else {
      worker = new Worker(new URL("./gpu-worker.js", here), { workerData: { options } }) as unknown as WorkerLike;
    }
    const first = await new Promise<{ k: string; reason?: string; description?: DeviceDescription }>((resolve) => {
      worker.on("message", resolve);
      worker.on("error", (e: Error) => resolve({ k: "failed", reason: `the WebGPU worker failed to start: ${e.message}` }));
    });
    if (first.k !== "ready") {
      void worker.terminate();
      return first.reason ?? "the WebGPU worker did not start";
    }
    return new WorkerTransport(worker, first.description!);
  }

  send(c: Command, transfer?: ArrayBuffer[]): void {
    this.batch.push(c);
    if (transfer) this.transfers.push(...transfer);
    if (this.batch.count >= BATCH_COMMANDS) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.batch.count === 0) return;
    if (this.closing) {
      // (the program has ended: what comes now is frees from finalizers, moot with the device gone)
      this.batch.take();
      this.transfers = [];
      return;
    }
    this.check();
    const batch = this.batch.take();
    const transfers = [...this.transfers, batch.words.buffer as ArrayBuffer];
    this.transfers = [];
    this.worker.postMessage({ k: "batch", batch }, transfers);
  }

  private check(): void {
    if (this.dead) throw new Error(this.dead);
    if (this.closing) throw new Error("the WebGPU device was closed when the program's work ended");
  }

  /** Sends a command that the worker answers with a message (a read, finish, stats). */
  private request<T>(make: (ticket: number) => Command): Promise<T> {
    this.check();
    const ticket = this.nextTicket++;
    const p = new Promise<T>((resolve, reject) => this.pending.set(ticket, { resolve, reject }));
    if (this.pending.size === 1) this.worker.ref();
    this.send(make(ticket));
    this.flush();
    return p;
  }

  read(id: number, offset: number, bytes: number): Promise<ArrayBuffer> {
    return this.request((ticket) => ({ k: "read", id, offset, bytes, ticket, shared: null }));
  }

  readSync(id: number, offset: number, bytes: number): ArrayBuffer {
    this.check();
    const shared = new SharedArrayBuffer(SYNC_HEADER_BYTES + Math.max(bytes + ERROR_WORDS_BYTES, SYNC_ERROR_BYTES));
    const state = new Int32Array(shared, 0, 2);
    this.send({ k: "read", id, offset, bytes, ticket: 0, shared });
    this.flush();
    if (Atomics.wait(state, 0, SYNC_PENDING, SYNC_TIMEOUT_MS) === "timed-out") {
      throw new Error(`a synchronous WebGPU read did not complete in ${SYNC_TIMEOUT_MS / 1000} s (the worker did not answer)`);
    }
    if (Atomics.load(state, 0) === SYNC_FAILED) {
      throw new Error(new TextDecoder().decode(new Uint8Array(shared, SYNC_HEADER_BYTES, state[1]!).slice()));
    }
    if (Atomics.load(state, 0) !== SYNC_DONE) throw new Error("a synchronous WebGPU read ended in an unknown state");
    // (a copy in ordinary memory: views of shared memory are refused by some APIs, writeBuffer among them)
    const out = new ArrayBuffer(bytes + ERROR_WORDS_BYTES);
    new Uint8Array(out).set(new Uint8Array(shared, SYNC_HEADER_BYTES, bytes + ERROR_WORDS_BYTES));
    return out;
  }

  finish(): Promise<void> {
    return this.request((ticket) => ({ k: "finish", ticket }));
  }

  stats(): Promise<RuntimeStats> {
    return this.request((ticket) => ({ k: "stats", ticket }));
  }

  close(): void {
    this.flush();
    void this.worker.terminate();
  }
}

export type TransportChoice = "worker" | "main";

/** Opens the device: in a worker in Node (unless `thread` says "main"), on this thread elsewhere. */
export async function openTransport(options: GpuOptions & { thread?: TransportChoice }, isNode: boolean): Promise<Transport | string> {
  if (isNode && options.thread !== "main") return WorkerTransport.start(options);
  const opened = await openDevice(options);
  if (typeof opened === "string") return opened;
  return new LocalTransport(opened);
}
