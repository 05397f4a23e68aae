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
// each worker drains synchronously when EXTRA_GEN changes.
// Workers sleep between jobs (Atomics.wait) and never spin: a worker polling for the next job
// takes a core's time that nothing measures, and on a machine whose other core is busy it took
// the main thread's own (the staged RNN training step ran at 0.68-0.76x of one thread with a
// 1 ms spin, 0.97-0.99x without, measured interleaved in one process). Every job is timed as a
// whole by the thread policy (thread-policy.ts), wake-up included, so the policy sees all that
// threads cost. WORKER_DELAY (block 0) makes workers sleep that many ms after taking a task or
// chunk: tests use it to play a worker the scheduler holds back with work in hand.
import { SYNC_WORKER_MESSAGES, startKernelWorker } from "../../core/platform/node.js";
import { getWasmRuntime, type WasmRuntime } from "./wasm-runtime.js";
import { setNativeThreadLimit } from "./native.js";
import { jobClass, sizeClass, ThreadPolicy } from "./thread-policy.js";

export const TASK_WORDS = 12;
const BLOCK = 8; // words per thread block in ctl
const GEN = 0, CLAIM = 1, DONE = 2, START = 3, COUNT = 4, ERR = 5;
const TABLE = 0, EXTRA_GEN = 1, NEXT = 2, TOTAL = 3, WORKER_DELAY = 4, SLEEP = 5; // in block 0 (the main thread's block)
const SPIN = 20000; // polls (~tens of microseconds) before falling back to Atomics.wait

function spinUntil(ctl: Int32Array, i: number, v: number): void {
  for (let n = 0; n < SPIN && Atomics.load(ctl, i) !== v; n++);
}

/**
 * Below this many flops (2*m*n*k summed over the batch) everything runs on the main thread,
 * without asking the policy. Measured on a 2-core VM: waking a sleeping worker costs
 * 40-300us, so splitting only pays from ~180^3 products.
 */
export const PARALLEL_MIN_FLOPS = 2 * 180 * 180 * 180;

/**
 * Runs chunks of a row-chunked extra task (words at o in t) until the counter runs out: chunk c
 * is rows [c*chunk, (c+1)*chunk) of C = op(A) B, A's rows sai elements apart, C's n apart.
 */
const ROW_CHUNKS = `function rowChunks(f, t, o, pause) {
  const m = t[o + 3], n = t[o + 4], sai = t[o + 6], chunk = t[o + 9];
  for (let taken = 0; ; taken++) {
    const r0 = Atomics.add(t, o + 10, 1) * chunk;
    if (r0 >= m) return taken;
    if (pause) pause();
    f(t[o] + r0 * sai * 4, t[o + 1], t[o + 2] + r0 * n * 4, Math.min(chunk, m - r0), n, t[o + 5], sai, t[o + 7], t[o + 8]);
  }
}`;
const rowChunks = new Function(`${ROW_CHUNKS}; return rowChunks;`)() as (f: ExtraKernel, t: Int32Array, o: number, pause?: () => void) => number;

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
// (a test's stand-in for a worker the scheduler holds back with a task or chunk in hand)
function pause() {
  const delay = Atomics.load(ctl, ${WORKER_DELAY});
  if (delay > 0) Atomics.wait(ctl, ${SLEEP}, 0, delay);
}
let last = 0; // (a job posted before this worker started is taken, or already revoked)
for (;;) {
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
      const o = table + i * ${TASK_WORDS};
      let units = 1; // (tasks this worker took; chunks of a row-chunked task)
      if (t[o + 11] !== 0) {
        const f = extra(t[o + 11]);
        if (t[o + 9] > 0) units = rowChunks(f, t, o, pause);
        else {
          pause();
          f(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7], t[o + 8]);
        }
      } else {
        pause();
        exp.sgemm(t[o], t[o + 1], t[o + 2], t[o + 3], t[o + 4], t[o + 5], t[o + 6], t[o + 7], t[o + 8], t[o + 9], t[o + 10], ws);
      }
      Atomics.add(ctl, B + ${START}, units);
    }
  } catch (e) {
    Atomics.store(ctl, B + ${ERR}, 1);
  }
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

  /**
   * Offers task 0 of `table` (a row-chunked task) to worker 1 and runs `mainWork` (which takes
   * chunks of the same task until none are left); then either revokes the offer, if the worker
   * never took it, or waits for the worker to finish the chunk it is on. The main thread never
   * waits for a worker to wake up, and a slow worker only holds it up by one chunk. Returns how
   * many chunks the worker ran (0: revoked, or it woke too late to take one).
   */
  share(table: number, mainWork: () => void): number {
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
      return 0;
    }
    spinUntil(ctl, b + DONE, g);
    while (Atomics.load(ctl, b + DONE) !== g) Atomics.wait(ctl, b + DONE, Atomics.load(ctl, b + DONE), 1000);
    if (Atomics.load(ctl, b + ERR) !== 0) throw new Error("stagecraft: wasm worker task failed");
    const took = Atomics.load(ctl, b + START);
    if (took > 0) stats.workerShares++;
    return took;
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
/** Whether threads pay, per class of job (sgemm tasks, row-shared products): measured (thread-policy.ts). */
export const poolPolicy = new ThreadPolicy();

