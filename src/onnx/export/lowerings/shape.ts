/** ONNX lowerings of the shape, indexing and creation ops. */
import { sizeOf } from "../../../core/shape.js";
import type { OnnxBuilder } from "../builder.js";
import { padIndexMap, type PadMode } from "../../../ops/shape/pad.js";
import { axisOf, castTo, filled, staticShape, storeFloat, to, type Table } from "./common.js";

const INT_MAX = 2 ** 62;

/** Python-style slice bounds as ONNX Slice inputs. */
function sliceInputs(b: OnnxBuilder, begin: (number | null)[], end: (number | null)[], strides: number[]): string[] {
  const starts = begin.map((v, i) => (v === null ? (strides[i]! > 0 ? 0 : INT_MAX) : v));
  const ends = end.map((v, i) => (v === null ? (strides[i]! > 0 ? INT_MAX : -INT_MAX) : v));
  return [b.i64(starts), b.i64(ends), b.i64(starts.map((_, i) => i)), b.i64(strides)];
}

/** The positions a slice selects along one axis of size n (Python semantics). */
function slicePositions(n: number, begin: number | null, end: number | null, step: number): number[] {
  const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
  let s: number, e: number;
  if (step > 0) {
    s = begin === null ? 0 : clamp(begin < 0 ? begin + n : begin, 0, n);
    e = end === null ? n : clamp(end < 0 ? end + n : end, 0, n);
  } else {
    s = begin === null ? n - 1 : clamp(begin < 0 ? begin + n : begin, -1, n - 1);
    e = end === null ? -1 : clamp(end < 0 ? end + n : end, -1, n - 1);
  }
  const out: number[] = [];
  for (let i = s; step > 0 ? i < e : i > e; i += step) out.push(i);
  return out;
}

