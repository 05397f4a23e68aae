/** pad (constant, reflect, symmetric, edge). */
import { ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape, hasUnknownDims, stridesOf, type Shape } from "../../core/shape.js";
import { Tensor, makeTensor, type TensorLike } from "../../core/tensor.js";
import { applyOp1, defineOp } from "../registry.js";
import { toTensor } from "../convert.js";
import { installMethods } from "../methods.js";
import { full } from "../fill.js";
import { fullLike } from "../creation.js";
import { copyIndexMapped, copyStrided } from "../../backends/cpu/transpose.js";
import { fmt, unknownAxisError, alloc } from "./common.js";
import { sliceOp } from "./slice.js";
import { scatterAdd } from "./gather.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { padBatch } from "../batching.js";


export type PadMode = "constant" | "reflect" | "symmetric" | "edge";
const PAD_MODES: readonly PadMode[] = ["constant", "reflect", "symmetric", "edge"];

export interface PadAttrs {
  /** [before, after] per axis, non-negative integers. */
  paddings: [number, number][];
  mode: PadMode;
  /** Fill value for mode "constant". */
  value: number;
}

function checkPaddings(op: string, paddings: unknown, shape: Shape): [number, number][] {
  const r = shape.length;
  const bad = (why: string): never => {
    throw new ShapeError(`paddings ${fmt(paddings)} ${why} for an input of shape ${fmtShape(shape)}`, op);
  };
  if (!Array.isArray(paddings)) bad("must be an array of [before, after] pairs");
  const p = paddings as unknown[];
  if (p.length !== r) bad(`has ${p.length} entries but needs one [before, after] pair per axis (${r})`);
  return p.map((pair, d) => {
    if (!Array.isArray(pair) || pair.length !== 2) bad(`entry ${d} is not a [before, after] pair`);
    const [b, a] = pair as unknown[];
    for (const v of [b, a]) {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) bad(`entry ${d} has ${String(v)}; paddings must be non-negative integers`);
    }
    return [b as number, a as number];
  });
}

/** Source index for output position i (in -before..n+after-1 shifted by before) in a non-constant mode. */
export function padIndexMap(mode: PadMode, n: number, before: number, after: number): Int32Array {
  const m = new Int32Array(n + before + after);
  for (let o = 0; o < m.length; o++) {
    const i = o - before;
    let j: number;
    if (i >= 0 && i < n) j = i;
    else if (mode === "edge" || n === 1) j = i < 0 ? 0 : n - 1;
    else if (mode === "reflect") {
      const p = 2 * (n - 1);
      j = ((i % p) + p) % p;
      if (j >= n) j = p - j;
    } else {
      const p = 2 * n;
      j = ((i % p) + p) % p;
      if (j >= n) j = p - 1 - j;
    }
    m[o] = j;
  }
  return m;
}

export const padOp = defineOp<PadAttrs>({
  name: "pad",
  batch: padBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (!PAD_MODES.includes(attrs.mode)) throw new ValueError(`unknown mode ${fmt(attrs.mode)} (expected one of ${PAD_MODES.join(", ")})`, "pad");
    const p = checkPaddings("pad", attrs.paddings, x.shape);
    if (attrs.mode !== "constant") {
      x.shape.forEach((n, d) => {
        if (n === 0 && p[d]![0] + p[d]![1] > 0) {
          throw new ShapeError(`cannot pad the empty axis ${d} of shape ${fmtShape(x.shape)} in mode ${fmt(attrs.mode)}`, "pad");
        }
      });
    }
    return [{ shape: x.shape.map((n, d) => (n < 0 ? -1 : n + p[d]![0] + p[d]![1])), dtype: x.dtype }];
  },
  kernels: {
    webgpu: shapeGpu.pad,
    cpu(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = alloc(o);
      if (attrs.mode === "constant") {
        const v = o.dtype === "bool" ? (attrs.value ? 1 : 0) : attrs.value;
        if (v !== 0) out.fill(v);
        const ost = stridesOf(o.shape);
        let off = 0;
        attrs.paddings.forEach(([b], d) => (off += b * ost[d]!));
        copyStrided(x.concrete(), 0, stridesOf(x.shape), out, off, ost, x.shape);
      } else {
        const maps = x.shape.map((n, d) => padIndexMap(attrs.mode, n, attrs.paddings[d]![0], attrs.paddings[d]![1]));
        copyIndexMapped(x.concrete(), x.shape, maps, out);
      }
      return [out];
    },
  },
  vjp(ctx, cts) {
    const x = ctx.inputs[0]!;
    const { paddings, mode } = ctx.attrs;
    let g = cts[0]!;
    if (mode === "constant") {
      const begin = paddings.map(([b]) => b);
      // An unknown size (staging) ends `after` elements before the end instead.
      const end = paddings.map(([b, a], d) => (x.shape[d]! >= 0 ? b + x.shape[d]! : a > 0 ? -a : null));
      return [applyOp1(sliceOp, [g], { begin, end, strides: begin.map(() => 1) })];
    }
    // Non-constant padding is a gather along each axis; its transpose a scatter-add per axis.
    for (let d = x.rank - 1; d >= 0; d--) {
      const [b, a] = paddings[d]!;
      if (b === 0 && a === 0) continue;
      const n = x.shape[d]!;
      if (n < 0) throw unknownAxisError("pad", d, x.shape, `the gradient of padding in mode ${fmt(mode)}`);
      const map = makeTensor("pad", padIndexMap(mode, n, b, a), undefined, "int32");
      const shape = g.shape.slice();
      shape[d] = n;
      let zeros: Tensor;
      if (hasUnknownDims(shape)) {
        // Zeros shaped like the unpadded part of g along axis d (other axes may be unknown).
        const lo = g.shape.map(() => null as number | null);
        const hi = lo.slice();
        lo[d] = b;
        hi[d] = b + n;
        zeros = fullLike(applyOp1(sliceOp, [g], { begin: lo, end: hi, strides: lo.map(() => 1) }), 0);
      } else zeros = full(shape, 0, g.dtype);
      g = scatterAdd(zeros, map, g, d);
    }
    return [g];
  },
});

/**
 * Pads with [before, after] per axis. mode "constant" fills with `constantValue`; "reflect"
 * mirrors without repeating the edge (NumPy's reflect), "symmetric" mirrors repeating it, and
 * "edge" repeats the edge value.
 */
export function pad(x: TensorLike, paddings: readonly (readonly [number, number])[], constantValue: number | boolean = 0, mode: PadMode = "constant"): Tensor {
  const t = toTensor(x, "pad");
  const p = checkPaddings("pad", paddings, t.shape);
  if (!PAD_MODES.includes(mode)) throw new ValueError(`unknown mode ${fmt(mode)} (expected one of ${PAD_MODES.join(", ")})`, "pad");
  if (typeof constantValue !== "number" && typeof constantValue !== "boolean") {
    throw new ValueError(`constantValue must be a number or boolean, got ${typeof constantValue}`, "pad");
  }
  if (p.every(([b, a]) => b === 0 && a === 0)) return t;
  return applyOp1(padOp, [t], { paddings: p, mode, value: Number(constantValue) });
}

declare module "../../core/tensor.js" {
  interface Tensor {
    pad(paddings: readonly (readonly [number, number])[], constantValue?: number | boolean, mode?: PadMode): Tensor;
  }
}
installMethods({ pad });
