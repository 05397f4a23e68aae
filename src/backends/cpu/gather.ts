/**
 * Gather / scatter-add kernels. The data is viewed as [outer, n, inner] around the indexed
 * axis; indices are already validated (in range, integers) by the op.
 */
import type { TypedArray } from "../../core/dtype.js";

/** out[o, j, t] = x[o, idx[j], t] for x viewed as [outer, n, inner]; out is [outer, m, inner]. */
export function gatherAxis(x: TypedArray, outer: number, n: number, inner: number, idx: TypedArray, out: TypedArray): void {
  const m = idx.length;
  if (inner === 1) {
    for (let o = 0, w = 0; o < outer; o++) {
      const b = o * n;
      for (let j = 0; j < m; j++) out[w++] = x[b + idx[j]!]!;
    }
    return;
  }
  const useSet = inner >= 32;
  for (let o = 0, w = 0; o < outer; o++) {
    const b = o * n;
    for (let j = 0; j < m; j++, w += inner) {
      const s = (b + idx[j]!) * inner;
      if (useSet) out.set(x.subarray(s, s + inner), w);
      else for (let t = 0; t < inner; t++) out[w + t] = x[s + t]!;
    }
  }
}

/**
 * acc[o, idx[j], t] += upd[o, j, t] for acc viewed as [outer, n, inner] and upd [outer, m, inner].
 * Duplicate indices accumulate. For bool storage the caller normalizes to 0/1 afterwards.
 */
export function scatterAddAxis(acc: TypedArray, outer: number, n: number, inner: number, idx: TypedArray, upd: TypedArray): void {
  const m = idx.length;
  for (let o = 0, r = 0; o < outer; o++) {
    const b = o * n;
    if (inner === 1) {
      for (let j = 0; j < m; j++) acc[b + idx[j]!] += upd[r++]!;
    } else {
      for (let j = 0; j < m; j++) {
        const s = (b + idx[j]!) * inner;
        for (let t = 0; t < inner; t++) acc[s + t] += upd[r++]!;
      }
    }
  }
}

/**
 * gatherND: for each of `count` index tuples of length k (flat in idx), copies the slice of
 * `sliceSize` elements at sum(idx * strides) (strides of x's first k dimensions, in elements).
 */
export function gatherNDInto(x: TypedArray, strides: readonly number[], sliceSize: number, idx: TypedArray, count: number, out: TypedArray): void {
  const k = strides.length;
  for (let i = 0, w = 0; i < count; i++, w += sliceSize) {
    let off = 0;
    for (let d = 0; d < k; d++) off += idx[i * k + d]! * strides[d]!;
    if (sliceSize === 1) out[w] = x[off]!;
    else if (sliceSize >= 32) out.set(x.subarray(off, off + sliceSize), w);
    else for (let t = 0; t < sliceSize; t++) out[w + t] = x[off + t]!;
  }
}
