/**
 * Reduction loops. Contiguous runs of reduced axes are viewed as [outer, red, inner] and
 * reduced in one tight pass each (the common cases, all axes or trailing axes, are a single
 * pass). Reductions that need two passes over their groups (logSumExp, variance) loop over
 * that view when the axes are one contiguous run, else over an index map from each input
 * element to its output slot, which handles any axis set in one sweep.
 *
 * Numeric reductions accumulate in float64 and round once into the output storage (so a
 * float32 sum is not rounded at every step, and int32 sums wrap exactly like int32 adds).
 */
import type { TypedArray } from "../../core/dtype.js";
import type { Combine } from "../../core/expr.js";
import type { Shape } from "../../core/shape.js";

export type { Combine };

export const REDUCTION_INIT: Record<Combine, number> = { sum: 0, prod: 1, max: -Infinity, min: Infinity, any: 0, all: 1 };

/** How an accumulator `acc` absorbs a value `v`. max/min propagate NaN; any/all treat NaN as true. */
export function combineExpr(c: Combine): string {
  switch (c) {
    case "sum":
      return "acc + v";
    case "prod":
      return "acc * v";
    case "max":
      return "(v > acc || v !== v) ? v : acc";
    case "min":
      return "(v < acc || v !== v) ? v : acc";
    case "any":
      return "(acc !== 0 || v !== 0) ? 1 : 0";
    case "all":
      return "(acc !== 0 && v !== 0) ? 1 : 0";
  }
}

/** The accumulator's value after the first element `v` of a group. */
export function firstExpr(c: Combine): string {
  return c === "any" || c === "all" ? "(v !== 0 ? 1 : 0)" : "v";
}

type Reduce3 = (x: ArrayLike<number>, out: TypedArray, outer: number, red: number, inner: number) => void;
const compiled = new Map<Combine, Reduce3>();

/** Reduces x viewed as [outer, red, inner] over the middle dimension into out [outer, inner]; red >= 1. */
function reduce3(c: Combine): Reduce3 {
  let f = compiled.get(c);
  if (!f) {
    f = new Function(
      "x",
      "out",
      "outer",
      "red",
      "inner",
      `
      for (let o = 0; o < outer; o++) {
        const base = o * red * inner;
        if (inner === 1) {
          let v = x[base];
          let acc = ${firstExpr(c)};
          for (let r = 1; r < red; r++) { v = x[base + r]; acc = ${combineExpr(c)}; }
          out[o] = acc;
        } else {
          const ob = o * inner;
          for (let i = 0; i < inner; i++) { const v = x[base + i]; out[ob + i] = ${firstExpr(c)}; }
          for (let r = 1; r < red; r++) {
            const rb = base + r * inner;
            for (let i = 0; i < inner; i++) { const acc = out[ob + i]; const v = x[rb + i]; out[ob + i] = ${combineExpr(c)}; }
          }
        }
      }`,
    ) as Reduce3;
    compiled.set(c, f);
  }
  return f;
}

/** The initial value of a reduction (what an empty reduction gives). */
export function reductionIdentity(c: Combine): number {
  return REDUCTION_INIT[c];
}

/**
 * Reduces `x` (shape `shape`) over sorted `axes` into `out` (size = product of kept dims).
 * Contiguous runs of reduced axes are handled by repeated [outer, red, inner] passes, from the
 * last run to the first, through float64 (or 0/1 for any/all) temporaries.
 * Empty reductions give the identity (sum 0, prod 1, max -Infinity, min Infinity, any 0, all 1);
 * callers that reject empty max/min check before calling.
 */
