// Worker threads that run sgemm tasks on the shared wasm memory.
//
// Protocol (all words in one shared Int32Array `ctl`; worker w >= 1 owns block w):
//   main:   writes the job (task table address, task count, NEXT = 0), sets CLAIM[w] = g,
//           GEN[w] = g and notifies GEN[w]; then takes tasks itself (thread 0).
//   worker: wakes on GEN[w], takes ownership with CAS(CLAIM[w], g -> -g), then takes tasks,
//           stores DONE[w] = g and notifies.
//   Tasks are taken one at a time from the shared counter NEXT (Atomics.add), so a thread
//   that the scheduler holds back (a busy core) takes fewer: no thread waits for another's
//   fixed share. When no task is left, main revokes every offer not yet claimed with
//   CAS(CLAIM[w], g -> 0) (that worker never woke: nothing to wait for), and waits for the
//   others to finish the task they are on. Exactly one side wins each CAS, and each task
//   index is handed out once, so every task runs exactly once and nothing hangs.
// A task is 12 int32 words: sgemm(a, b, c, m, n, k, lda, ldb, ldc, transA, transB, 0), where
// the executing thread passes its own packing workspace; or, with a last word id > 0, a call
// of the extra kernel registered as id (exec/wasm-gemm.ts, on a compiled graph's own memory)
// with the first nine words as arguments, gemm-like (a, b, c, m, n, k, sai, sap, acc). When
// word 9 (rows per chunk) is > 0, the threads share that call's rows in chunks, each taking the
// next chunk from the counter in word 10 until none are left (see ROW_CHUNKS).
// Extra kernels reach the workers as messages (module, memory, export name) on a port that
// each worker drains synchronously when EXTRA_GEN changes. SPINNING is 1 from the end of a
// worker's job until it goes to sleep: a job posted meanwhile starts without a wake-up.
import { SYNC_WORKER_MESSAGES, startKernelWorker } from "../../core/platform/node.js";
import { getWasmRuntime, type WasmRuntime } from "./wasm-runtime.js";
import { setNativeThreadLimit } from "./native.js";
import { jobClass, ThreadPolicy } from "./thread-policy.js";

export const TASK_WORDS = 12;
const BLOCK = 8; // words per thread block in ctl
const GEN = 0, CLAIM = 1, DONE = 2, START = 3, COUNT = 4, ERR = 5, SPINNING = 6;
const TABLE = 0, EXTRA_GEN = 1, NEXT = 2, TOTAL = 3; // in block 0 (the main thread's block)
const SPIN = 20000; // polls (~tens of microseconds) before falling back to Atomics.wait

function spinUntil(ctl: Int32Array, i: number, v: number): void {
  for (let n = 0; n < SPIN && Atomics.load(ctl, i) !== v; n++);
}

/**
 * Below this many flops (2*m*n*k summed over the batch) everything runs on the main thread.
 * Measured on a 2-core VM: waking a sleeping worker costs 40-300us, so splitting only pays
 * reliably from ~180^3 products; right after a parallel job the worker is still spinning
 * (WORKER_SPIN_MS) and splitting already pays from ~48^3.
 */
export const PARALLEL_MIN_FLOPS = 2 * 180 * 180 * 180;
export const PARALLEL_MIN_FLOPS_WARM = 2 * 48 * 48 * 48;
const WORKER_SPIN_MS = 1;

/**
 * Runs chunks of a row-chunked extra task (words at o in t) until the counter runs out: chunk c
 * is rows [c*chunk, (c+1)*chunk) of C = op(A) B, A's rows sai elements apart, C's n apart.
 */
const ROW_CHUNKS = `function rowChunks(f, t, o) {
  const m = t[o + 3], n = t[o + 4], sai = t[o + 6], chunk = t[o + 9];
  for (;;) {
    const r0 = Atomics.add(t, o + 10, 1) * chunk;
    if (r0 >= m) return;
    f(t[o] + r0 * sai * 4, t[o + 1], t[o + 2] + r0 * n * 4, Math.min(chunk, m - r0), n, t[o + 5], sai, t[o + 7], t[o + 8]);
  }
}`;
const rowChunks = new Function(`${ROW_CHUNKS}; return rowChunks;`)() as (f: ExtraKernel, t: Int32Array, o: number) => void;

