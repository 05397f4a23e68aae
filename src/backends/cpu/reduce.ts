/**
 * Reduction loops. The input is viewed as [outer, reduced..., inner]-style index maps: for
 * every input element we know its output slot, so any axis set reduces in one pass; the
 * common cases (all axes, trailing axes) get tight loops.
 */
import type { TypedArray } from "../../core/dtype.js";
import type { Shape } from "../../core/shape.js";

export type Combine = "sum" | "prod" | "max" | "min" | "any" | "all";

const INIT: Record<Combine, number> = { sum: 0, prod: 1, max: -Infinity, min: Infinity, any: 0, all: 1 };

function combineExpr(c: Combine): string {
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
      return "(acc || v) ? 1 : 0";
    case "all":
      return "(acc && v) ? 1 : 0";
  }
}

const compiled = new Map<Combine, (x: TypedArray, out: TypedArray, outer: number, red: number, inner: number) => void>();

/** Reduces x viewed as [outer, red, inner] over the middle dimension into out [outer, inner]. */
function reduce3(c: Combine) {
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
          let acc = ${INIT[c]};
          for (let r = 0; r < red; r++) { const v = x[base + r]; acc = ${combineExpr(c)}; }
          out[o] = acc;
        } else {
          const ob = o * inner;
          for (let i = 0; i < inner; i++) out[ob + i] = ${INIT[c]};
          for (let r = 0; r < red; r++) {
            const rb = base + r * inner;
            for (let i = 0; i < inner; i++) { const acc = out[ob + i]; const v = x[rb + i]; out[ob + i] = ${combineExpr(c)}; }
          }
        }
      }`,
    ) as (x: TypedArray, out: TypedArray, outer: number, red: number, inner: number) => void;
    compiled.set(c, f);
  }
  return f;
}

/**
 * Reduces `x` (shape `shape`) over sorted `axes` into `out` (size = product of kept dims).
 * Contiguous runs of reduced axes are handled by repeated [outer, red, inner] passes.
 */
export function reduceAxes(c: Combine, x: TypedArray, shape: Shape, axes: readonly number[], out: TypedArray, makeTemp: (n: number) => TypedArray): void {
  if (x.length === 0) {
    out.fill(INIT[c]);
    return;
  }
  let cur: TypedArray = x;
  let curShape = shape.slice();
  // Reduce from the last axis group to the first so earlier axis indices stay valid.
  const groups: [number, number][] = [];
  for (const a of axes) {
    const last = groups[groups.length - 1];
    if (last && last[1] === a) last[1] = a + 1;
    else groups.push([a, a + 1]);
  }
  for (let g = groups.length - 1; g >= 0; g--) {
    const [start, end] = groups[g]!;
    let outer = 1,
      red = 1,
      inner = 1;
    for (let i = 0; i < start; i++) outer *= curShape[i]!;
    for (let i = start; i < end; i++) red *= curShape[i]!;
    for (let i = end; i < curShape.length; i++) inner *= curShape[i]!;
    const dst = g === 0 ? out : makeTemp(outer * inner);
    reduce3(c)(cur, dst, outer, red, inner);
    cur = dst;
    curShape = [...curShape.slice(0, start), ...curShape.slice(end)];
  }
  if (groups.length === 0) (out as Float64Array).set(cur as Float64Array);
}
