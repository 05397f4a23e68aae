/**
 * Element-wise indexing kernels (gatherElements, scatterElements, scatterND). Indices are
 * validated (integers in range) by the ops before these run.
 */
import type { TypedArray } from "../../core/dtype.js";

/** How an update meets the value already there. */
export type ScatterReduction = "none" | "add" | "mul" | "max" | "min";

function combine(r: ScatterReduction, old: number, u: number): number {
  switch (r) {
    case "none":
      return u;
    case "add":
      return old + u;
    case "mul":
      return old * u;
    case "max":
      return u > old || u !== u ? u : old;
    case "min":
      return u < old || u !== u ? u : old;
  }
}

/**
 * Visits every position of `idxShape` (row-major) with the flat offset of the element it
 * addresses in a tensor of `dataShape` when its `axis` coordinate is replaced by the index.
 */
function forEachElement(idx: TypedArray, idxShape: readonly number[], dataShape: readonly number[], axis: number, f: (j: number, target: number) => void): void {
  const r = idxShape.length;
  const strides = new Array<number>(r);
  for (let d = r - 1, acc = 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= dataShape[d]!;
  }
  const counter = new Array<number>(r).fill(0);
  for (let j = 0; j < idx.length; j++) {
    let off = 0;
    for (let d = 0; d < r; d++) off += (d === axis ? idx[j]! : counter[d]!) * strides[d]!;
    f(j, off);
    for (let d = r - 1; d >= 0; d--) {
      if (++counter[d]! < idxShape[d]!) break;
      counter[d] = 0;
    }
  }
}

/** out[p] = x[p with p[axis] = idx[p]] for every position p of idx. */
export function gatherElementsInto(x: TypedArray, xShape: readonly number[], idx: TypedArray, idxShape: readonly number[], axis: number, out: TypedArray): void {
  forEachElement(idx, idxShape, xShape, axis, (j, t) => {
    out[j] = x[t]!;
  });
}

/** out (a copy of x) at p with p[axis] = idx[p] combined with upd[p], for every position p of idx. */
export function scatterElementsInto(out: TypedArray, outShape: readonly number[], idx: TypedArray, idxShape: readonly number[], upd: TypedArray, axis: number, r: ScatterReduction): void {
  forEachElement(idx, idxShape, outShape, axis, (j, t) => {
    out[t] = combine(r, out[t]!, upd[j]!);
  });
}

/** out (a copy of x) at each index tuple of idx ([count, k]) combined with the slice of upd ([count, slice]). */
export function scatterNDInto(out: TypedArray, strides: readonly number[], slice: number, idx: TypedArray, count: number, upd: TypedArray, r: ScatterReduction): void {
  const k = strides.length;
  for (let i = 0; i < count; i++) {
    let base = 0;
    for (let d = 0; d < k; d++) base += idx[i * k + d]! * strides[d]!;
    for (let s = 0; s < slice; s++) out[base + s] = combine(r, out[base + s]!, upd[i * slice + s]!);
  }
}