// (run by core/platform: it defines workerData and receiveMessageOnPort)
const WORKER_SOURCE = `
${ROW_CHUNKS}
const { module, memory, control, tid, ws, port } = workerData;
const ctl = new Int32Array(control);
const B = ${BLOCK} * tid;
const exp = new WebAssembly.Instance(module, { env: { memory } }).exports;
const extras = new Map();
let extraGen = 0;
function extra(id) {
  const g = Atomics.load(ctl, ${EXTRA_GEN});
  if (g !== extraGen) {
    extraGen = g;
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
      const x = m.message;
      if (x.drop) extras.delete(x.id);
      else extras.set(x.id, new WebAssembly.Instance(x.module, { env: { memory: x.memory } }).exports[x.name]);
    }
  }
  const f = extras.get(id);
  if (f === undefined) throw new Error("unknown kernel " + id);
  return f;
}
let last = 0; // (a job posted before this worker started is taken, or already revoked)
for (;;) {
  // spin briefly first: a futex wake-up costs tens of microseconds on a VM
  // (the clock is read every 1024 polls: reading it allocates, and a worker that allocates
  // while it waits collects garbage, which delays the job it waits for)
  const until = performance.now() + ${WORKER_SPIN_MS};
  for (let n = 1; Atomics.load(ctl, B + ${GEN}) === last; n++) if ((n & 1023) === 0 && performance.now() >= until) break;
  Atomics.store(ctl, B + ${SPINNING}, 0);
  Atomics.wait(ctl, B + ${GEN}, last);
  const g = Atomics.load(ctl, B + ${GEN});
  if (g === last) continue;
  last = g;
  if (Atomics.compareExchange(ctl, B + ${CLAIM}, g, -g) !== g) continue; // revoked by main
  Atomics.notify(ctl, B + ${CLAIM});
  try {
    const t = new Int32Array(memory.buffer);
    const count = Atomics.load(ctl, B + ${COUNT});
    const table = Atomics.load(ctl, ${TABLE}) >>> 2, total = Atomics.load(ctl, ${TOTAL});
    for (let i = count > 0 ? Atomics.add(ctl, ${NEXT}, 1) : total; i < total; i = Atomics.add(ctl, ${NEXT}, 1)) {
      Atomics.add(ctl, B + ${START}, 1); // (tasks this worker took)
      const o = table + i * ${TASK_WORDS};
      if (t[o + 11] !== 0) {
        const f = extra(t[o + 11]);
        if (t[o + 9] > 0) rowChunks(f, t, o);
        else f(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7], t[o + 8]);
      }
      else exp.sgemm(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7], t[o + 8], t[o + 9], t[o + 10], ws);
    }
  } catch (e) {
    Atomics.store(ctl, B + ${ERR}, 1);
  }
  Atomics.store(ctl, B + ${SPINNING}, 1); // (set before DONE: the next job finds it polling)
  Atomics.store(ctl, B + ${DONE}, g);
  Atomics.notify(ctl, B + ${DONE});
}
`;

class Pool {
  readonly ctl: Int32Array;
  readonly workers: (object | null)[] = [null]; // index 0 = main thread
  /** Our ends of the workers' extra-kernel ports (index 0 unused). */
  readonly ports: (InstanceType<typeof MessagePort> | null)[] = [null];
  private gen = 0;

  constructor(readonly rt: WasmRuntime) {
    this.ctl = new Int32Array(new SharedArrayBuffer(BLOCK * 4 * rt.maxThreads));
    for (let tid = 1; tid < rt.maxThreads; tid++) {
      const { port1, port2 } = new MessageChannel();
      (port1 as { unref?: () => void }).unref?.();
      const data = { module: rt.module, memory: rt.memory, control: this.ctl.buffer, tid, ws: rt.ws(tid), port: port2 };
      const w = startKernelWorker(WORKER_SOURCE, data, [port2]);
      if (w === null) break;
      this.ports.push(port1);
      const drop = () => { this.workers[tid] = null; };
      w.onExit(drop);
      this.workers.push(w);
    }
  }

  get size(): number {
    return this.workers.length;
  }

  /** Sends a message to every worker's extra-kernel port (read at their next extra task). */
  broadcast(message: object): void {
    for (const p of this.ports) p?.postMessage(message);
    Atomics.add(this.ctl, EXTRA_GEN, 1);
  }

