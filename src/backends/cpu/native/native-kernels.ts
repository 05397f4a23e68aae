/**
 * Native float32 products and convolutions: onnxruntime-node's kernels (MLAS, AVX2/AVX-512
 * where the CPU has them), run synchronously through cached single-model sessions
 * (ort-session.ts). WebAssembly SIMD is 128 bits wide, a quarter of an AVX-512 core's peak:
 * above the crossover the native kernel wins despite its per-call cost (~10-20 us: building
 * the feeds, the binding's checks, the session's dispatch). Below it, or where onnxruntime-node
 * is absent (browsers), the WebAssembly kernels run.
 *
 * Whether a product goes native depends only on its shape (`nativeMatmulWins`), never on
 * timing, so eager and staged code run the same arithmetic: the executor asks the same question
 * before it compiles a product inline (exec/compile.ts). How many threads the native kernel
 * uses is decided per call by the measured policy (thread-policy.ts); MLAS splits products and
 * convolutions by rows and columns, never along k, so the thread count does not change the bits.
 */
import { jobClass, ThreadPolicy } from "../thread-policy.js";
import { configuredThreads } from "../wasm-runtime.js";
import type { OnnxGraph, OnnxNode } from "./onnx-model.js";
import { nativeRuntime, SessionCache, unshared } from "./ort-session.js";

const envNumber = (name: string, fallback: number): number => {
  const v = typeof process !== "undefined" ? process.env[name] : undefined;
  const n = v === undefined || v === "" ? NaN : Number(v);
  return Number.isFinite(n) ? n : fallback;
};

/**
 * Smallest product or convolution (flops, 2*m*n*k) run natively. Measured on a 2-core AVX-512
 * VM (bench/matmul.ts, crossover rows): the native product's per-call cost is repaid from
 * about 2 * 96^3 flops on one thread; products that small still run in place in a compiled
 * graph's memory (no copies), so the default leaves a margin.
 */
export const NATIVE_MIN_FLOPS = envNumber("STAGECRAFT_NATIVE_MIN_FLOPS", 2 * 128 * 128 * 128);

let enabled = true;
let threadCap = Infinity;
const policy = new ThreadPolicy();
const sessions = new SessionCache();
const stats = { calls: 0, threaded: 0 };

/** Turns the native kernels off (false) or back on; e.g. to compare with the WebAssembly kernels. */
export function setNativeKernels(on: boolean): void {
  enabled = on;
}

/** Caps the native kernels' threads (the worker pool's setThreadLimit sets it too). */
export function setNativeThreadLimit(n: number): void {
  threadCap = Math.max(1, Math.floor(n));
}

/** Whether native kernels are loaded and enabled. */
export function nativeAvailable(): boolean {
  return enabled && nativeRuntime() !== null;
}

/** Counters for tests and benchmarks: native calls, and those that ran on several threads. */
export function nativeStats(): { available: boolean; calls: number; threaded: number; sessions: number } {
  return { available: nativeAvailable(), ...stats, sessions: sessions.size };
}

/** Whether a float32 product of this shape (per batch item) runs natively: a function of the shape only. */
export function nativeMatmulWins(m: number, n: number, k: number): boolean {
  return 2 * m * n * k >= NATIVE_MIN_FLOPS && nativeAvailable();
}

/** Runs `session(threads)` under the thread policy, timing it for the policy. */
function runTimed(kernel: string, flops: number, run: (threads: number) => void): void {
  const max = Math.min(configuredThreads(), threadCap);
  const key = jobClass(kernel, flops);
  const many = max > 1 && policy.useThreads(key);
  const t0 = performance.now();
  run(many ? max : 1);
  policy.record(key, many, (performance.now() - t0) / 1000, flops);
  stats.calls++;
  if (many) stats.threaded++;
}

const f32 = (name: string, shape: number[]) => ({ name, type: "float32" as const, shape });

function single(node: OnnxNode, inputs: [string, number[]][], output: number[]): OnnxGraph {
  return { nodes: [node], inputs: inputs.map(([n, s]) => f32(n, s)), outputs: [f32(node.outputs[0]!, output)] };
}

/**
 * out[i] (m x n) = op(A_i) op(B_i) natively, as matmul.ts's kernel defines it (A_i at
 * a[aOffsets[i]], m x k or k x m when transA; B_i likewise). False (nothing written) when the
 * product does not go native.
 */
