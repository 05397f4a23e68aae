// Batched matrix multiply for the CPU backend.
// float32: products past the native crossover run on the native kernels where they are
// installed (native.ts: onnxruntime-node's); the others are copied into the shared wasm memory and
// multiplied by the SIMD sgemm (wasm/sgemm.ts), split over worker threads when the problem is
// big; tiny products and float64 use plain TS loops.
import type { TypedArray } from "../../core/dtype.js";
import { getWasmRuntime, type WasmRuntime } from "./wasm-runtime.js";
import { sgemmBatch } from "./worker-pool.js";
import { tryNativeMatmul } from "./native.js";
import { outerOn } from "./wasm/outer.js";
import { uninitializedBytes } from "../../core/platform/node.js";
import { POOL_DATA_OFFSET, takeStorage } from "../../core/storage-pool.js";

/** Below this many multiply-adds per product (m*n*k) the TS loop wins (measured: equal at 8^3). */
export const WASM_MIN_MNK = 10 * 10 * 10;

/**
 * For each output batch i: out[i] (m x n) = op(A_i) @ op(B_i), where A_i starts at a[aOffsets[i]]
 * and B_i at b[bOffsets[i]]; op = transpose when transA/transB. A_i is m x k (k x m if transA),
 * B_i is k x n (n x k if transB), all row-major contiguous. out is contiguous batch*m*n.
 * dtype is "float32" (wasm SIMD path, multithreaded when big) or "float64" (TS loops).
 */
export function matmul(dtype: "float32" | "float64", a: TypedArray, aOffsets: ArrayLike<number>,
                       b: TypedArray, bOffsets: ArrayLike<number>, out: TypedArray,
                       m: number, k: number, n: number, transA: boolean, transB: boolean): void {
  const batch = aOffsets.length;
  if (batch === 0 || m === 0 || n === 0) return;
  if (dtype === "float32" && k === 1 && m * n >= WASM_MIN_MNK && outerProducts(a, aOffsets, b, bOffsets, out, m, n)) return;
  if (dtype === "float32" && m * n * k >= WASM_MIN_MNK) {
    if (tryNativeMatmul(a as Float32Array, aOffsets, b as Float32Array, bOffsets, out as Float32Array, m, k, n, transA, transB)) return;
    const rt = getWasmRuntime();
    if (rt !== null) {
      try {
        matmulWasm(rt, a, aOffsets, b, bOffsets, out, m, k, n, transA, transB);
        return;
      } catch {
        // fall through to the TS loops (e.g. kernel memory exhausted)
      }
    }
  }
  for (let i = 0; i < batch; i++) {
    matmulLoop(a, aOffsets[i], b, bOffsets[i], out, i * m * n, m, k, n, transA, transB);
  }
}

/** Outputs from this many bytes are not cleared before `matmul` writes them (productStorage). */
export const UNCLEARED_MIN_BYTES = 1 << 20;

/**
 * The output storage of `matmul`, `size` elements: every element is written by every path
 * (the loops clear their rows before accumulating; k = 0 goes to the loops), so a large one
 * is not cleared first (core/platform's uninitializedBytes: the zeroing is a pass over the
 * memory as long as a k = 1 product itself). From 16 MB it is poolable storage (core/storage-pool.ts:
 * at byte offset 64 of its buffer), maybe a disposed tensor's, uncleared: a new view each time.
 */
export function productStorage(dtype: "float32" | "float64", size: number): Float32Array | Float64Array {
  const bytes = size * (dtype === "float32" ? 4 : 8);
  if (bytes < UNCLEARED_MIN_BYTES) return dtype === "float32" ? new Float32Array(size) : new Float64Array(size);
  const pooled = takeStorage(bytes, uninitializedBytes);
  const buf = pooled ?? uninitializedBytes(bytes), at = pooled === null ? 0 : POOL_DATA_OFFSET;
  return dtype === "float32" ? new Float32Array(buf, at, size) : new Float64Array(buf, at, size);
}

/**
 * Most bytes of C the WebAssembly path computes before copying them out: a batch whose results
 * are bigger runs in groups of products, each group into the same arena region, copied out while
 * it is still in cache. One pass over the whole C in the arena and another copying it out cost
 * twice the memory traffic, and grow the shared memory (which never shrinks) to the size of C
 * (per-example weight gradients: 256 outer products of 784 x 256 are 205 MB).
 */
export const WASM_C_GROUP_BYTES = 4 << 20;