  /** Whether worker t is awake and polling for work (a job starts without a wake-up). */
  spinning(t: number): boolean {
    return this.workers[t] !== null && Atomics.load(this.ctl, t * BLOCK + SPINNING) === 1;
  }

  /** Wakes worker t with an empty job, without waiting: it spins for the next one. */
  wake(t: number): void {
    // (not while it polls, nor again before it has taken the last wake-up)
    if (this.workers[t] === null || Atomics.load(this.ctl, t * BLOCK + SPINNING) === 1 || Atomics.load(this.ctl, t * BLOCK + CLAIM) > 0) return;
    const g = (this.gen = (this.gen % 0x3fffffff) + 1);
    const b = t * BLOCK;
    Atomics.store(this.ctl, b + COUNT, 0);
    Atomics.store(this.ctl, b + CLAIM, g);
    Atomics.store(this.ctl, b + GEN, g);
    Atomics.notify(this.ctl, b + GEN);
  }

  /**
   * Offers task 0 of `table` (a row-chunked task) to worker 1 and runs `mainWork` (which takes
   * chunks of the same task until none are left); then either revokes the offer, if the worker
   * never took it, or waits for the worker to finish the chunk it is on. The main thread never
   * waits for a worker to wake up, and a slow worker only holds it up by one chunk.
   */
  share(table: number, mainWork: () => void): void {
    const ctl = this.ctl;
    const g = (this.gen = (this.gen % 0x3fffffff) + 1);
    const b = BLOCK;
    Atomics.store(ctl, TABLE, table);
    Atomics.store(ctl, TOTAL, 1);
    Atomics.store(ctl, NEXT, 0);
    Atomics.store(ctl, b + START, 0);
    Atomics.store(ctl, b + COUNT, 1);
    Atomics.store(ctl, b + ERR, 0);
    Atomics.store(ctl, b + CLAIM, g);
    Atomics.store(ctl, b + GEN, g);
    Atomics.notify(ctl, b + GEN);
    mainWork();
    if (Atomics.compareExchange(ctl, b + CLAIM, g, 0) === g) {
      stats.revoked++;
      return;
    }
    stats.workerShares++;
    spinUntil(ctl, b + DONE, g);
    while (Atomics.load(ctl, b + DONE) !== g) Atomics.wait(ctl, b + DONE, Atomics.load(ctl, b + DONE), 1000);
  }

  /**
   * Runs the `total` tasks of `table` on the main thread and up to `threads - 1` workers, each
   * taking the next task from the shared counter. Returns how many tasks workers ran.
   */
  run(table: number, total: number, threads: number): number {
    const ctl = this.ctl;
    const g = (this.gen = (this.gen % 0x3fffffff) + 1);
    Atomics.store(ctl, TABLE, table);
    Atomics.store(ctl, TOTAL, total);
    Atomics.store(ctl, NEXT, 0);
    const offered: number[] = [];
    for (let t = 1; t < Math.min(threads, this.workers.length); t++) {
      const b = t * BLOCK;
      if (this.workers[t] === null) continue;
      Atomics.store(ctl, b + START, 0);
      Atomics.store(ctl, b + COUNT, 1);
      Atomics.store(ctl, b + ERR, 0);
      Atomics.store(ctl, b + CLAIM, g);
      Atomics.store(ctl, b + GEN, g);
      Atomics.notify(ctl, b + GEN);
      offered.push(t);
    }
    for (let i = Atomics.add(ctl, NEXT, 1); i < total; i = Atomics.add(ctl, NEXT, 1)) runRange(this.rt, table, i, 1, 0);
    let failed = false, helped = 0;
    for (const t of offered) {
      const b = t * BLOCK;
      if (Atomics.compareExchange(ctl, b + CLAIM, g, 0) === g) {
        stats.revoked++; // never woke: nothing left for it to do
        continue;
      }
      spinUntil(ctl, b + DONE, g);
      while (Atomics.load(ctl, b + DONE) !== g) Atomics.wait(ctl, b + DONE, Atomics.load(ctl, b + DONE), 1000);
      if (Atomics.load(ctl, b + ERR) !== 0) failed = true;
      const took = Atomics.load(ctl, b + START);
      helped += took;
      if (took > 0) stats.workerShares++;
    }
    if (failed) throw new Error("stagecraft: wasm worker task failed");
    return helped;
  }
}

