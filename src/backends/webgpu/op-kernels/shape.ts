/** WebGPU kernel entries of the shape, creation and indexing ops (their declarations in src/ops name them). */
import type { DType } from "../../../core/dtype.js";
import { IndexError, userLocation, executing, type SourceLocation } from "../../../core/errors.js";
import { broadcastReductionAxes, fmtShape, positionOf, stridesOf } from "../../../core/shape.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, REPORT, sizeOf, storageType, WG } from "../kernels/common.js";
import { broadcastTo, cast, copyInto, fill, range, stridedCopy, transpose } from "../kernels/layout.js";
import { mappedCopy } from "../kernels/mapped.js";
import { gather, gatherND, scatterAdd, type OutOfRange } from "../kernels/gather.js";
import { reduce } from "../kernels/reduce.js";
import { gatherElements as gatherElementsKernel, scatterElements as scatterElementsKernel, scatterND as scatterNDKernel, type Reduction } from "../kernels/elements.js";
import { gpuEntries, prod, view, type WebGpuKernel } from "./types.js";

/** Where the user called the op (for an error a kernel reports later, at a read). */
function callSite(): SourceLocation | null {
  return executing.at ?? userLocation();
}


/** The IndexError of an index out of range along an axis (the CPU kernels' message). */
function axisOutOfRange(op: string, idxShape: readonly number[], n: number, axis: number, xShape: readonly number[], wrappedBy?: string): OutOfRange {
  const site = callSite();
  return (j, k) => {
    const valid = n === 0 ? `the axis is empty` : wrappedBy !== undefined ? `valid indices are ${-n}..${n - 1}` : `valid indices are 0..${n - 1}`;
    const neg = k < 0 && wrappedBy === undefined ? " (negative indices are not wrapped)" : "";
    const by = wrappedBy === undefined ? "" : ` (in ${wrappedBy})`;
    return new IndexError(
      `index ${k} at position ${positionOf(j, idxShape)} of indices (shape ${fmtShape(idxShape)}) is out of range for axis ${axis} of size ${n} of a tensor of shape ${fmtShape(xShape)}: ${valid}${neg} (found on the GPU; raised at the next read)${by}`,
      op,
      site,
    );
  };
}

/** The IndexError of an element op's index out of range along `axis` (the CPU kernels' message). */
function elementsOutOfRange(op: string, idxShape: readonly number[], xShape: readonly number[], axis: number): OutOfRange {
  const site = callSite();
  const n = xShape[axis]!;
  return (j, k) =>
    new IndexError(
      `index ${k} at position ${positionOf(j, idxShape)} of indices (shape ${fmtShape(idxShape)}) is out of range for axis ${axis} of x (shape ${fmtShape(xShape)}) (valid: 0..${n - 1}) (found on the GPU; raised at the next read)`,
      op,
      site,
    );
}

const alias: WebGpuKernel = (_dev, inputs, _attrs, outs) => [view(inputs[0]!, outs[0]!.shape)];

interface Axis {
  axis: number;
}

/** Python's slice start for (begin, step) on an axis of n (ops/shape/slice.ts sliceRange). */
function sliceStart(b: number | null, step: number, n: number): number {
  if (step > 0) return b === null ? 0 : b < 0 ? Math.max(0, b + n) : Math.min(b, n);
  return b === null ? n - 1 : b < 0 ? Math.max(-1, b + n) : Math.min(b, n - 1);
}

interface SliceAttrs {
  begin: (number | null)[];
  strides: number[];
}

/** The affine map of a slice of `shape`: element offset and per-axis strides. */
function sliceMap(shape: readonly number[], a: SliceAttrs): { offset: number; strides: number[] } {
  const st = stridesOf(shape);
  let offset = 0;
  const strides = shape.map((n, d) => {
    offset += sliceStart(a.begin[d]!, a.strides[d]!, n) * st[d]!;
    return a.strides[d]! * st[d]!;
  });
  return { offset, strides };
}

