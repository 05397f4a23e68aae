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