export const shapeLowerings: Table = {
  identity: (b, [x]) => [b.op1("Identity", [x!])],
  stopGradient: (b, [x]) => [b.op1("Identity", [x!])],
  reshape: (b, [x], n) => {
    const shape = n.attrs.shape as number[];
    const unknown = shape.filter((d) => d < 0).length;
    if (unknown > 1) return b.unsupported(`a reshape to ${JSON.stringify(shape)} has more than one unknown dimension`);
    return [b.op1("Reshape", [x!, b.i64(shape)], shape.includes(0) && unknown === 0 ? { allowzero: 1 } : {})];
  },
  broadcastTo: (b, [x], n) => {
    const shape = (n.attrs.shape as number[]).map((d) => (d < 0 ? 1 : d));
    return [b.op1("Expand", [x!, b.i64(shape)])];
  },
  transpose: (b, [x], n) => [b.op1("Transpose", [x!], { perm: { ints: n.attrs.perm as number[] } })],
  expandDims: (b, [x], n) => [b.op1("Unsqueeze", [x!, b.i64(n.attrs.axes as number[])])],
  squeeze: (b, [x], n) => [b.op1("Squeeze", [x!, b.i64(n.attrs.axes as number[])])],
  cast: (b, [x], n) => {
    const from = n.inputTypes[0]!.dtype;
    const dest = n.attrs.dtype;
    if (dest === "bool" && from !== "bool") {
      // non-zero is true, NaN too (the kernel tests x !== 0)
      return [b.op1("Not", [b.op1("Equal", [x!, b.scalar(0, from)])])];
    }
    return [storeFloat(b, x!, from, dest)];
  },
  concat: (b, ins, n) => [b.op1("Concat", ins, { axis: n.attrs.axis })],
  stack: (b, ins, n) => {
    const ax = b.i64([n.attrs.axis]);
    return [b.op1("Concat", ins.map((x) => b.op1("Unsqueeze", [x, ax])), { axis: n.attrs.axis })];
  },
  unstack: (b, [x], n) => {
    const k = n.outputTypes.length;
    const ax = b.i64([n.attrs.axis]);
    const parts = k === 1 ? [x!] : b.op("Split", [x!, b.i64(new Array(k).fill(1))], { axis: n.attrs.axis }, k);
    return parts.map((p) => b.op1("Squeeze", [p, ax]));
  },
  split: (b, [x], n) => {
    const sizes = n.attrs.sizes as number[];
    if (sizes.length === 1) return [b.op1("Identity", [x!])];
    const unknown = sizes.filter((d) => d < 0).length;
    if (unknown > 1) return b.unsupported(`a split into sizes ${JSON.stringify(sizes)} with more than one unknown size`);
    let split = b.i64(sizes);
    if (unknown === 1) {
      // the unknown size is what the known ones leave of the axis when the graph runs
      const axis = axisOf(n.attrs.axis, n.inputTypes[0]!.shape.length);
      const total = b.op1("Shape", [x!], { start: axis, end: axis + 1 });
      const rest = b.op1("Sub", [total, b.i64([sizes.filter((d) => d >= 0).reduce((a, c) => a + c, 0)])]);
      const k = sizes.indexOf(-1);
      const parts = [...(k > 0 ? [b.i64(sizes.slice(0, k))] : []), rest, ...(k < sizes.length - 1 ? [b.i64(sizes.slice(k + 1))] : [])];
      split = b.op1("Concat", parts, { axis: 0 });
    }
    return b.op("Split", [x!, split], { axis: n.attrs.axis }, sizes.length);
  },
  slice: (b, [x], n) => [b.op1("Slice", [x!, ...sliceInputs(b, n.attrs.begin, n.attrs.end, n.attrs.strides)])],
  sliceGrad: (b, [dy], n) => {
    // dy scattered into zeros of the input's shape at the positions the slice selected
    const shape = n.attrs.shape as number[];
    if (!staticShape(shape)) return b.unsupported(`the input's shape ${JSON.stringify(shape)} has unknown dims`);
    const per = shape.map((d, i) => slicePositions(d, n.attrs.begin[i], n.attrs.end[i], n.attrs.strides[i]));
    const count = per.reduce((a, p) => a * p.length, 1);
    const dtype = n.outputTypes[0]!.dtype;
    const zeros = filled(b, b.i64(shape), 0, dtype);
    if (count === 0) return [zeros];
    const idx: number[] = [];
    const cur = new Array(shape.length).fill(0);
    const walk = (axis: number): void => {
      if (axis === shape.length) return void idx.push(...cur);
      for (const p of per[axis]!) {
        cur[axis] = p;
        walk(axis + 1);
      }
    };
    walk(0);
    const indices = b.constant(idx, "int64", [count, shape.length]);
    return [b.op1("ScatterND", [zeros, indices, b.op1("Reshape", [dy!, b.i64([count])])])];
  },
  gather: (b, [x, i], n) => [b.op1("Gather", [x!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64")], { axis: n.attrs.axis })],
  gatherND: (b, [x, i], n) => [b.op1("GatherND", [x!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64")])],
  scatterAdd: (b, [x, i, u], n) => {
    // updates added at the indices along `axis`: ScatterND (reduction add) with the axis moved first
    const rank = n.inputTypes[0]!.shape.length;
    const axis = axisOf(n.attrs.axis, rank);
    const idxRank = n.inputTypes[1]!.shape.length;
    const idx = b.op1("Unsqueeze", [castTo(b, i!, n.inputTypes[1]!.dtype, "int64"), b.i64([-1])]);
    if (axis === 0) return [b.op1("ScatterND", [x!, idx, u!], { reduction: "add" })];
    const perm = [axis, ...Array.from({ length: rank }, (_, k) => k).filter((k) => k !== axis)];
    const inv = perm.map((_, k) => perm.indexOf(k));
    // updates: [x dims before axis, idx dims, x dims after axis] -> [idx dims, before, after]
    const uRank = rank - 1 + idxRank;
    const uPerm = [...Array.from({ length: idxRank }, (_, k) => axis + k), ...Array.from({ length: axis }, (_, k) => k), ...Array.from({ length: uRank - axis - idxRank }, (_, k) => axis + idxRank + k)];
    const xt = b.op1("Transpose", [x!], { perm: { ints: perm } });
    const ut = b.op1("Transpose", [u!], { perm: { ints: uPerm } });
    return [b.op1("Transpose", [b.op1("ScatterND", [xt, idx, ut], { reduction: "add" })], { perm: { ints: inv } })];
  },
  gatherElements: (b, [x, i], n) => [b.op1("GatherElements", [x!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64")], { axis: n.attrs.axis })],
  scatterElements: (b, [x, i, u], n) => [
    b.op1("ScatterElements", [x!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64"), u!], { axis: n.attrs.axis, reduction: n.attrs.reduction }),
  ],
  scatterND: (b, [x, i, u], n) => [b.op1("ScatterND", [x!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64"), u!], { reduction: n.attrs.reduction })],
  pad: (b, [x], n) => {
    const p = n.attrs.paddings as [number, number][];
    const mode = n.attrs.mode as PadMode;
    const dtype = n.inputTypes[0]!.dtype;
    if (mode === "constant") {
      const pads = b.i64([...p.map((q) => q[0]), ...p.map((q) => q[1])]);
      return [b.op1("Pad", [x!, pads, b.scalar(n.attrs.value, dtype)], { mode })];
    }
    // reflect, symmetric and edge: a gather along each padded axis of the source index of every output position
    let v = x!;
    p.forEach(([before, after], axis) => {
      if (before === 0 && after === 0) return;
      const size = n.inputTypes[0]!.shape[axis]!;
      if (size < 0) b.unsupported(`${mode} padding of axis ${axis}, whose size is unknown`);
      const idx = Array.from(padIndexMap(mode, size, before, after));
      v = b.op1("Gather", [v, b.constant(idx, "int64", [idx.length])], { axis });
    });
    return [v];
  },
  tile: (b, [x], n) => {
    // (reps longer than the rank tile new leading axes; shorter reps leave the leading axes alone)
    const reps = n.attrs.reps as number[];
    const rank = n.inputTypes[0]!.shape.length;
    const extra = reps.length - rank;
    const v = extra > 0 ? b.op1("Unsqueeze", [x!, b.i64(Array.from({ length: extra }, (_, i) => i))]) : x!;
    const r = extra < 0 ? [...new Array(-extra).fill(1), ...reps] : reps;
    return [b.op1("Tile", [v, b.i64(r)])];
  },
  flip: (b, [x], n) => {
    const axes = n.attrs.axes as number[];
    if (axes.length === 0) return [b.op1("Identity", [x!])];
    return [b.op1("Slice", [x!, b.i64(axes.map(() => -1)), b.i64(axes.map(() => -INT_MAX)), b.i64(axes), b.i64(axes.map(() => -1))])];
  },
  dimSize: (b, [x], n) => {
    const a = n.attrs.axis as number;
    const s = b.op1("Shape", [x!], { start: a, end: a + 1 });
    return [castTo(b, b.op1("Squeeze", [s, b.i64([0])]), "int64", n.outputTypes[0]!.dtype)];
  },
  // iteration stacks are tensors [rows, ...rowShape]
  emptyStack: (b, [like], n) => {
    const shape = b.op1("Concat", [b.i64([0]), b.op1("Shape", [like!])], { axis: 0 });
    return [filled(b, shape, 0, n.outputTypes[0]!.dtype)];
  },
  stackPush: (b, [s, row]) => [b.op1("Concat", [s!, b.op1("Unsqueeze", [row!, b.i64([0])])], { axis: 0 })],
  stackPop: (b, [s]) => {
    const rest = b.op1("Slice", [s!, b.i64([0]), b.i64([-1]), b.i64([0])]);
    return [rest, b.op1("Gather", [s!, b.scalar(-1, "int64")], { axis: 0 })];
  },
  stackRead: (b, [s, i], n) => [b.op1("Gather", [s!, castTo(b, i!, n.inputTypes[1]!.dtype, "int64")], { axis: 0 })],
  // creation
  fill: (b, _ins, n) => {
    const shape = n.attrs.shape as number[];
    return [b.constant(new Array(sizeOf(shape)).fill(n.attrs.value), n.attrs.dtype, shape)];
  },
  fillLike: (b, [x], n) => [filled(b, b.op1("Shape", [x!]), n.attrs.value, n.attrs.dtype)],
  constant: (b, _ins, n) => [b.constant(n.attrs.values, n.attrs.dtype, n.attrs.shape)],
  range: (b, _ins, n) => {
    const { start, step, size, dtype } = n.attrs;
    return [b.constant(Array.from({ length: size }, (_, i) => start + i * step), dtype, [size])];
  },
  eye: (b, _ins, n) => {
    const { n: rows, m, dtype } = n.attrs;
    return [b.constant(Array.from({ length: rows * m }, (_, k) => (Math.floor(k / m) === k % m ? 1 : 0)), dtype, [rows, m])];
  },
  oneHot: (b, [i], n) => {
    // row r, column j is 1 where indices[r] == j
    const { depth, dtype } = n.attrs;
    const idx = b.op1("Unsqueeze", [castTo(b, i!, n.inputTypes[0]!.dtype, "int64"), b.i64([-1])]);
    const cols = b.constant(Array.from({ length: depth }, (_, j) => j), "int64", [depth]);
    return [b.cast(b.op1("Equal", [idx, cols]), dtype)];
  },
};

export { to };