export const shapeGpu = gpuEntries(
  {
    reshape: alias,
    expandDims: alias,
    squeeze: alias,
    identity: alias,
    stopGradient: alias,

    broadcastTo: (dev, [x], _a, outs) => [broadcastTo(dev, x!, outs[0]!.shape)],
    transpose: (dev, [x], a: { perm: number[] }) => [transpose(dev, x!, a.perm)],
    cast: (dev, [x], a: { dtype: DType }) => [x!.dtype === a.dtype ? x! : cast(dev, x!, a.dtype)],

    concat(dev, inputs, a: Axis, outs) {
      const o = outs[0]!;
      const out = allocArray(dev, o.shape, o.dtype);
      const inner = prod(o.shape, a.axis + 1);
      const row = o.shape[a.axis]! * inner;
      let off = 0;
      for (const t of inputs) {
        const chunk = t.shape[a.axis]! * inner;
        const outer = prod(t.shape, 0, a.axis);
        copyInto(dev, { ...t, shape: [outer, chunk] }, out, [row, 1], off);
        off += chunk;
      }
      return [out];
    },
    stack(dev, inputs, a: Axis, outs) {
      const o = outs[0]!;
      const out = allocArray(dev, o.shape, o.dtype);
      const inner = prod(o.shape, a.axis + 1);
      const k = inputs.length;
      inputs.forEach((t, j) => copyInto(dev, { ...t, shape: [prod(t.shape, 0, a.axis), inner] }, out, [k * inner, 1], j * inner));
      return [out];
    },
    unstack(dev, [x], a: Axis, outs) {
      const inner = prod(x!.shape, a.axis + 1);
      const n = x!.shape[a.axis]!;
      const outer = prod(x!.shape, 0, a.axis);
      return outs.map((o, j) => view(stridedCopy(dev, x!, [outer, inner], [n * inner, 1], j * inner), o.shape));
    },
    split(dev, [x], a: { sizes: number[]; axis: number }, outs) {
      const inner = prod(x!.shape, a.axis + 1);
      const row = x!.shape[a.axis]! * inner;
      const outer = prod(x!.shape, 0, a.axis);
      let off = 0;
      return outs.map((o) => {
        const chunk = o.shape[a.axis]! * inner;
        const y = view(stridedCopy(dev, x!, [outer, chunk], [row, 1], off), o.shape);
        off += chunk;
        return y;
      });
    },
    slice(dev, [x], a: SliceAttrs, outs) {
      const m = sliceMap(x!.shape, a);
      return [stridedCopy(dev, x!, outs[0]!.shape, m.strides, m.offset)];
    },
    sliceGrad(dev, [dy], a: SliceAttrs, outs) {
      const o = outs[0]!;
      const out = fill(dev, o.shape, o.dtype, 0);
      const m = sliceMap(o.shape, a);
      copyInto(dev, dy!, out, m.strides, m.offset);
      return [out];
    },
    pad(dev, [x], a: { paddings: [number, number][]; mode: "constant" | "reflect" | "symmetric" | "edge"; value: number }, outs) {
      const o = outs[0]!;
      if (a.mode !== "constant") return [mappedCopy(dev, x!, x!.shape, o.shape, a.mode, a.paddings.map((p) => p[0]))];
      const out = fill(dev, o.shape, o.dtype, o.dtype === "bool" ? (a.value ? 1 : 0) : a.value);
      const st = stridesOf(o.shape);
      copyInto(dev, x!, out, st, a.paddings.reduce((acc, p, d) => acc + p[0] * st[d]!, 0));
      return [out];
    },
    tile(dev, [x], a: { reps: number[] }, outs) {
      const r = a.reps.length;
      const xs = [...new Array<number>(Math.max(0, r - x!.shape.length)).fill(1), ...x!.shape];
      return [mappedCopy(dev, x!, xs, outs[0]!.shape, "tile", [])];
    },
    flip(dev, [x], a: { axes: number[] }, outs) {
      const st = stridesOf(x!.shape);
      let offset = 0;
      const strides = x!.shape.map((n, d) => {
        if (!a.axes.includes(d)) return st[d]!;
        offset += (n - 1) * st[d]!;
        return -st[d]!;
      });
      return [stridedCopy(dev, x!, outs[0]!.shape, strides, offset)];
    },

    fill: (dev, _i, a: { value: number }, outs) => [fill(dev, outs[0]!.shape, outs[0]!.dtype, a.value)],
    fillLike: (dev, _i, a: { value: number }, outs) => [fill(dev, outs[0]!.shape, outs[0]!.dtype, a.value)],
    range: (dev, _i, a: { start: number; step: number; size: number }, outs) => [range(dev, a.size, a.start, a.step, outs[0]!.dtype)],
    eye(dev, _i, a: { n: number; m: number }, outs) {
      const out = fill(dev, outs[0]!.shape, outs[0]!.dtype, 0);
      // the diagonal: elements i * (m + 1)
      const k = Math.min(a.n, a.m);
      if (k > 0) {
        const ones = fill(dev, [k], outs[0]!.dtype, 1);
        copyInto(dev, ones, out, [a.m + 1], 0);
        dev.free(ones.id, 4 * k);
      }
      return [out];
    },
    oneHot(dev, [idx], a: { depth: number }, outs) {
      const o = outs[0]!;
      const out = fill(dev, o.shape, o.dtype, 0);
      const m = sizeOf(idx!.shape);
      if (m === 0 || a.depth === 0) return [out];
      const si = storageType(idx!.dtype, "oneHot");
      const site = callSite();
      const code = dev.check((pos, k) => new IndexError(`index ${k | 0} at position ${pos} is out of range for depth ${a.depth} (found on the GPU; raised at the next read)`, "oneHot", site));
      const b = bindings([
        ["ind", "r", si],
        ["y", "w", storageType(o.dtype)],
        ["err", "w", "atomic<u32>"],
      ]);
      const params = new Params().u32("m", m).u32("depth", a.depth).u32("code", code);
      const one = storageType(o.dtype) === "f32" ? "1.0" : storageType(o.dtype) === "i32" ? "1i" : "1u";
      const body = `  if (i >= p.m) { return; }\n  let k = i32(ind[i]);\n  if (k < 0 || k >= i32(p.depth)) { report(p.code, i, bitcast<u32>(k)); return; }\n  y[i * p.depth + u32(k)] = ${one};`;
      launch(dev, lazy(`oneHot|${si}|${o.dtype}`, () => ({ source: `${b.wgsl}${params.wgsl(3)}${REPORT}\n${linearMain(WG, body)}`, layout: "rwwu", label: "one_hot" })), [idx!.id, out.id, dev.errorBuffer], params, grid(m, WG, dev.limits.maxComputeWorkgroupsPerDimension));
      return [out];
    },

    gather(dev, [x, idx], a: Axis & { wrappedBy?: string }, outs) {
      const n = x!.shape[a.axis]!;
      return [gather(dev, x!, idx!, prod(x!.shape, 0, a.axis), n, prod(x!.shape, a.axis + 1), outs[0]!.shape, axisOutOfRange("gather", idx!.shape, n, a.axis, x!.shape, a.wrappedBy))];
    },
    gatherND(dev, [x, idx], _a, outs) {
      const k = idx!.shape[idx!.shape.length - 1]!;
      const dims = x!.shape.slice(0, k);
      const tuples = idx!.shape.slice(0, -1);
      const site = callSite();
      const outOfRange: OutOfRange = (t, d) =>
        new IndexError(
          `index tuple at position ${positionOf(t, tuples)} of indices (shape ${fmtShape(idx!.shape)}) is out of range: component ${d} must lie in 0..${dims[d]! - 1} for axis ${d} of x (shape ${fmtShape(x!.shape)}) (found on the GPU; raised at the next read)`,
          "gatherND",
          site,
        );
      return [gatherND(dev, x!, idx!, dims, stridesOf(x!.shape).slice(0, k), prod(x!.shape, k), prod(tuples), outs[0]!.shape, outOfRange)];
    },
    scatterAdd(dev, [x, idx, upd], a: Axis) {
      const n = x!.shape[a.axis]!;
      return [scatterAdd(dev, x!, idx!, upd!, prod(x!.shape, 0, a.axis), n, prod(x!.shape, a.axis + 1), axisOutOfRange("scatterAdd", idx!.shape, n, a.axis, x!.shape))];
    },

    gatherElements(dev, [x, idx], a: Axis) {
      return [gatherElementsKernel(dev, x!, idx!, a.axis, elementsOutOfRange("gatherElements", idx!.shape, x!.shape, a.axis))];
    },
    scatterElements(dev, [x, idx, upd], a: Axis & { reduction: Reduction }) {
      return [scatterElementsKernel(dev, x!, idx!, upd!, a.axis, a.reduction, elementsOutOfRange("scatterElements", idx!.shape, x!.shape, a.axis))];
    },
    scatterND(dev, [x, idx, upd], a: { reduction: Reduction }) {
      const site = callSite();
      const xShape = x!.shape;
      const tooFar: OutOfRange = (t, d) =>
        new IndexError(`component ${d} of index tuple ${t} is out of range for axis ${d} of x (shape ${fmtShape(xShape)}, valid 0..${xShape[d]! - 1}) (found on the GPU; raised at the next read)`, "scatterND", site);
      return [scatterNDKernel(dev, x!, idx!, upd!, a.reduction, tooFar)];
    },

    sumToLike(dev, [x, like], _a, outs) {
      const axes = broadcastReductionAxes(like!.shape, x!.shape);
      const o = outs[0]!;
      if (axes.length === 0) return [x!.dtype === o.dtype ? view(x!, o.shape) : cast(dev, view(x!, o.shape), o.dtype)];
      return [view(reduce(dev, x!, axes, "sum", o.dtype), o.shape)];
    },
    dimSize: (dev, [x], a: { axis: number }) => [fill(dev, [], "int32", x!.shape[a.axis]!)],
    // (in a plan: a buffer written once, when the plan is made)
    constant(dev, _i, a: { values: number[] }, outs) {
      const o = outs[0]!;
      const id = dev.alloc(4 * a.values.length);
      dev.write(id, o.dtype === "float32" ? Float32Array.from(a.values) : o.dtype === "int32" ? Int32Array.from(a.values) : Uint32Array.from(a.values, (v) => (o.dtype === "bool" ? (v ? 1 : 0) : v)));
      return [{ id, shape: o.shape, dtype: o.dtype }];
    },
    // (the first numInputs inputs are the function's arguments; the rest its values)
    customGradient: (_dev, inputs, a: { numInputs: number }, outs) => inputs.slice(a.numInputs).map((x, i) => view(x, outs[i]!.shape)),
  },
  // ops that make, move or convert tensors of the host dtypes run their CPU kernel for them
  // (and the element ops with int64 indices)
  ["fill", "fillLike", "range", "eye", "constant", "cast", "reshape", "expandDims", "squeeze", "broadcastTo", "identity", "stopGradient", "dimSize", "gatherElements", "scatterElements", "scatterND"],
);