export function reduceAxes(c: Combine, x: TypedArray, shape: Shape, axes: readonly number[], out: TypedArray, _makeTemp?: (n: number) => TypedArray): void {
  if (out.length === 0) return;
  let red = 1;
  for (const a of axes) red *= shape[a]!;
  if (red === 0) {
    out.fill(REDUCTION_INIT[c]);
    return;
  }
  const logical = c === "any" || c === "all";
  if (axes.length === 0) {
    if (logical) for (let i = 0; i < x.length; i++) out[i] = x[i] !== 0 ? 1 : 0;
    else (out as Float64Array).set(x as Float64Array);
    return;
  }
  const groups: [number, number][] = [];
  for (const a of axes) {
    const last = groups[groups.length - 1];
    if (last && last[1] === a) last[1] = a + 1;
    else groups.push([a, a + 1]);
  }
  // Directly into `out` when one pass does it and the output storage is exact for the
  // accumulator (float64 / int64 storage, or any/all into 0/1 storage); else through float64.
  const direct = groups.length === 1 && (out instanceof Float64Array || logical);
  let cur: ArrayLike<number> = x;
  let curShape = shape.slice();
  for (let g = groups.length - 1; g >= 0; g--) {
    const [start, end] = groups[g]!;
    let outer = 1,
      r = 1,
      inner = 1;
    for (let i = 0; i < start; i++) outer *= curShape[i]!;
    for (let i = start; i < end; i++) r *= curShape[i]!;
    for (let i = end; i < curShape.length; i++) inner *= curShape[i]!;
    const dst: TypedArray = g === 0 && direct ? out : logical ? new Uint8Array(outer * inner) : new Float64Array(outer * inner);
    reduce3(c)(cur, dst, outer, r, inner);
    cur = dst;
    curShape = [...curShape.slice(0, start), ...curShape.slice(end)];
  }
  if (cur !== out) (out as Float64Array).set(cur as Float64Array);
}

/**
 * For every element of a tensor of shape `shape` (row-major), the flat index of its slot in
 * the reduction over `axes` (output shape = the kept dims).
 */
export function reduceIndexMap(shape: Shape, axes: readonly number[]): Int32Array {
  const rank = shape.length;
  let n = 1;
  for (let d = 0; d < rank; d++) n *= shape[d]!;
  const map = new Int32Array(n);
  if (n === 0 || rank === 0) return map;
  const ost = new Array<number>(rank).fill(0);
  let acc = 1;
  for (let d = rank - 1; d >= 0; d--) {
    if (!axes.includes(d)) {
      ost[d] = acc;
      acc *= shape[d]!;
    }
  }
  const counters = new Array<number>(rank).fill(0);
  const inner = shape[rank - 1]!;
  const is = ost[rank - 1]!;
  let base = 0;
  for (let i = 0; i < n; i += inner) {
    for (let j = 0; j < inner; j++) map[i + j] = base + j * is;
    for (let d = rank - 2; d >= 0; d--) {
      counters[d]!++;
      base += ost[d]!;
      if (counters[d]! < shape[d]!) break;
      base -= counters[d]! * ost[d]!;
      counters[d] = 0;
    }
  }
  return map;
}

/**
 * When `axes` is one contiguous run, the [outer, red, inner] view of the reduction (else null):
 * two-pass reductions then loop without an index map.
 */
function contiguousView(shape: Shape, axes: readonly number[]): [number, number, number] | null {
  if (axes.length === 0) return null;
  for (let i = 1; i < axes.length; i++) if (axes[i] !== axes[i - 1]! + 1) return null;
  let outer = 1,
    red = 1,
    inner = 1;
  const start = axes[0]!,
    end = axes[axes.length - 1]! + 1;
  for (let i = 0; i < start; i++) outer *= shape[i]!;
  for (let i = start; i < end; i++) red *= shape[i]!;
  for (let i = end; i < shape.length; i++) inner *= shape[i]!;
  return [outer, red, inner];
}

/** Stable log(sum(exp(x))) per group: shifted by each group's max (unshifted when it is infinite). */
export function logSumExpAxes(x: TypedArray, shape: Shape, axes: readonly number[], out: TypedArray): void {
  const m = out.length;
  if (m === 0) return;
  const view = contiguousView(shape, axes);
  if (view !== null && view[2] === 1) {
    // Trailing axes: each group is a contiguous run.
    const red = view[1];
    for (let o = 0; o < m; o++) {
      const base = o * red;
      let hi = -Infinity;
      for (let r = 0; r < red; r++) {
        const v = x[base + r]!;
        if (v > hi || v !== v) hi = v;
      }
      const shift = Number.isFinite(hi) ? hi : hi !== hi ? hi : 0;
      let acc = 0;
      for (let r = 0; r < red; r++) acc += Math.exp(x[base + r]! - shift);
      out[o] = Math.log(acc) + shift;
    }
    return;
  }
  const map = reduceIndexMap(shape, axes);
  const mx = new Float64Array(m).fill(-Infinity);
  const s = new Float64Array(m);
  for (let i = 0; i < x.length; i++) {
    const o = map[i]!;
    const v = x[i]!;
    if (v > mx[o]! || v !== v) mx[o] = v;
  }
  for (let o = 0; o < m; o++) if (!Number.isFinite(mx[o]!) && mx[o] === mx[o]) mx[o] = 0;
  for (let i = 0; i < x.length; i++) {
    const o = map[i]!;
    s[o] += Math.exp(x[i]! - mx[o]!);
  }
  for (let o = 0; o < m; o++) out[o] = Math.log(s[o]!) + mx[o]!;
}