function matmulWasm(rt: WasmRuntime, a: TypedArray, aOffsets: ArrayLike<number>, b: TypedArray,
                    bOffsets: ArrayLike<number>, out: TypedArray, m: number, k: number, n: number,
                    transA: boolean, transB: boolean): void {
  const batch = aOffsets.length;
  rt.reset();
  const aPtrs = copyIn(rt, a, aOffsets, m * k);
  const bPtrs = copyIn(rt, b, bOffsets, k * n);
  const group = Math.max(1, Math.min(batch, Math.floor(WASM_C_GROUP_BYTES / (m * n * 4))));
  const c = rt.alloc(group * m * n * 4);
  const cPtrs: number[] = [];
  for (let i = 0; i < group; i++) cPtrs.push(c + i * m * n * 4);
  // (each group's task table is a few bytes of arena: groups add no reset)
  for (let i0 = 0; i0 < batch; i0 += group) {
    const g = Math.min(group, batch - i0);
    sgemmBatch(rt, aPtrs.slice(i0, i0 + g), bPtrs.slice(i0, i0 + g), g === group ? cPtrs : cPtrs.slice(0, g), m, n, k, transA ? m : k, transB ? k : n, n, transA, transB);
    const f = rt.f32();
    out.set(f.subarray(c >>> 2, (c >>> 2) + g * m * n), i0 * m * n);
  }
}

/** Bytes of C the outer-product path writes in the arena before copying them out (in cache). */
export const OUTER_C_GROUP_BYTES = 1 << 20;

/**
 * k = 1: each product is the outer product of A_i's m floats and B_i's n floats (contiguous
 * whether transposed or not), written by wasm/outer.ts a group of products at a time into
 * one arena region that stays in cache and copied out from there; the same bits as the
 * sgemm (0 + a*b). False (nothing written) without WebAssembly SIMD or kernel memory.
 */
const outerStats = { calls: 0 };
/** How many products the outer-product path made (for tests and benchmarks). */
export function outerProductCalls(): number {
  return outerStats.calls;
}

function outerProducts(a: TypedArray, aOffsets: ArrayLike<number>, b: TypedArray, bOffsets: ArrayLike<number>,
                       out: TypedArray, m: number, n: number): boolean {
  const rt = getWasmRuntime();
  const outer = rt === null ? null : outerOn(rt.memory);
  if (rt === null || outer === null) return false;
  try {
    const batch = aOffsets.length;
    rt.reset();
    const aPtrs = copyIn(rt, a, aOffsets, m);
    const bPtrs = copyIn(rt, b, bOffsets, n);
    const group = Math.max(1, Math.min(batch, Math.floor(OUTER_C_GROUP_BYTES / (m * n * 4))));
    const c = rt.alloc(group * m * n * 4);
    const f = rt.f32();
    for (let i0 = 0; i0 < batch; i0 += group) {
      const g = Math.min(group, batch - i0);
      for (let i = 0; i < g; i++) outer(aPtrs[i0 + i]!, bPtrs[i0 + i]!, c + i * m * n * 4, m, n);
      out.set(f.subarray(c >>> 2, (c >>> 2) + g * m * n), i0 * m * n);
    }
    outerStats.calls += batch;
    return true;
  } catch {
    return false; // (kernel memory exhausted: the general paths)
  }
}

/** Copies the matrices at `offsets` (each `size` long) into the arena; returns their addresses. */
function copyIn(rt: WasmRuntime, src: TypedArray, offsets: ArrayLike<number>, size: number): number[] {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < offsets.length; i++) { lo = Math.min(lo, offsets[i]); hi = Math.max(hi, offsets[i]); }
  const ptrs: number[] = [];
  if (hi + size - lo <= offsets.length * size * 2) {
    // one contiguous copy of the covered range (also handles broadcast/repeated offsets)
    const p = rt.alloc((hi + size - lo) * 4);
    rt.f32().set(src.subarray(lo, hi + size), p >>> 2);
    for (let i = 0; i < offsets.length; i++) ptrs.push(p + (offsets[i] - lo) * 4);
  } else {
    const seen = new Map<number, number>();
    for (let i = 0; i < offsets.length; i++) {
      let p = seen.get(offsets[i]);
      if (p === undefined) {
        p = rt.alloc(size * 4);
        rt.f32().set(src.subarray(offsets[i], offsets[i] + size), p >>> 2);
        seen.set(offsets[i], p);
      }
      ptrs.push(p);
    }
  }
  return ptrs;
}

/** out[o..] = op(A) op(B) with plain loops (i-k-j order, or dot products when B is transposed). */
function matmulLoop(a: TypedArray, ao: number, b: TypedArray, bo: number, out: TypedArray, oo: number,
                    m: number, k: number, n: number, transA: boolean, transB: boolean): void {
  const sai = transA ? 1 : k, sap = transA ? m : 1; // A(i,p) = a[ao + i*sai + p*sap]
  if (transB) {
    // B(p,j) = b[bo + j*k + p]: contiguous in p, so take dot products
    for (let i = 0; i < m; i++) {
      const ar = ao + i * sai;
      for (let j = 0; j < n; j++) {
        const br = bo + j * k;
        let s = 0;
        for (let p = 0; p < k; p++) s += a[ar + p * sap] * b[br + p];
        out[oo + i * n + j] = s;
      }
    }
    return;
  }
  for (let i = 0; i < m; i++) {
    const row = oo + i * n;
    out.fill(0, row, row + n);
    const ar = ao + i * sai;
    for (let p = 0; p < k; p++) {
      const av = a[ar + p * sap];
      const br = bo + p * n;
      for (let j = 0; j < n; j++) out[row + j] += av * b[br + j];
    }
  }
}