function runRange(rt: WasmRuntime, table: number, start: number, count: number, tid: number): void {
  const t = rt.i32(), ws = rt.ws(tid), o0 = table >>> 2;
  for (let i = start; i < start + count; i++) {
    const o = o0 + i * TASK_WORDS;
    if (t[o + 11] !== 0) {
      const f = extraKernels.get(t[o + 11])!.deref()!;
      if (t[o + 9] > 0) rowChunks(f, t, o);
      else f(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7], t[o + 8]);
      continue;
    }
    rt.exports.sgemm(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7],
      t[o + 8], t[o + 9], t[o + 10], ws);
  }
}

let pool: Pool | null | undefined;
const stats = { parallelJobs: 0, workerShares: 0, revoked: 0, splitCalls: 0 };

/** Counters for tests and benchmarks: jobs split over threads, shares run by workers/revoked, split extra-kernel calls. */
export function poolStats(): { threads: number; parallelJobs: number; workerShares: number; revoked: number; splitCalls: number } {
  return { threads: pool ? pool.size : 1, ...stats };
}

function getPool(rt: WasmRuntime): Pool | null {
  if (pool !== undefined) return pool;
  pool = null;
  if (rt.maxThreads > 1) {
    try { pool = new Pool(rt); } catch { pool = null; }
  }
  return pool;
}

let threadLimit = Infinity;
let lastParallelEnd = -Infinity;
/** Whether threads pay, per class of sgemm job: measured (thread-policy.ts). */
export const sgemmPolicy = new ThreadPolicy();

/** Caps the threads used per kernel call (main thread included); e.g. 1 for single-threaded. */
export function setThreadLimit(n: number): void {
  threadLimit = Math.max(1, Math.floor(n));
  setNativeThreadLimit(threadLimit);
}

/** How many threads a job of `flops` floating-point operations may use (before the policy's say). */
export function threadsFor(rt: WasmRuntime, flops: number): number {
  if (rt.maxThreads < 2 || threadLimit < 2) return 1;
  const warm = performance.now() - lastParallelEnd < WORKER_SPIN_MS * 0.8;
  if (flops < (warm ? PARALLEL_MIN_FLOPS_WARM : PARALLEL_MIN_FLOPS)) return 1;
  const p = getPool(rt);
  return p === null ? 1 : Math.min(p.size, threadLimit);
}

/**
 * Runs `total` sgemm tasks stored at byte address `table` (TASK_WORDS int32 each) on up to
 * `threads` threads (tasks taken one at a time). Returns how many tasks worker threads ran.
 * Falls back to running everything on the main thread if the pool is unavailable or fails.
 */
export function runTasks(rt: WasmRuntime, table: number, total: number, threads: number): number {
  const p = threads > 1 ? getPool(rt) : null;
  if (p !== null) {
    try {
      const helped = p.run(table, total, threads);
      lastParallelEnd = performance.now();
      stats.parallelJobs++;
      return helped;
    } catch {
      pool = null; // give up on threads; results are recomputed below
    }
  }
  runRange(rt, table, 0, total, 0);
  return 0;
}

/** Flops per task when a job is cut for several threads: ~100 us of work on one core. */
const TASK_FLOPS = 1 << 23;
/** At most this many tasks per thread: each task repacks its B panel. */
const TASKS_PER_THREAD = 8;

/**
 * C_i = op(A_i) op(B_i) for i < aPtrs.length (byte addresses in wasm memory, all the same
 * shape and leading dimensions). When threads may pay (threadsFor, then the measured policy),
 * every product's rows (or columns, when m < n) are cut into tasks of whole microkernel
 * blocks that the threads take one at a time; each output element is computed by one task
 * with the same code, so the bits do not depend on the cut.
 */