/** Population variance per group, two-pass (mean first, then squared deviations). */
export function varianceAxes(x: TypedArray, shape: Shape, axes: readonly number[], out: TypedArray): void {
  const m = out.length;
  if (m === 0) return;
  let count = 1;
  for (const a of axes) count *= shape[a]!;
  const mean = new Float64Array(m);
  reduceAxes("sum", x, shape, axes, mean);
  for (let o = 0; o < m; o++) mean[o] = mean[o]! / count;
  const ss = new Float64Array(m);
  const view = contiguousView(shape, axes);
  if (view !== null) {
    const [outer, red, inner] = view;
    for (let o = 0; o < outer; o++) {
      const base = o * red * inner,
        ob = o * inner;
      for (let r = 0; r < red; r++) {
        const rb = base + r * inner;
        for (let i = 0; i < inner; i++) {
          const d = x[rb + i]! - mean[ob + i]!;
          ss[ob + i] += d * d;
        }
      }
    }
  } else {
    const map = reduceIndexMap(shape, axes);
    for (let i = 0; i < x.length; i++) {
      const o = map[i]!;
      const d = x[i]! - mean[o]!;
      ss[o] += d * d;
    }
  }
  for (let o = 0; o < m; o++) out[o] = ss[o]! / count;
}

/**
 * Index of the max (`max`) or min over the middle dimension of x viewed as [outer, red, inner],
 * red >= 1. Ties give the first occurrence; a NaN wins (the first NaN), as in NumPy.
 */
export function argReduce(kind: "max" | "min", x: TypedArray, outer: number, red: number, inner: number, out: Int32Array): void {
  const best = new Float64Array(inner);
  const isMax = kind === "max";
  for (let o = 0; o < outer; o++) {
    const base = o * red * inner;
    const ob = o * inner;
    for (let i = 0; i < inner; i++) {
      best[i] = x[base + i]!;
      out[ob + i] = 0;
    }
    for (let r = 1; r < red; r++) {
      const rb = base + r * inner;
      for (let i = 0; i < inner; i++) {
        const v = x[rb + i]!;
        const b = best[i]!;
        if ((isMax ? v > b : v < b) || (v !== v && b === b)) {
          best[i] = v;
          out[ob + i] = r;
        }
      }
    }
  }
}

/**
 * Cumulative sum along the middle dimension of x viewed as [outer, n, inner]. The sums start at
 * -0, IEEE's additive identity (-0 + v is v, -0 included), so each is the sum of its elements as
 * `sum` gives it (a leading -0 stays -0); an exclusive scan's first entry, the empty sum, is +0.
 */
export function cumsum3(x: TypedArray, out: TypedArray, outer: number, n: number, inner: number, exclusive: boolean, reverse: boolean): void {
  if (inner === 1) {
    const start = reverse ? n - 1 : 0,
      step = reverse ? -1 : 1;
    for (let o = 0; o < outer; o++) {
      const base = o * n;
      let acc = -0;
      for (let s = 0, r = base + start; s < n; s++, r += step) {
        const v = x[r]!;
        if (exclusive) {
          out[r] = s === 0 ? 0 : acc;
          acc += v;
        } else {
          acc += v;
          out[r] = acc;
        }
      }
    }
    return;
  }
  const acc = new Float64Array(inner);
  for (let o = 0; o < outer; o++) {
    const base = o * n * inner;
    acc.fill(-0);
    for (let s = 0; s < n; s++) {
      const r = reverse ? n - 1 - s : s;
      const rb = base + r * inner;
      if (exclusive) {
        for (let i = 0; i < inner; i++) {
          const v = x[rb + i]!;
          out[rb + i] = s === 0 ? 0 : acc[i]!;
          acc[i] += v;
        }
      } else {
        for (let i = 0; i < inner; i++) {
          acc[i] += x[rb + i]!;
          out[rb + i] = acc[i]!;
        }
      }
    }
  }
}
