/**
 * The CPU backend's extension point for native kernels: heavy float32 products and
 * convolutions handed to a native library where one is installed (api/wiring.ts installs
 * onnxruntime-node's kernels, onnx/native-kernels.ts, when it loads). WebAssembly SIMD is 128
 * bits wide, a quarter of an AVX-512 core's peak: past a crossover a native kernel wins despite
 * its per-call cost. Where none is installed (browsers, no onnxruntime-node,
 * STAGECRAFT_NATIVE=0), the WebAssembly kernels run everything.
 *
 * Whether a product or a convolution goes native is a function of its shape only (`wins`),
 * never of timing, so eager and staged code run the same arithmetic: the compiled executor asks
 * `nativeMatmulWins` before it compiles a product into its own arena (exec/compiled/analysis.ts)
 * and otherwise calls the same kernel as eager code. How many threads a native call uses is
 * decided per call by the measured policy (thread-policy.ts); an implementation must give the
 * same bits for any thread count (onnxruntime's MLAS splits rows and columns, never k).
 */
import type { Conv2dParams } from "./conv.js";
import { configuredThreads } from "./wasm-runtime.js";
import { jobClass, ThreadPolicy } from "./thread-policy.js";

/** What a native library provides: float32 kernels writing into the caller's output storage. */
export interface NativeKernels {
  /** A name for messages and benchmarks ("onnxruntime-node"). */
  readonly name: string;
  /**
   * Whether a product of one m x k by one k x n matrix, or a convolution of these parameters,
   * runs natively: a function of the shape only (the same answer for eager and staged code).
   */
  matmulWins(m: number, n: number, k: number): boolean;
  convWins(p: Conv2dParams): boolean;
  /** out[i] (m x n) = op(A_i) op(B_i), as backends/cpu/matmul.ts's kernel defines it, on `threads` threads. */
  matmul(a: Float32Array, aOffsets: ArrayLike<number>, b: Float32Array, bOffsets: ArrayLike<number>, out: Float32Array,
         m: number, k: number, n: number, transA: boolean, transB: boolean, threads: number): void;
  /** NCHW conv2d with zero padding, as backends/cpu/conv.ts defines it. */
  conv2d(x: Float32Array, w: Float32Array, out: Float32Array, p: Conv2dParams, threads: number): void;
  /** The input gradient; false (nothing written) for a shape the library cannot express. */
  conv2dBackpropInput(dy: Float32Array, w: Float32Array, dx: Float32Array, p: Conv2dParams, threads: number): boolean;
  /** The filter gradient; false (nothing written) for a shape the library cannot express. */
  conv2dBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, p: Conv2dParams, threads: number): boolean;
}

let installed: NativeKernels | null = null;
let enabled = true;
let threadCap = Infinity;
/** Whether threads pay, per native kernel and shape: measured (thread-policy.ts). */
export const nativePolicy = new ThreadPolicy();
const stats = { calls: 0, threaded: 0 };

/** Installs (or, with null, removes) the native kernels the CPU backend uses past their crossover. */
export function installNativeKernels(kernels: NativeKernels | null): void {
  installed = kernels;
}

/** Turns the installed native kernels off (false) or back on: to compare with the WebAssembly kernels. */
export function useNativeKernels(on: boolean): void {
  enabled = on;
}

/** The native kernels in use, or null (none installed, or turned off). */
export function nativeKernels(): NativeKernels | null {
  return enabled ? installed : null;
}

/** Caps the native kernels' threads (worker-pool.ts's setThreadLimit sets it with the pool's). */
export function setNativeThreadLimit(n: number): void {
  threadCap = Math.max(1, Math.floor(n));
}

/** Counters for tests and benchmarks: native calls, and those that ran on several threads. */
export function nativeStats(): { kernels: string | null; calls: number; threaded: number } {
  return { kernels: nativeKernels()?.name ?? null, ...stats };
}

/** Whether a float32 product of this shape (per batch item) runs natively. */
export function nativeMatmulWins(m: number, n: number, k: number): boolean {
  return nativeKernels()?.matmulWins(m, n, k) ?? false;
}

/**
 * Runs `run(threads)` under the thread policy and times it for the policy (its class
 * `classOf()`: the kernel and the shape's size classes, jobClass, made only where several
 * threads may run); false when `run` returned false (the library cannot express that shape:
 * nothing ran, nothing is recorded).
 */
function timed(classOf: () => string, flops: number, run: (threads: number) => boolean | void): boolean {
  const max = Math.min(configuredThreads(), threadCap);
  const key = max > 1 ? classOf() : "";
  const many = max > 1 && nativePolicy.useThreads(key);
  const t0 = performance.now();
  if (run(many ? max : 1) === false) return false;
  if (max > 1) nativePolicy.record(key, many, (performance.now() - t0) / 1000, flops);
  stats.calls++;
  if (many) stats.threaded++;
  return true;
}

/** The product natively when it wins there; false (nothing written) otherwise. */
export function tryNativeMatmul(a: Float32Array, aOffsets: ArrayLike<number>, b: Float32Array, bOffsets: ArrayLike<number>, out: Float32Array,
                                m: number, k: number, n: number, transA: boolean, transB: boolean): boolean {
  const nk = nativeKernels();
  if (nk === null || !nk.matmulWins(m, n, k)) return false;
  const batch = aOffsets.length;
  return timed(() => jobClass("matmul", [m, n, k, batch], transA, transB), 2 * m * n * k * batch, (t) => nk.matmul(a, aOffsets, b, bOffsets, out, m, k, n, transA, transB, t));
}

/** A convolution's class maker (padding is not listed: it shows in the output's size). */
const convClass = (kernel: string, p: Conv2dParams) => () =>
  jobClass(kernel, [p.batch, p.inC, p.inH, p.inW, p.outC, p.outH, p.outW, p.kH, p.kW, p.strideH, p.strideW, p.dilationH, p.dilationW, p.groups]);
const convFlops = (p: Conv2dParams) => 2 * p.batch * p.outC * p.outH * p.outW * (p.inC / p.groups) * p.kH * p.kW;

/** The convolution natively when it wins there; false (nothing written) otherwise. */
export function tryNativeConv2d(x: Float32Array, w: Float32Array, out: Float32Array, p: Conv2dParams): boolean {
  const nk = nativeKernels();
  if (nk === null || !nk.convWins(p)) return false;
  return timed(convClass("conv2d", p), convFlops(p), (t) => nk.conv2d(x, w, out, p, t));
}

/** The input gradient natively when it wins there and the library expresses it; false otherwise. */
export function tryNativeConv2dBackpropInput(dy: Float32Array, w: Float32Array, dx: Float32Array, p: Conv2dParams): boolean {
  const nk = nativeKernels();
  if (nk === null || !nk.convWins(p)) return false;
  return timed(convClass("conv2dBackpropInput", p), convFlops(p), (t) => nk.conv2dBackpropInput(dy, w, dx, p, t));
}

/** The filter gradient natively when it wins there and the library expresses it; false otherwise. */
export function tryNativeConv2dBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, p: Conv2dParams): boolean {
  const nk = nativeKernels();
  if (nk === null || !nk.convWins(p)) return false;
  return timed(convClass("conv2dBackpropFilter", p), convFlops(p), (t) => nk.conv2dBackpropFilter(x, dy, dw, p, t));
}
