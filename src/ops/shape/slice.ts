/** slice (strided, NumPy/Python semantics) and its gradient sliceGrad. */
import { IndexError, ShapeError, ValueError } from "../../core/errors.js";
import { checkShape, dimsCompatible, fmtShape, stridesOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { applyOp1, defineOp, type OpDef } from "../registry.js";
import { toTensor } from "../convert.js";
import { installMethods } from "../methods.js";
import { copyStrided } from "../../backends/cpu/transpose.js";
import { fmt, unknownAxisError, alloc } from "./common.js";
import { squeezeOp } from "./reshape.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { perExample, sliceBatch } from "../batching.js";


export interface SliceAttrs {
  /** Per axis (length = rank): Python-style start (negative counts from the end; null = default). */
  begin: (number | null)[];
  /** Per axis: Python-style stop (exclusive; null = to the end in the direction of the stride). */
  end: (number | null)[];
  /** Per axis: non-zero step. */
  strides: number[];
}

interface AxisRange {
  start: number;
  step: number;
  len: number;
}

/** Python's slice.indices(n): clamps start/stop like a[start:stop:step]. */
function sliceRange(b: number | null, e: number | null, step: number, n: number): AxisRange {
  // An unknown axis size (staging): the clamped length is unknown until the graph runs.
  if (n < 0) return { start: 0, step, len: -1 };
  let start: number;
  let stop: number;
  if (step > 0) {
    start = b === null ? 0 : b < 0 ? Math.max(0, b + n) : Math.min(b, n);
    stop = e === null ? n : e < 0 ? Math.max(0, e + n) : Math.min(e, n);
  } else {
    start = b === null ? n - 1 : b < 0 ? Math.max(-1, b + n) : Math.min(b, n - 1);
    stop = e === null ? -1 : e < 0 ? Math.max(-1, e + n) : Math.min(e, n - 1);
  }
  const len = Math.max(0, Math.ceil((stop - start) / step));
  return { start, step, len };
}

/** Whether begin:end:step takes every element of any axis (in order, or reversed). */
function isWholeAxis(b: number | null, e: number | null, step: number): boolean {
  return e === null && ((step === 1 && (b === null || b === 0)) || (step === -1 && (b === null || b === -1)));
}

function sliceRanges(op: string, shape: Shape, a: SliceAttrs): AxisRange[] {
  const r = shape.length;
  if (!Array.isArray(a.begin) || !Array.isArray(a.end) || !Array.isArray(a.strides) || a.begin.length !== r || a.end.length !== r || a.strides.length !== r) {
    throw new ShapeError(`begin ${fmt(a.begin)}, end ${fmt(a.end)} and strides ${fmt(a.strides)} must each have one entry per axis of shape ${fmtShape(shape)}`, op);
  }
  return shape.map((n, d) => {
    const b = a.begin[d]!;
    const e = a.end[d]!;
    const s = a.strides[d]!;
    if ((b !== null && !Number.isInteger(b)) || (e !== null && !Number.isInteger(e))) {
      throw new ShapeError(`begin/end for axis ${d} must be integers or null, got ${String(b)} and ${String(e)}`, op);
    }
    if (!Number.isInteger(s) || s === 0) throw new ValueError(`stride for axis ${d} must be a non-zero integer, got ${String(s)}`, op);
    return sliceRange(b, e, s, n);
  });
}

export const sliceOp: OpDef<SliceAttrs> = defineOp<SliceAttrs>({
  name: "slice",
  batch: sliceBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    return [{ shape: sliceRanges("slice", x.shape, attrs).map((r) => r.len), dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.slice,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = alloc(o);
      const ranges = sliceRanges("slice", x.shape, attrs);
      const st = stridesOf(x.shape);
      let off = 0;
      const strides = ranges.map((r, d) => {
        off += r.start * st[d]!;
        return r.step * st[d]!;
      });
      copyStrided(x.concrete(), off, strides, out, 0, stridesOf(o.shape), o.shape);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const { begin, end, strides } = ctx.attrs;
    const shape = ctx.inputs[0]!.shape;
    // An unknown dim (staging) stays -1 in sliceGrad's shape, which it can resolve from dy only
    // where the slice takes the whole axis.
    shape.forEach((n, d) => {
      if (n < 0 && !isWholeAxis(begin[d]!, end[d]!, strides[d]!)) throw unknownAxisError("slice", d, shape, "the gradient of slicing part of an axis");
    });
    return [applyOp1(sliceGradOp, [cts[0]!], { shape: shape.slice(), begin, end, strides })];
  },
});

export interface SliceGradAttrs extends SliceAttrs {
  /**
   * Shape of the sliced tensor (the output's shape). An entry may be -1 (unknown while staging)
   * on an axis the slice takes whole, where the size is dy's.
   */
  shape: number[];
}

/** sliceGrad's output shape: attrs.shape with -1 entries (whole axes only) taken from dy. */
function sliceGradShape(attrs: SliceGradAttrs, dy: Shape): number[] {
  const a = attrs.shape;
  if (!Array.isArray(a) || !a.some((n) => n === -1)) return checkShape("sliceGrad", a);
  if (a.length !== dy.length) throw new ShapeError(`shape ${fmt(a)} must have one entry per axis of dy (shape ${fmtShape(dy)})`, "sliceGrad");
  return a.map((n, d) => {
    if (n !== -1) return checkShape("sliceGrad", [n])[0]!;
    if (!isWholeAxis(attrs.begin[d] ?? null, attrs.end[d] ?? null, attrs.strides[d]!)) {
      throw new ShapeError(`shape ${fmt(a)} has an unknown size (-1) for axis ${d}, which the slice does not take whole, so it cannot be told from dy (shape ${fmtShape(dy)})`, "sliceGrad");
    }
    return dy[d]!;
  });
}

/** The transpose of slice: zeros of `shape` with `dy` written at the sliced positions. */
export const sliceGradOp: OpDef<SliceGradAttrs> = defineOp<SliceGradAttrs>({
  name: "sliceGrad",
  batch: perExample,
  family: "shape",
  inputs: ["dy"],
  infer(inputs, attrs) {
    const dy = inputs[0]!;
    const shape = sliceGradShape(attrs, dy.shape);
    const want = sliceRanges("sliceGrad", shape, attrs).map((r) => r.len);
    if (want.length !== dy.shape.length || !want.every((n, d) => dimsCompatible(n, dy.shape[d]!))) {
      throw new ShapeError(`dy has shape ${fmtShape(dy.shape)} but slicing ${fmtShape(shape)} gives ${fmtShape(want)}`, "sliceGrad");
    }
    return [{ shape: shape.slice(), dtype: dy.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.sliceGrad,
    cpu(inputs, attrs, outs) {
      const dy = inputs[0]!;
      const out = alloc(outs[0]!);
      const shape = outs[0]!.shape;
      const ranges = sliceRanges("sliceGrad", shape, attrs);
      const st = stridesOf(shape);
      let off = 0;
      const strides = ranges.map((r, d) => {
        off += r.start * st[d]!;
        return r.step * st[d]!;
      });
      copyStrided(dy.concrete(), 0, stridesOf(dy.shape), out, off, strides, dy.shape);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const { begin, end, strides } = ctx.attrs;
    return [applyOp1(sliceOp, [cts[0]!], { begin, end, strides })];
  },
});

type SliceBound = number | null | undefined;

function checkBoundList(what: string, v: unknown, rank: number, shape: Shape): SliceBound[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new ShapeError(`${what} must be an array, got ${String(v)}`, "slice");
  if (v.length > rank) throw new ShapeError(`${what} ${fmt(v)} has ${v.length} entries but the input has shape ${fmtShape(shape)} (rank ${rank})`, "slice");
  for (const b of v) {
    if (b !== null && b !== undefined && (typeof b !== "number" || !Number.isInteger(b))) {
      throw new ShapeError(`${what} ${fmt(v)} has a non-integer entry ${String(b)}`, "slice");
    }
  }
  return v as SliceBound[];
}

/** Parses one "start:stop:step" / "index" / "..." item of a slice string. */
function parseSliceString(spec: string, shape: Shape): { begin: SliceBound[]; end: SliceBound[]; strides: number[]; drop: number[] } {
  const parts = spec.trim() === "" ? [] : spec.split(",").map((p) => p.trim());
  const ell = parts.filter((p) => p === "...").length;
  if (ell > 1) throw new ShapeError(`slice string ${fmt(spec)} has more than one "..."`, "slice");
  const explicit = parts.length - ell;
  if (explicit > shape.length) throw new ShapeError(`slice string ${fmt(spec)} indexes ${explicit} axes but the input has shape ${fmtShape(shape)}`, "slice");
  const begin: SliceBound[] = [];
  const end: SliceBound[] = [];
  const strides: number[] = [];
  const drop: number[] = [];
  const num = (s: string, item: string): number | null => {
    const t = s.trim();
    if (t === "") return null;
    if (!/^[+-]?\d+$/.test(t)) throw new ShapeError(`slice string ${fmt(spec)}: ${fmt(item)} is not of the form start:stop:step, an integer, or ...`, "slice");
    return Number(t);
  };
  let axis = 0;
  for (const p of parts) {
    if (p === "...") {
      const skip = shape.length - explicit;
      for (let k = 0; k < skip; k++, axis++) {
        begin.push(null);
        end.push(null);
        strides.push(1);
      }
      continue;
    }
    const f = p.split(":");
    if (f.length === 1) {
      const i = num(f[0]!, p);
      if (i === null) throw new ShapeError(`slice string ${fmt(spec)} has an empty item`, "slice");
      const n = shape[axis]!;
      if (n < 0) {
        // Unknown size (staging): keep the index Python-style (i:i+1, or -1: to the end); an
        // index out of range leaves an empty axis, which the squeeze rejects when the graph runs.
        begin.push(i);
        end.push(i === -1 ? null : i + 1);
      } else {
        if (i < -n || i >= n) throw new IndexError(`index ${i} is out of range for axis ${axis} of shape ${fmtShape(shape)} (valid: ${-n}..${n - 1})`, "slice");
        const k = i < 0 ? i + n : i;
        begin.push(k);
        end.push(k + 1);
      }
      strides.push(1);
      drop.push(axis);
    } else if (f.length <= 3) {
      begin.push(num(f[0]!, p));
      end.push(num(f[1]!, p));
      const s = f.length === 3 ? num(f[2]!, p) : null;
      strides.push(s ?? 1);
    } else {
      throw new ShapeError(`slice string ${fmt(spec)}: ${fmt(p)} has too many colons`, "slice");
    }
    axis++;
  }
  return { begin, end, strides, drop };
}

/**
 * NumPy/Python strided slicing, per axis `x[begin:end:stride]`:
 * - `slice(x, begin, end?, strides?)`: arrays of at most rank entries (missing trailing axes and
 *   null/undefined entries take the defaults: whole axis, stride 1); negative begin/end count from
 *   the end, out-of-range bounds are clamped as Python does, negative strides walk backwards;
 * - `slice(x, "1:3, ::-1, ...")`: the same as a string, where a bare integer selects one index
 *   and removes that axis, and "..." stands for the axes not mentioned.
 */
export function slice(x: TensorLike, begin: string | readonly SliceBound[], end?: readonly SliceBound[] | null, strides?: readonly SliceBound[] | null): Tensor {
  const t = toTensor(x, "slice");
  const r = t.rank;
  let b: SliceBound[];
  let e: SliceBound[];
  let s: SliceBound[];
  let drop: number[] = [];
  if (typeof begin === "string") {
    if (end !== undefined && end !== null) throw new ValueError(`a slice string takes no end/strides arguments`, "slice");
    ({ begin: b, end: e, strides: s, drop } = parseSliceString(begin, t.shape));
  } else {
    b = checkBoundList("begin", begin, r, t.shape);
    e = checkBoundList("end", end, r, t.shape);
    s = checkBoundList("strides", strides, r, t.shape);
  }
  const attrs: SliceAttrs = { begin: [], end: [], strides: [] };
  for (let d = 0; d < r; d++) {
    attrs.begin.push(b[d] ?? null);
    attrs.end.push(e[d] ?? null);
    const st = s[d] ?? 1;
    if (st === 0) throw new ValueError(`stride for axis ${d} must be non-zero (strides ${fmt(s)})`, "slice");
    attrs.strides.push(st);
  }
  const ranges = sliceRanges("slice", t.shape, attrs);
  const whole = ranges.every((g, d) =>
    t.shape[d]! < 0 ? g.step === 1 && (attrs.begin[d] === null || attrs.begin[d] === 0) && attrs.end[d] === null : g.step === 1 && g.start === 0 && g.len === t.shape[d],
  );
  const y = whole ? t : applyOp1(sliceOp, [t], attrs);
  return drop.length > 0 ? applyOp1(squeezeOp, [y], { axes: drop }) : y;
}

declare module "../../core/tensor.js" {
  interface Tensor {
    slice(begin: string | readonly (number | null | undefined)[], end?: readonly (number | null | undefined)[] | null, strides?: readonly (number | null | undefined)[] | null): Tensor;
  }
}
installMethods({ slice });