/** Caps the threads used per kernel call (main thread included); e.g. 1 for single-threaded. */
export function setThreadLimit(n: number): void {
  threadLimit = Math.max(1, Math.floor(n));
  setNativeThreadLimit(threadLimit);
}

/** How many threads a job of `flops` floating-point operations may use (before the policy's say). */
export function threadsFor(rt: WasmRuntime, flops: number): number {
  if (rt.maxThreads < 2 || threadLimit < 2 || flops < PARALLEL_MIN_FLOPS) return 1;
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
/** Pieces per product (tests: setSplitForTests); null: cut by TASK_FLOPS and TASKS_PER_THREAD. */
let forcedPieces: number | null = null;

/**
 * For tests: cut every threaded product into `pieces` tasks (null: the usual cut), and make
 * workers sleep `workerDelayMs` after taking each task or chunk, before running it, as a
 * worker the scheduler holds back with the task in hand would (0: no delay).
 */
export function setSplitForTests(pieces: number | null, workerDelayMs = 0): void {
  forcedPieces = pieces === null ? null : Math.max(1, Math.floor(pieces));
  const rt = getWasmRuntime();
  const p = rt !== null ? getPool(rt) : null;
  if (p !== null) Atomics.store(p.ctl, WORKER_DELAY, Math.max(0, Math.floor(workerDelayMs)));
}

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
  const t0 = performance.now();
  const batch = aPtrs.length;
  const flops = 2 * m * n * k * batch;
  const max = Math.min(threadsFor(rt, flops), rt.maxThreads);
  const key = max > 1 ? jobClass("sgemm", [m, n, k, batch], transA, transB) : ""; // (only where threads may run)
  const T = max > 1 && poolPolicy.useThreads(key) ? max : 1;
  // pieces per product: enough tasks for T threads to balance, none much under TASK_FLOPS
  const wanted = T === 1 ? 1 : forcedPieces ?? Math.max(1, Math.min(Math.ceil((T * TASKS_PER_THREAD) / batch), Math.floor(flops / batch / TASK_FLOPS)));
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
  // (timed as a whole, from the table's set-up to the last worker's end: what the caller pays)
  const helped = runTasks(rt, table, batch * pieces, T);
  if (max > 1) poolPolicy.record(key, T > 1, (performance.now() - t0) / 1000, flops, T > 1 && helped === 0);
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
 * The policy's class of a row-shared product: jobClass's size classes of m, n and k and whether A
 * is transposed, packed 5 bits each into a number (these calls can be a few microseconds: no
 * string built per call). Exported for tests.
 */
export function rowsClass(m: number, n: number, k: number, transA: boolean): number {
  return (sizeClass(m) & 31) | ((sizeClass(n) & 31) << 5) | ((sizeClass(k) & 31) << 10) | (transA ? 1 << 15 : 0);
}

/**
 * Calls registered kernel `fn` (its id `id`; gemm-like arguments `args`: rows m = args[3]).
 * When the thread policy says threads pay for products of this size, the rows are shared
 * between this thread and the first worker in chunks of `chunk` rows, each thread taking the
 * next chunk until none are left; otherwise this thread makes the whole call. Every row is
 * computed by exactly one thread with the same code, so the bits do not depend on the split.
 * Each call is timed as a whole for the policy (thread-policy.ts).
 */
export function runRowChunks(id: number, fn: ExtraKernel, args: readonly number[], chunk: number): void {
  const t0 = performance.now();
  const p = pool;
  const m = args[3]!, flops = 2 * m * args[4]! * args[5]!;
  // (the compiled executor sends products from config.splitMinFlops up: the policy measures them)
  const may = !!p && threadLimit >= 2 && p.size >= 2 && m >= 2 * chunk;
  // (A transposed: its stride along k, args[7], is m rather than 1: exec/compiled/codegen.ts)
  const key = rowsClass(m, args[4]!, args[5]!, args[7]! !== 1);
  if (!may || !poolPolicy.useThreads(key)) {
    fn(args[0]!, args[1]!, args[2]!, m, args[4]!, args[5]!, args[6]!, args[7]!, args[8]!);
    if (may) poolPolicy.record(key, false, (performance.now() - t0) / 1000, flops);
    return;
  }
  const rt = p!.rt;
  rt.reset();
  const table = rt.alloc(TASK_WORDS * 4);
  const w = rt.i32(),
    o = table >>> 2;
  for (let i = 0; i < 9; i++) w[o + i] = args[i]!;
  w[o + 9] = chunk;
  w[o + 10] = 0;
  w[o + 11] = id;
  let took = 0;
  try {
    took = p!.share(table, () => rowChunks(fn, w, o));
  } catch (e) {
    // a worker failed: give up on threads. Which rows it finished is unknown: a product that
    // overwrites its output is made again here; one that accumulates into it cannot be
    pool = null;
    if (args[8] !== 0) throw e;
    fn(args[0]!, args[1]!, args[2]!, m, args[4]!, args[5]!, args[6]!, args[7]!, args[8]!);
    return;
  }
  stats.splitCalls++;
  poolPolicy.record(key, true, (performance.now() - t0) / 1000, flops, took === 0);
}
