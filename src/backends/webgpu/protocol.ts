/**
 * The commands the main thread sends to the GPU runtime (runtime.ts). In Node the runtime lives in a
 * worker thread (so a synchronous read can block the main thread on Atomics.wait while the worker
 * maps the buffer); in a browser it lives on the main thread. Either way the same commands run in the
 * same order, so both paths give the same results.
 *
 * Buffers and kernels are named by integers the main thread assigns; every buffer holds 32-bit words
 * (f32, i32, or u32 for uint8/bool), so a tensor of n elements takes 4n bytes.
 */

/**
 * A kernel's bindings, in binding order: "r" a read-only storage buffer, "w" a read-write storage
 * buffer; a trailing "u" adds a uniform block of parameters as the last binding.
 */
export type BindingLayout = string;

export type Command =
  | { k: "alloc"; id: number; bytes: number }
  | { k: "free"; id: number }
  | { k: "write"; id: number; offset: number; data: ArrayBufferView }
  | { k: "kernel"; id: number; source: string; layout: BindingLayout; label: string }
  | { k: "run"; kernel: number; buffers: number[]; params: Uint32Array | null; groups: readonly [number, number, number] }
  | { k: "copy"; src: number; srcOffset: number; dst: number; dstOffset: number; bytes: number }
  /** Read-back: `ticket` names the reply (async), or `shared` receives the bytes (synchronous). */
  | { k: "read"; id: number; offset: number; bytes: number; ticket: number; shared: SharedArrayBuffer | null }
  /** Runs a recorded plan (a staged function's GPU program), see runtime.ts runPlan. */
  /** Answered when the GPU has finished everything before it. */
  | { k: "finish"; ticket: number }
  /** Answered with the runtime's RuntimeStats. */
  | { k: "stats"; ticket: number }
  /**
   * Names the device's error words (4 u32: code, value, aux, 0) that checking kernels set; every
   * read returns them after the data, so an error a kernel found surfaces with the next read.
   */
  | { k: "errors"; id: number }
  | { k: "plan"; id: number; plan: PlanStep[] }
  | { k: "runPlan"; id: number; buffers: number[] }
  | { k: "dropPlan"; id: number };

/**
 * One step of a recorded plan. Buffers in a plan are slots: indices into the `buffers` list a
 * runPlan names (inputs, outputs, the plan's scratch and constant buffers, the error words).
 * Control flow runs on the GPU's side: a loop reads back its one-element predicate each iteration
 * (or runs a known number of times without reading anything), a branch reads its predicate once.
 */
export type PlanStep =
  | { k: "run"; kernel: number; slots: number[]; params: Uint32Array | null; groups: readonly [number, number, number] }
  | { k: "copy"; src: number; srcOffset: number; dst: number; dstOffset: number; bytes: number }
  | {
      k: "while";
      /** Steps computing the predicate (slot `pred`, one word: non-zero continues). */
      cond: PlanStep[];
      pred: number;
      body: PlanStep[];
      /** After each iteration: copies [from, to, bytes] (the body's results into the loop variables). */
      carry: [number, number, number][];
      maxIterations: number;
      /** A trip count known when the plan was made: the predicate is never read. */
      count: number | null;
    }
  | { k: "cond"; pred: number; then: PlanStep[]; else: PlanStep[] };

/** Bytes of the error words appended to every read. */
export const ERROR_WORDS_BYTES = 16;

/** Header words of a synchronous read's shared buffer: [state, error length], then the bytes. */
export const SYNC_HEADER_BYTES = 8;
export const SYNC_PENDING = 0;
export const SYNC_DONE = 1;
export const SYNC_FAILED = 2;
/** Bytes reserved after the header for an error message of a failed synchronous read. */
export const SYNC_ERROR_BYTES = 4096;

// ---------------------------------------------------------------------------------------------
// Batches in words. The frequent commands (dispatch, allocate, free) travel as 32-bit words in one
// transferred buffer instead of structured-cloned objects (which cost microseconds each); others
// travel as objects, referenced from the words in order.

const RUN = 1,
  ALLOC = 2,
  FREE = 3,
  OBJECT = 4;

export interface EncodedBatch {
  words: Uint32Array;
  objects: Command[];
}

export class BatchEncoder {
  private words = new Uint32Array(8192);
  private used = 0;
  private objects: Command[] = [];
  /** Commands in the batch. */
  count = 0;

  private room(n: number): void {
    if (this.used + n <= this.words.length) return;
    const bigger = new Uint32Array(Math.max(this.words.length * 2, this.used + n));
    bigger.set(this.words.subarray(0, this.used));
    this.words = bigger;
  }

  push(c: Command): void {
    this.count++;
    switch (c.k) {
      case "run": {
        const np = c.params ? c.params.length : 0;
        this.room(6 + c.buffers.length + np);
        const ww = this.words;
        let u = this.used;
        ww[u++] = RUN;
        ww[u++] = c.kernel;
        ww[u++] = c.buffers.length;
        for (let i = 0; i < c.buffers.length; i++) ww[u++] = c.buffers[i]!;
        ww[u++] = np;
        if (c.params) ww.set(c.params, u), (u += np);
        ww[u++] = c.groups[0];
        ww[u++] = c.groups[1];
        ww[u++] = c.groups[2];
        this.used = u;
        return;
      }
      case "alloc":
        this.room(3);
        this.words[this.used++] = ALLOC;
        this.words[this.used++] = c.id;
        this.words[this.used++] = c.bytes;
        return;
      case "free":
        this.room(2);
        this.words[this.used++] = FREE;
        this.words[this.used++] = c.id;
        return;
      default:
        this.room(2);
        this.words[this.used++] = OBJECT;
        this.words[this.used++] = this.objects.length;
        this.objects.push(c);
    }
  }

  /** The batch so far (its words copied into a buffer of their own, to transfer), and a fresh start. */
  take(): EncodedBatch {
    const batch = { words: this.words.slice(0, this.used), objects: this.objects };
    this.used = 0;
    this.count = 0;
    this.objects = [];
    return batch;
  }
}

/** Calls `each` with the batch's commands, in order. */
export function decodeBatch(b: EncodedBatch, each: (c: Command) => void): void {
  const w = b.words;
  let u = 0;
  while (u < w.length) {
    const op = w[u++];
    if (op === RUN) {
      const kernel = w[u++]!;
      const nb = w[u++]!;
      const buffers = Array.from(w.subarray(u, u + nb));
      u += nb;
      const np = w[u++]!;
      const params = np > 0 ? w.subarray(u, u + np) : null;
      u += np;
      const groups = [w[u]!, w[u + 1]!, w[u + 2]!] as const;
      u += 3;
      each({ k: "run", kernel, buffers, params, groups });
    } else if (op === ALLOC) {
      each({ k: "alloc", id: w[u]!, bytes: w[u + 1]! });
      u += 2;
    } else if (op === FREE) {
      each({ k: "free", id: w[u++]! });
    } else {
      each(b.objects[w[u++]!]!);
    }
  }
}
