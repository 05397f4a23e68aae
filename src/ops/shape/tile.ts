/** tile and flip. */
import { ShapeError } from "../../core/errors.js";
import { fmtShape, stridesOf, type Shape } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { applyOp1, defineOp, type OpDef } from "../registry.js";
import { toTensor } from "../convert.js";
import { installMethods } from "../methods.js";
import { sum } from "../reduce.js";
import { copyIndexMapped, copyStrided } from "../../backends/cpu/transpose.js";
import { fmt, axesOf, unknownAxisError, alloc, checkSortedAxes, type AxesAttrs } from "./common.js";
import { reshape } from "./reshape.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { axesBatch, batchWhen, leadingBatch } from "../batching.js";


export interface TileAttrs {
  /** Repetitions per output axis; at least rank entries (the input is viewed with leading 1s). */
  reps: number[];
}

function checkReps(op: string, reps: unknown, shape: Shape): number[] {
  if (!Array.isArray(reps)) throw new ShapeError(`reps must be an array of non-negative integers, got ${String(reps)}`, op);
  for (const r of reps) {
    if (typeof r !== "number" || !Number.isInteger(r) || r < 0) {
      throw new ShapeError(`reps ${fmt(reps)} has ${String(r)}; reps must be non-negative integers (input shape ${fmtShape(shape)})`, op);
    }
  }
  return reps as number[];
}

function tiledInputShape(shape: Shape, n: number): number[] {
  return [...new Array<number>(n - shape.length).fill(1), ...shape];
}

export const tileOp = defineOp<TileAttrs>({
  name: "tile",
  batch: batchWhen<{ reps: number[] }>("leading", (c) => c.attrs.reps.length === c.inputs[0]!.rank - 1, leadingBatch<{ reps: number[] }>("leading", (a) => ({ ...a, reps: [1, ...a.reps] }), [0])),
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    const reps = checkReps("tile", attrs.reps, x.shape);
    if (reps.length < x.shape.length) {
      throw new ShapeError(`reps ${fmt(reps)} has fewer entries than the rank of the input (shape ${fmtShape(x.shape)})`, "tile");
    }
    const xs = tiledInputShape(x.shape, reps.length);
    return [{ shape: xs.map((n, d) => (reps[d] === 0 ? 0 : n < 0 ? -1 : n * reps[d]!)), dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.tile,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const out = alloc(outs[0]!);
      const xs = tiledInputShape(x.shape, attrs.reps.length);
      const maps = xs.map((n, d) => {
        const m = new Int32Array(n * attrs.reps[d]!);
        for (let i = 0; i < m.length; i++) m[i] = i % n;
        return m;
      });
      copyIndexMapped(x.concrete(), xs, maps, out);
      return [out];
    },
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    const reps = ctx.attrs.reps;
    const xs = tiledInputShape(x.shape, reps.length);
    if (xs.filter((n) => n < 0).length > 1) {
      throw unknownAxisError("tile", xs.findIndex((n) => n < 0), x.shape, "the gradient of tiling more than one axis of unknown size");
    }
    const split: number[] = [];
    xs.forEach((n, d) => split.push(reps[d]!, n)); // an unknown n (staging) stays -1: reshape infers it
    const g = sum(reshape(cts[0]!, split), reps.map((_, d) => 2 * d));
    return [reshape(g, x.shape)];
  },
});

/**
 * Repeats `x` reps[d] times along each axis (NumPy's tile: a shorter reps is padded with leading
 * 1s, a longer one views x with leading size-1 axes).
 */
export function tile(x: TensorLike, reps: readonly number[]): Tensor {
  const t = toTensor(x, "tile");
  const r = checkReps("tile", reps, t.shape).slice();
  while (r.length < t.rank) r.unshift(1);
  if (r.length === t.rank && r.every((k) => k === 1)) return t;
  return applyOp1(tileOp, [t], { reps: r });
}

export const flipOp: OpDef<AxesAttrs> = defineOp<AxesAttrs>({
  name: "flip",
  batch: axesBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    checkSortedAxes("flip", attrs.axes, x.shape);
    return [{ shape: x.shape, dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.flip,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const out = alloc(outs[0]!);
      const st = stridesOf(x.shape);
      let off = 0;
      const src = st.map((s, d) => {
        if (!attrs.axes.includes(d)) return s;
        off += (x.shape[d]! - 1) * s;
        return -s;
      });
      copyStrided(x.concrete(), off, src, out, 0, st, x.shape);
      return [out];
    },
  },
  vjp(ctx, cts) {
    return [applyOp1(flipOp, [cts[0]!], { axes: ctx.attrs.axes })];
  },
});

/** Reverses the order of elements along the given axes (default: all). */
export function flip(x: TensorLike, axis?: number | readonly number[] | null): Tensor {
  const t = toTensor(x, "flip");
  // Flipping a size-0 or size-1 axis is a no-op; an unknown size (staging) may be larger.
  const axes = axesOf("flip", axis, t.shape).filter((a) => t.shape[a]! > 1 || t.shape[a]! < 0);
  if (axes.length === 0) return t;
  return applyOp1(flipOp, [t], { axes });
}

declare module "../../core/tensor.js" {
  interface Tensor {
    tile(reps: readonly number[]): Tensor;
    flip(axis?: number | readonly number[] | null): Tensor;
  }
}
installMethods({ tile, flip });
