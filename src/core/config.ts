/**
 * Settings from the environment: the one place Stagecraft reads environment variables, once,
 * when it is loaded. Every setting has a default; the variables are for debugging and for
 * measuring (bench/), not for configuring programs.
 */

const env = (name: string): string | undefined => (typeof process !== "undefined" ? process.env[name] : undefined);

function numberSetting(name: string, fallback: number): number {
  const v = env(name);
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  return Number.isFinite(n) ? n : fallback;
}

export const config = {
  /**
   * STAGECRAFT_HOST_MALLOC=system: leave glibc's malloc at its defaults instead of serving large
   * blocks (tensors of 32 MB and more) from its heap (core/platform/node.ts keepLargeHostBlocks).
   */
  hostMalloc: env("STAGECRAFT_HOST_MALLOC") === "system" ? ("system" as const) : ("tuned" as const),
  /**
   * STAGECRAFT_ENGINE=stagecraft|onnxruntime|auto: the engine staged functions run on when their
   * `stage(fn, { engine })` names none (checked by stage(): an unknown name is a ValueError). Unset:
   * "auto" where onnxruntime-node is installed, else our executor; "stagecraft": our executor.
   */
  engine: env("STAGECRAFT_ENGINE"),
  /**
   * STAGECRAFT_DETERMINISTIC=1|0 (also true|false): the determinism switch's setting when the
   * process starts (core/determinism.ts; sc.config.setDeterministic changes it). Unset: off.
   */
  deterministic: env("STAGECRAFT_DETERMINISTIC"),
  /** STAGECRAFT_EXECUTOR=interpret: staged functions run on the reference interpreter instead of the compiled executor. */
  executor: env("STAGECRAFT_EXECUTOR") === "interpret" ? ("interpret" as const) : ("compiled" as const),
  /** STAGECRAFT_COMPILE_AFTER: calls of a graph signature interpreted before it is compiled (default 1). */
  compileAfter: numberSetting("STAGECRAFT_COMPILE_AFTER", 1),
  /** STAGECRAFT_OPTIMIZE=0: the executor compiles traced graphs without the optimizer. */
  optimize: env("STAGECRAFT_OPTIMIZE") !== "0",
  /** STAGECRAFT_VERIFY=1: the executor's optimizer verifies the graph after every pass. */
  verify: env("STAGECRAFT_VERIFY") === "1",
  /** STAGECRAFT_SEGMENT_CHARS: size of a generated code segment (V8 optimizes functions below ~60 KB of bytecode). */
  segmentChars: numberSetting("STAGECRAFT_SEGMENT_CHARS", 12000),
  /** Generated code (characters) past which the compiled executor makes its loops functions (exec/compiled/loop-kernels.ts). */
  loopFunctionsChars: numberSetting("STAGECRAFT_LOOP_FUNCTIONS_CHARS", 48000),
  /** STAGECRAFT_SHARED_LOOP_WORK: loops (of cut-out loop functions) doing at most this many element steps per call take every array as an argument and are shared by every node and graph with the same loop (exec/compiled/loop-kernels.ts). */
  sharedLoopWork: numberSetting("STAGECRAFT_SHARED_LOOP_WORK", 256),
  /** STAGECRAFT_INLINE_SGEMM_MAX: largest product (m*n*k) the executor writes as inline JavaScript reproducing the sgemm. */
  inlineSgemmMax: numberSetting("STAGECRAFT_INLINE_SGEMM_MAX", 1536),
  /** STAGECRAFT_WASM_GEMM_MAX: largest product (m*n*k) for the executor's in-arena WebAssembly gemm. */
  wasmGemmMax: numberSetting("STAGECRAFT_WASM_GEMM_MAX", 4194304),
  /** STAGECRAFT_SPLIT_MIN_FLOPS: smallest product (2*m*n*k) the executor's gemm splits over two threads. */
  splitMinFlops: numberSetting("STAGECRAFT_SPLIT_MIN_FLOPS", 2 * 32 * 64 * 64),
  /** STAGECRAFT_SIMD_MIN_ELEMENTS: smallest float32 elementwise loop run as WebAssembly SIMD. */
  simdMinElements: numberSetting("STAGECRAFT_SIMD_MIN_ELEMENTS", 256),
  /** STAGECRAFT_MATMUL_COLUMNS: output columns an inline product computes together. */
  matmulColumns: numberSetting("STAGECRAFT_MATMUL_COLUMNS", 4),
  /** STAGECRAFT_THREADS: threads for kernels, the main thread included (default: the number of cores). */
  threads: env("STAGECRAFT_THREADS"),
  /** STAGECRAFT_WEBGPU_PLAN=0: staged functions on the webgpu device run node by node instead of as device plans. */
  webgpuPlan: env("STAGECRAFT_WEBGPU_PLAN") !== "0",
  /** STAGECRAFT_NATIVE=0: no native kernels (onnxruntime-node's products and convolutions; the WebAssembly ones run). */
  native: env("STAGECRAFT_NATIVE") !== "0",
  /**
   * STAGECRAFT_NATIVE_MIN_FLOPS: smallest float32 product or convolution (flops, 2*m*n*k) run on
   * the native kernels. Measured on a 2-core AVX-512 VM (bench/matmul.ts, crossover rows): the
   * native call's cost (~10-20 us: feeds, the binding's checks, the session's dispatch) is repaid
   * from about 2 * 96^3 flops on one thread; products that small still run in place in a compiled
   * graph's arena (no copies), so the default leaves a margin.
   */
  nativeMinFlops: numberSetting("STAGECRAFT_NATIVE_MIN_FLOPS", 2 * 128 * 128 * 128),
  /** STAGECRAFT_NO_WASM=1: no WebAssembly kernels (the TypeScript ones run). */
  noWasm: env("STAGECRAFT_NO_WASM") === "1",
};
