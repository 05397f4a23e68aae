/**
 * Strided copies: the kernels behind transpose, slice, flip, concat/stack/split, pad and tile.
 *
 * Every rearrangement is a copy between two strided views of flat storage. Dimensions are
 * first coalesced (size-1 dimensions dropped, neighbours that are contiguous in both views
 * merged), so a transpose of [B, M, N] by [0, 2, 1] becomes a batch of 2-D transposes and a
 * slice of whole rows becomes one block copy. Then:
 * - both innermost strides 1: row copies with TypedArray.set (memcpy);
 * - a transpose (destination contiguous, the source's unit-stride dimension elsewhere):
 *   cache-blocked 2-D tiles over that dimension and the destination's innermost one;
 * - anything else: an odometer over the outer dimensions and a tight strided inner loop.
 * No per-element index arrays or allocations.
 */
import type { TypedArray } from "../../core/dtype.js";
import { stridesOf, type Shape } from "../../core/shape.js";

const TILE = 32;
/** Rows shorter than this are copied with a loop rather than set(subarray). */
const SET_MIN = 32;

interface Coalesced {
  shape: number[];
  src: number[];
  dst: number[];
}

/** Drops size-1 dimensions and merges neighbours contiguous in both views. */
function coalesce(shape: Shape, srcStrides: readonly number[], dstStrides: readonly number[]): Coalesced {
  const s: number[] = [];
  const a: number[] = [];
  const b: number[] = [];
  for (let d = 0; d < shape.length; d++) {
    const n = shape[d]!;
    if (n === 1) continue;
    const k = s.length - 1;
    if (k >= 0 && a[k] === srcStrides[d]! * n && b[k] === dstStrides[d]! * n) {
      s[k] = s[k]! * n;
      a[k] = srcStrides[d]!;
      b[k] = dstStrides[d]!;
    } else {
      s.push(n);
      a.push(srcStrides[d]!);
      b.push(dstStrides[d]!);
    }
  }
  return { shape: s, src: a, dst: b };
}

/**
 * dst[dstOffset + sum(i_d * dstStrides_d)] = src[srcOffset + sum(i_d * srcStrides_d)] for every
 * index i of `shape`. Source strides may be negative (flips); src and dst must have the same
 * element type and must not overlap.
 */
export function copyStrided(
  src: TypedArray,
  srcOffset: number,
  srcStrides: readonly number[],
  dst: TypedArray,
  dstOffset: number,
  dstStrides: readonly number[],
  shape: Shape,
): void {
  for (let d = 0; d < shape.length; d++) if (shape[d] === 0) return;
  const c = coalesce(shape, srcStrides, dstStrides);
  const r = c.shape.length;
  if (r === 0) {
    dst[dstOffset] = src[srcOffset]!;
    return;
  }
  const L = r - 1;
  const n = c.shape[L]!;
  const sL = c.src[L]!;
  const dL = c.dst[L]!;
  // A transpose: destination rows contiguous, source unit stride on another dimension.
  if (dL === 1 && sL !== 1 && n >= 4) {
    let q = -1;
    for (let d = 0; d < L; d++) if (c.src[d] === 1) q = d;
    if (q >= 0 && c.shape[q]! >= 4) {
      blockedOuter(src, srcOffset, dst, dstOffset, c, q);
      return;
    }
  }
  const rowSet = sL === 1 && dL === 1 && n >= SET_MIN;
  const outer = r === 1 ? 1 : sizeOfRange(c.shape, 0, L);
  const counters = new Int32Array(r);
  let so = srcOffset;
  let dO = dstOffset;
  for (let k = 0; k < outer; k++) {
    if (rowSet) dst.set(src.subarray(so, so + n), dO);
    else if (sL === 1 && dL === 1) for (let j = 0; j < n; j++) dst[dO + j] = src[so + j]!;
    else for (let j = 0, s = so, t = dO; j < n; j++, s += sL, t += dL) dst[t] = src[s]!;
    for (let d = L - 1; d >= 0; d--) {
      so += c.src[d]!;
      dO += c.dst[d]!;
      if (++counters[d]! < c.shape[d]!) break;
      so -= c.src[d]! * c.shape[d]!;
      dO -= c.dst[d]! * c.shape[d]!;
      counters[d] = 0;
    }
  }
}