export function sgemmBatch(rt: WasmRuntime, aPtrs: number[], bPtrs: number[], cPtrs: number[],
                           m: number, n: number, k: number, lda: number, ldb: number, ldc: number,
                           transA: boolean, transB: boolean): void {
  const batch = aPtrs.length;
  const flops = 2 * m * n * k * batch;
  const max = Math.min(threadsFor(rt, flops), rt.maxThreads);
  const key = jobClass("sgemm", flops);
  const T = max > 1 && sgemmPolicy.useThreads(key) ? max : 1;
  // pieces per product: enough tasks for T threads to balance, none much under TASK_FLOPS
  const wanted = T === 1 ? 1 : Math.max(1, Math.min(Math.ceil((T * TASKS_PER_THREAD) / batch), Math.floor(flops / batch / TASK_FLOPS)));
  const byRows = m >= n;
  const unit = byRows ? 4 : 8; // the microkernel's height / width
  const span = byRows ? m : n;
  const step = Math.ceil(span / wanted / unit) * unit;
  const pieces = Math.ceil(span / step);
  const table = rt.alloc(batch * pieces * TASK_WORDS * 4);
  const w = rt.i32();
  const ta = transA ? 1 : 0, tb = transB ? 1 : 0;
  let o = table >>> 2;
  const put = (a: number, b: number, c: number, mm: number, nn: number) => {
    w[o] = a; w[o + 1] = b; w[o + 2] = c; w[o + 3] = mm; w[o + 4] = nn; w[o + 5] = k;
    w[o + 6] = lda; w[o + 7] = ldb; w[o + 8] = ldc; w[o + 9] = ta; w[o + 10] = tb; w[o + 11] = 0;
    o += TASK_WORDS;
  };
  for (let i = 0; i < batch; i++) {
    for (let q = 0; q < pieces; q++) {
      const s0 = q * step, s1 = Math.min(span, s0 + step);
      if (byRows) put(aPtrs[i] + (transA ? s0 : s0 * lda) * 4, bPtrs[i], cPtrs[i] + s0 * ldc * 4, s1 - s0, n);
      else put(aPtrs[i], bPtrs[i] + (transB ? s0 * ldb : s0) * 4, cPtrs[i] + s0 * 4, m, s1 - s0);
    }
  }
  const t0 = performance.now();
  const helped = runTasks(rt, table, batch * pieces, T);
  if (max > 1) sgemmPolicy.record(key, T > 1, (performance.now() - t0) / 1000, flops, T > 1 && helped === 0);
}

// ---------------------------------------------------------------------------------------
// extra kernels: functions of other modules on their own shared memories

/** An extra kernel takes nine int32 arguments (exec/wasm-gemm.ts's gemm). */
export type ExtraKernel = (a0: number, a1: number, a2: number, a3: number, a4: number, a5: number, a6: number, a7: number, a8: number) => void;

/** This thread's instances of the registered kernels, held weakly: their owners keep them. */
const extraKernels = new Map<number, { deref(): ExtraKernel | undefined }>();
let nextExtraId = 1;
const dropExtra = new FinalizationRegistry<number>((id) => {
  extraKernels.delete(id);
  pool?.broadcast({ drop: true, id });
});

/**
 * Registers `fn`, export `name` of `module` instantiated here on the shared WebAssembly
 * `memory`, with the worker threads (which instantiate it on the same memory); dropped there
 * once `fn` is collected. Null when there are no worker threads.
 */
export function registerExtraKernel(module: object, memory: object, name: string, fn: ExtraKernel): number | null {
  const rt = getWasmRuntime();
  if (rt === null || rt.maxThreads < 2 || !SYNC_WORKER_MESSAGES) return null;
  const p = getPool(rt);
  if (p === null || p.size < 2) return null;
  const id = nextExtraId++;
  extraKernels.set(id, new WeakRef(fn));
  dropExtra.register(fn, id);
  p.broadcast({ id, module, memory, name });
  return id;
}

/**
 * Calls registered kernel `id` (gemm-like arguments, `args`) with its rows shared between this
 * thread and the first worker in chunks of `chunk` rows, when that worker is awake (polling).
 * Otherwise runs nothing, wakes the worker for the next call and returns false: the caller
 * makes the whole call itself. Every row is computed by exactly one thread, with the same code.
 */
export function runRowChunks(id: number, fn: ExtraKernel, args: readonly number[], chunk: number): boolean {
  const p = pool;
  if (!p || threadLimit < 2 || p.size < 2) return false;
  if (!p.spinning(1)) {
    p.wake(1);
    return false;
  }
  const rt = p.rt;
  rt.reset();
  const table = rt.alloc(TASK_WORDS * 4);
  const w = rt.i32(),
    o = table >>> 2;
  for (let i = 0; i < 9; i++) w[o + i] = args[i]!;
  w[o + 9] = chunk;
  w[o + 10] = 0;
  w[o + 11] = id;
  p.share(table, () => rowChunks(fn, w, o));
  stats.splitCalls++;
  return true;
}
