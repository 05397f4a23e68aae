// Sorting along an axis and top-k along the last axis, for the CPU backend.
// Order: ascending (or descending) by value, ties kept in index order (stable), NaN the largest
// value (as in PyTorch): last ascending, first descending and in top-k. Descending order sorts the
// negated keys ascending with NaN first, which reverses the order of numbers and keeps ties stable.
import type { TypedArray } from "../../core/dtype.js";

/** Runs shorter than this are sorted by insertion before merging. */
const RUN = 16;

/** a strictly before b: a < b, or b is NaN and a is not (NaN last). */
function beforeNaNLast(a: number, b: number): boolean {
  return a < b || (b !== b && a === a);
}

/** a strictly before b with NaN first: a < b, or a is NaN and b is not. */
function beforeNaNFirst(a: number, b: number): boolean {
  return a < b || (a !== a && b === b);
}

/**
 * Stable ascending argsort of keys[0..n): idx receives the permutation. tmp is scratch of
 * length >= n. Bottom-up merge sort with insertion-sorted runs; O(n log n), no allocation.
 */
export function argsortKeys(keys: Float64Array, n: number, idx: Int32Array, tmp: Int32Array, nanFirst = false): void {
  const before = nanFirst ? beforeNaNFirst : beforeNaNLast;
  for (let i = 0; i < n; i++) idx[i] = i;
  for (let lo = 0; lo < n; lo += RUN) {
    const hi = Math.min(n, lo + RUN);
    for (let i = lo + 1; i < hi; i++) {
      const v = idx[i]!;
      const kv = keys[v]!;
      let j = i - 1;
      while (j >= lo && before(kv, keys[idx[j]!]!)) {
        idx[j + 1] = idx[j]!;
        j--;
      }
      idx[j + 1] = v;
    }
  }
  let src = idx, dst = tmp;
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(n, lo + width), hi = Math.min(n, lo + 2 * width);
      let i = lo, j = mid, o = lo;
      if (mid >= hi || !before(keys[src[mid]!]!, keys[src[mid - 1]!]!)) {
        // already in order (or a lone run): copy
        for (; o < hi; o++) dst[o] = src[o]!;
        continue;
      }
      while (i < mid && j < hi) {
        // take from the right only when strictly before: stability
        if (before(keys[src[j]!]!, keys[src[i]!]!)) dst[o++] = src[j++]!;
        else dst[o++] = src[i++]!;
      }
      while (i < mid) dst[o++] = src[i++]!;
      while (j < hi) dst[o++] = src[j++]!;
    }
    const t = src;
    src = dst;
    dst = t;
  }
  if (src !== idx) idx.set(src.subarray(0, n));
}

/**
 * Sorts every slice of x (viewed as [outer, n, inner]) along the middle axis.
 * Writes the sorted values into `values` and/or the permutation into `indices` (either may be null).
 */
export function sortAxis(
  x: TypedArray,
  outer: number,
  n: number,
  inner: number,
  descending: boolean,
  values: TypedArray | null,
  indices: Int32Array | null,
): void {
  const keys = new Float64Array(n);
  const idx = new Int32Array(n);
  const tmp = new Int32Array(n);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * n * inner + i;
      if (descending) for (let k = 0; k < n; k++) keys[k] = -x[base + k * inner]!;
      else for (let k = 0; k < n; k++) keys[k] = x[base + k * inner]!;
      argsortKeys(keys, n, idx, tmp, descending);
      if (values !== null) for (let k = 0; k < n; k++) values[base + k * inner] = x[base + idx[k]! * inner]!;
      if (indices !== null) for (let k = 0; k < n; k++) indices[base + k * inner] = idx[k]!;
    }
  }
}

/** Below this k (and for k well under n), top-k keeps a sorted buffer instead of sorting rows. */
const SMALL_K = 32;

/**
 * The k largest entries of every row of x ([rows, n]), largest first (NaN the largest, ties by index).
 * With sorted = false the chosen entries come in index order instead.
 */
export function topKRows(x: TypedArray, rows: number, n: number, k: number, sorted: boolean, values: TypedArray, indices: Int32Array): void {
  const keys = new Float64Array(n);
  const idx = new Int32Array(n);
  const tmp = new Int32Array(n);
  const buf = new Int32Array(k);
  const useBuffer = k <= SMALL_K && k * 4 <= n;
  for (let r = 0; r < rows; r++) {
    const xb = r * n, ob = r * k;
    for (let j = 0; j < n; j++) keys[j] = -x[xb + j]!;
    let chosen: Int32Array;
    if (useBuffer) {
      // buf[0..len) holds the best indices so far in sorted order (keys ascending).
      let len = 0;
      for (let j = 0; j < n; j++) {
        const kj = keys[j]!;
        if (len === k && !beforeNaNFirst(kj, keys[buf[k - 1]!]!)) continue;
        let p = len === k ? k - 1 : len++;
        while (p > 0 && beforeNaNFirst(kj, keys[buf[p - 1]!]!)) {
          buf[p] = buf[p - 1]!;
          p--;
        }
        buf[p] = j;
      }
      chosen = buf;
    } else {
      argsortKeys(keys, n, idx, tmp, true);
      chosen = idx;
    }
    if (!sorted) {
      const sel = chosen.subarray(0, k);
      sel.sort();
    }
    for (let j = 0; j < k; j++) {
      const c = chosen[j]!;
      values[ob + j] = x[xb + c]!;
      indices[ob + j] = c;
    }
  }
}