export function nativeMatmul(a: Float32Array, aOffsets: ArrayLike<number>, b: Float32Array, bOffsets: ArrayLike<number>,
                             out: Float32Array, m: number, k: number, n: number, transA: boolean, transB: boolean): boolean {
  const batch = aOffsets.length;
  if (!nativeMatmulWins(m, n, k)) return false;
  const aDims = transA ? [k, m] : [m, k], bDims = transB ? [n, k] : [k, n];
  const key = `gemm ${m} ${k} ${n} ${+transA}${+transB}`;
  const graph = () => single({ op: "Gemm", inputs: ["a", "b"], outputs: ["c"], attrs: { transA: +transA, transB: +transB } }, [["a", aDims], ["b", bDims]], [m, n]);
  const o = unshared(out.subarray(0, batch * m * n), 0, false);
  runTimed("matmul", 2 * m * n * k * batch, (threads) => {
    const s = sessions.get(key, threads, graph)!;
    for (let i = 0; i < batch; i++) {
      const A = unshared(a.subarray(aOffsets[i]!, aOffsets[i]! + m * k), 1, true);
      const B = unshared(b.subarray(bOffsets[i]!, bOffsets[i]! + k * n), 2, true);
      s.run({ a: [A, aDims], b: [B, bDims] }, { c: [o.subarray(i * m * n, (i + 1) * m * n), [m, n]] });
    }
  });
  if (o.buffer !== out.buffer) out.set(o);
  return true;
}

/** The conv2d parameters of backends/cpu/conv.ts (kept structural: no import cycle). */
export interface NativeConvParams {
  batch: number; inC: number; inH: number; inW: number;
  outC: number; kH: number; kW: number; outH: number; outW: number;
  strideH: number; strideW: number; padTop: number; padLeft: number;
  dilationH: number; dilationW: number; groups: number;
}

const convFlops = (p: NativeConvParams) => 2 * p.batch * p.outC * p.outH * p.outW * (p.inC / p.groups) * p.kH * p.kW;
const effective = (k: number, d: number) => (k - 1) * d + 1;
const convKey = (p: NativeConvParams) => Object.values(p).join(" ");

/** Bottom/right padding that makes a convolution of `inH` rows give `outH` rows (never negative). */
function endPad(inH: number, outH: number, kH: number, s: number, d: number, pt: number): number {
  return Math.max(0, (outH - 1) * s + effective(kH, d) - inH - pt);
}

function convAttrs(p: NativeConvParams) {
  return {
    strides: [p.strideH, p.strideW],
    dilations: [p.dilationH, p.dilationW],
    group: p.groups,
    kernel_shape: [p.kH, p.kW],
  };
}

/** out = conv2d(x, w) natively (NCHW, zero padding); false when it does not go native. */
export function nativeConv2d(x: Float32Array, w: Float32Array, out: Float32Array, p: NativeConvParams): boolean {
  const flops = convFlops(p);
  if (flops < NATIVE_MIN_FLOPS || !nativeAvailable()) return false;
  const xDims = [p.batch, p.inC, p.inH, p.inW], wDims = [p.outC, p.inC / p.groups, p.kH, p.kW], oDims = [p.batch, p.outC, p.outH, p.outW];
  const pads = [p.padTop, p.padLeft, endPad(p.inH, p.outH, p.kH, p.strideH, p.dilationH, p.padTop), endPad(p.inW, p.outW, p.kW, p.strideW, p.dilationW, p.padLeft)];
  const graph = () => single({ op: "Conv", inputs: ["x", "w"], outputs: ["y"], attrs: { ...convAttrs(p), pads } }, [["x", xDims], ["w", wDims]], oDims);
  const o = unshared(out, 0, false);
  runTimed("conv2d", flops, (threads) => {
    sessions.get(`conv ${convKey(p)}`, threads, graph)!.run({ x: [unshared(x, 1, true), xDims], w: [unshared(w, 2, true), wDims] }, { y: [o, oDims] });
  });
  if (o !== out) out.set(o);
  return true;
}

/** dx = the gradient of conv2d with respect to its input (a ConvTranspose) natively; false when it does not go native. */
export function nativeConv2dBackpropInput(dy: Float32Array, w: Float32Array, dx: Float32Array, p: NativeConvParams): boolean {
  const flops = convFlops(p);
  if (flops < NATIVE_MIN_FLOPS || !nativeAvailable()) return false;
  // ConvTranspose of dy: (outH - 1) * s + effective kernel rows, less the pads, plus output_padding
  const full = (n: number, k: number, s: number, d: number) => (n - 1) * s + effective(k, d);
  const fullH = full(p.outH, p.kH, p.strideH, p.dilationH), fullW = full(p.outW, p.kW, p.strideW, p.dilationW);
  const pb = Math.max(0, fullH - p.padTop - p.inH), pr = Math.max(0, fullW - p.padLeft - p.inW);
  const opH = p.inH - (fullH - p.padTop - pb), opW = p.inW - (fullW - p.padLeft - pr);
  if (opH >= p.strideH || opW >= p.strideW) return false; // (never for a conv2d's own gradient)
  const dyDims = [p.batch, p.outC, p.outH, p.outW], wDims = [p.outC, p.inC / p.groups, p.kH, p.kW], dxDims = [p.batch, p.inC, p.inH, p.inW];
  const attrs = { ...convAttrs(p), pads: [p.padTop, p.padLeft, pb, pr], output_padding: [opH, opW] };
  const graph = () => single({ op: "ConvTranspose", inputs: ["dy", "w"], outputs: ["dx"], attrs }, [["dy", dyDims], ["w", wDims]], dxDims);
  const o = unshared(dx, 0, false);
  runTimed("conv2dBackpropInput", flops, (threads) => {
    sessions.get(`convT ${convKey(p)}`, threads, graph)!.run({ dy: [unshared(dy, 1, true), dyDims], w: [unshared(w, 2, true), wDims] }, { dx: [o, dxDims] });
  });
  if (o !== dx) dx.set(o);
  return true;
}