function sizeOfRange(shape: readonly number[], from: number, to: number): number {
  let n = 1;
  for (let i = from; i < to; i++) n *= shape[i]!;
  return n;
}

/** Walks every dimension except q and the last, running a blocked 2-D transpose for each. */
function blockedOuter(src: TypedArray, srcOffset: number, dst: TypedArray, dstOffset: number, c: Coalesced, q: number): void {
  const r = c.shape.length;
  const L = r - 1;
  const dims: number[] = [];
  for (let d = 0; d < L; d++) if (d !== q) dims.push(d);
  const counters = new Int32Array(dims.length);
  let outer = 1;
  for (const d of dims) outer *= c.shape[d]!;
  let so = srcOffset;
  let dO = dstOffset;
  const nq = c.shape[q]!;
  const nL = c.shape[L]!;
  const dq = c.dst[q]!;
  const sL = c.src[L]!;
  for (let k = 0; k < outer; k++) {
    tile2d(src, so, sL, dst, dO, dq, nq, nL);
    for (let e = dims.length - 1; e >= 0; e--) {
      const d = dims[e]!;
      so += c.src[d]!;
      dO += c.dst[d]!;
      if (++counters[e]! < c.shape[d]!) break;
      so -= c.src[d]! * c.shape[d]!;
      dO -= c.dst[d]! * c.shape[d]!;
      counters[e] = 0;
    }
  }
}

/** dst[d0 + i * dq + j] = src[s0 + i + j * sL] for i < nq, j < nL, in TILE x TILE blocks. */
function tile2d(src: TypedArray, s0: number, sL: number, dst: TypedArray, d0: number, dq: number, nq: number, nL: number): void {
  for (let i0 = 0; i0 < nq; i0 += TILE) {
    const i1 = Math.min(i0 + TILE, nq);
    for (let j0 = 0; j0 < nL; j0 += TILE) {
      const j1 = Math.min(j0 + TILE, nL);
      for (let i = i0; i < i1; i++) {
        const t = d0 + i * dq;
        let s = s0 + i + j0 * sL;
        for (let j = j0; j < j1; j++, s += sL) dst[t + j] = src[s]!;
      }
    }
  }
}

/** out = x (shape) transposed by perm; out is contiguous with shape perm.map(p => shape[p]). */
export function transposeInto(x: TypedArray, shape: Shape, perm: readonly number[], out: TypedArray): void {
  const st = stridesOf(shape);
  const outShape = perm.map((p) => shape[p]!);
  copyStrided(x, 0, perm.map((p) => st[p]!), out, 0, stridesOf(outShape), outShape);
}

/**
 * out[i] = src[sum_d maps[d][i_d] * srcStrides[d]] with out contiguous of shape maps' lengths:
 * a gather along every axis at once (tile, reflect/edge padding).
 */
export function copyIndexMapped(src: TypedArray, srcShape: Shape, maps: readonly Int32Array[], out: TypedArray): void {
  const r = maps.length;
  const outShape = maps.map((m) => m.length);
  for (let d = 0; d < r; d++) if (outShape[d] === 0) return;
  if (r === 0) {
    out[0] = src[0]!;
    return;
  }
  const st = stridesOf(srcShape);
  const L = r - 1;
  // Pre-scaled maps: offsets instead of indices.
  const offs = maps.map((m, d) => {
    const o = new Float64Array(m.length);
    for (let i = 0; i < m.length; i++) o[i] = m[i]! * st[d]!;
    return o;
  });
  const last = offs[L]!;
  const n = last.length;
  const outer = sizeOfRange(outShape, 0, L);
  const counters = new Int32Array(r);
  let base = 0;
  for (let d = 0; d < L; d++) base += offs[d]![0]!;
  let o = 0;
  for (let k = 0; k < outer; k++) {
    for (let j = 0; j < n; j++) out[o++] = src[base + last[j]!]!;
    for (let d = L - 1; d >= 0; d--) {
      const od = offs[d]!;
      base -= od[counters[d]!]!;
      if (++counters[d]! < outShape[d]!) {
        base += od[counters[d]!]!;
        break;
      }
      counters[d] = 0;
      base += od[0]!;
    }
  }
}