/**
 * dw = the gradient of conv2d with respect to its filter, natively, as one convolution: with
 * images and channels swapped (x as [C, N, H, W], dy as [OC, N, oH, oW] filters), the filter
 * gradient is a convolution of x by dy whose stride is the forward's dilation and whose
 * dilation is the forward's stride, transposed back ([C, OC, kH, kW] -> [OC, C, kH, kW]).
 * One group only; false when it does not go native.
 */
export function nativeConv2dBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, p: NativeConvParams): boolean {
  const flops = convFlops(p);
  if (p.groups !== 1 || flops < NATIVE_MIN_FLOPS || !nativeAvailable()) return false;
  const xDims = [p.batch, p.inC, p.inH, p.inW], dyDims = [p.batch, p.outC, p.outH, p.outW], dwDims = [p.outC, p.inC, p.kH, p.kW];
  // rows of the swapped convolution: (in + pads - effective(outH, strideH)) / dilationH + 1 >= kH
  const rows = (inH: number, outH: number, s: number, d: number, pt: number, kH: number) => Math.max(0, (kH - 1) * d + effective(outH, s) - inH - pt);
  const pb = rows(p.inH, p.outH, p.strideH, p.dilationH, p.padTop, p.kH), pr = rows(p.inW, p.outW, p.strideW, p.dilationW, p.padLeft, p.kW);
  const gH = Math.floor((p.inH + p.padTop + pb - effective(p.outH, p.strideH)) / p.dilationH) + 1;
  const gW = Math.floor((p.inW + p.padLeft + pr - effective(p.outW, p.strideW)) / p.dilationW) + 1;
  const nodes: OnnxNode[] = [
    { op: "Transpose", inputs: ["x"], outputs: ["xt"], attrs: { perm: [1, 0, 2, 3] } },
    { op: "Transpose", inputs: ["dy"], outputs: ["dyt"], attrs: { perm: [1, 0, 2, 3] } },
    {
      op: "Conv", inputs: ["xt", "dyt"], outputs: ["g"],
      attrs: { strides: [p.dilationH, p.dilationW], dilations: [p.strideH, p.strideW], kernel_shape: [p.outH, p.outW], pads: [p.padTop, p.padLeft, pb, pr] },
    },
  ];
  let last = "g";
  if (gH !== p.kH || gW !== p.kW) {
    const i64 = (v: number[]) => ({ tensor: { type: "int64" as const, dims: [v.length], data: BigInt64Array.from(v.map(BigInt)) } });
    nodes.push({ op: "Constant", inputs: [], outputs: ["s0"], attrs: { value: i64([0, 0]) } });
    nodes.push({ op: "Constant", inputs: [], outputs: ["s1"], attrs: { value: i64([p.kH, p.kW]) } });
    nodes.push({ op: "Constant", inputs: [], outputs: ["sa"], attrs: { value: i64([2, 3]) } });
    nodes.push({ op: "Slice", inputs: ["g", "s0", "s1", "sa"], outputs: ["gs"] });
    last = "gs";
  }
  nodes.push({ op: "Transpose", inputs: [last], outputs: ["dw"], attrs: { perm: [1, 0, 2, 3] } });
  const graph = (): OnnxGraph => ({ nodes, inputs: [f32("x", xDims), f32("dy", dyDims)], outputs: [f32("dw", dwDims)] });
  const o = unshared(dw, 0, false);
  runTimed("conv2dBackpropFilter", flops, (threads) => {
    sessions.get(`convW ${convKey(p)}`, threads, graph)!.run({ x: [unshared(x, 1, true), xDims], dy: [unshared(dy, 2, true), dyDims] }, { dw: [o, dwDims] });
  });
  if (o !== dw) dw.set(o);
  return true;
}
