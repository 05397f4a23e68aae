/**
 * ONNX shape and data-movement ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat,
 * Split, Slice, Gather*, Expand, Tile, Pad, Shape, Size, DepthToSpace, SpaceToDepth. Inputs
 * that set shapes or axes are read as values known at trace time (constInputs).
 */
import { Tensor } from "../../../core/tensor.js";
import { broadcastShapes } from "../../../core/shape.js";
import { IndexError } from "../../../core/errors.js";
import { indexRangeMessage } from "../../../ops/shape/common.js";
import * as ops from "../../../ops/index.js";
import { applyOp1 } from "../../../ops/registry.js";
import { gatherOp } from "../../../ops/shape/gather.js";
import { dimSizeOp } from "../../../ops/shape/dim-size.js";
import type { DType } from "../../../core/dtype.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

/** A non-negative axis of a tensor of rank r (ONNX allows -r..r-1). */
export function axisOf(n: NodeContext, axis: number, r: number, what = "axis"): number {
  if (!Number.isInteger(axis) || axis < -r || axis >= r) throw n.fail(`${what} ${axis} is out of range for rank ${r}`);
  return axis < 0 ? axis + r : axis;
}

/** A concrete int64 tensor of values (shapes, sizes: what Shape and Size return). */
export function int64Tensor(values: number[], shape = [values.length]): Tensor {
  return ops.tensor(values, "int64", shape);
}

onnxOp("Reshape", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const target = n.opset < 5 ? n.ints("shape", []) : n.knownInts(1, "shape");
    if (target.length > 64) throw n.fail(`shape has ${target.length} dimensions`);
    const allowZero = n.int("allowzero", 0) !== 0;
    const shape = target.map((d, i) => {
      if (d === 0 && !allowZero) {
        if (i >= x.rank) throw n.fail(`shape entry ${i} is 0 (copy the input's dim) but the input has rank ${x.rank}`);
        return x.shape[i]!;
      }
      return d;
    });
    return ops.reshape(x, shape);
  },
});

onnxOp("Flatten", {
  run(n) {
    const x = n.input(0);
    const axis = n.int("axis", 1);
    const a = axis < 0 ? axis + x.rank : axis;
    if (a < 0 || a > x.rank) throw n.fail(`axis ${axis} is out of range for rank ${x.rank}`);
    const size = (dims: readonly number[]): number => dims.reduce((p, d) => p * d, 1);
    return ops.reshape(x, [size(x.shape.slice(0, a)), size(x.shape.slice(a))]);
  },
});

onnxOp("Transpose", {
  run(n) {
    const x = n.input(0);
    const perm = n.ints("perm") ?? [...Array(x.rank).keys()].reverse();
    return ops.transpose(x, perm);
  },
});

onnxOp("Squeeze", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const axes = n.opset < 13 ? n.ints("axes") : n.knownInts(1, "axes", null);
    if (axes === null || axes === undefined) return ops.squeeze(x, x.shape.flatMap((d, i) => (d === 1 ? [i] : [])));
    return ops.squeeze(
      x,
      axes.map((a) => axisOf(n, a, x.rank)),
    );
  },
});

onnxOp("Unsqueeze", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const axes = n.opset < 13 ? n.ints("axes", []) : n.knownInts(1, "axes");
    const r = x.rank + axes.length;
    const norm = axes.map((a) => axisOf(n, a, r)).sort((p, q) => p - q);
    if (new Set(norm).size !== norm.length) throw n.fail(`axes [${axes.join(", ")}] repeat an axis`);
    const shape: number[] = [];
    let k = 0;
    for (let i = 0; i < r; i++) shape.push(norm.includes(i) ? 1 : x.shape[k++]!);
    return ops.reshape(x, shape);
  },
});

onnxOp("Concat", {
  run(n) {
    const xs = n.inputsFrom(0);
    if (xs.length === 0) throw n.fail("needs at least one input");
    const axis = n.int("axis");
    if (axis === undefined) throw n.fail("needs the attribute axis");
    const a = axisOf(n, axis, xs[0]!.rank);
    if (xs.length === 1) return ops.identity(xs[0]!);
    return ops.concat(xs, a);
  },
});

onnxOp("Split", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", 0), x.rank);
    const dim = x.shape[axis]!;
    let sizes = n.opset < 13 ? n.ints("split") : n.knownInts(1, "split", null) ?? undefined;
    if (sizes === undefined) {
      const outputs = n.node.output.length;
      const num = n.int("num_outputs") ?? outputs;
      if (num < 1) throw n.fail(`num_outputs must be positive, got ${num}`);
      const chunk = Math.ceil(dim / num);
      sizes = [];
      for (let left = dim, i = 0; i < num; i++, left -= chunk) sizes.push(Math.max(0, Math.min(chunk, left)));
      if (n.int("num_outputs") === undefined && dim % num !== 0) throw n.fail(`cannot split axis ${axis} of size ${dim} into ${num} equal pieces`);
    }
    return ops.split(x, sizes, axis);
  },
});

onnxOp("Slice", {
  constInputs: [1, 2, 3, 4],
  run(n) {
    const x = n.input(0);
    const starts = n.opset < 10 ? n.ints("starts", []) : n.knownInts(1, "starts");
    const ends = n.opset < 10 ? n.ints("ends", []) : n.knownInts(2, "ends");
    const axes = (n.opset < 10 ? n.ints("axes") : n.knownInts(3, "axes", null)) ?? starts.map((_, i) => i);
    const steps = (n.opset < 10 ? undefined : n.knownInts(4, "steps", null)) ?? starts.map(() => 1);
    if (starts.length !== ends.length || axes.length !== starts.length || steps.length !== starts.length) {
      throw n.fail(`starts, ends, axes and steps must have one entry per sliced axis (got ${starts.length}, ${ends.length}, ${axes.length}, ${steps.length})`);
    }
    const begin: (number | null)[] = x.shape.map(() => null);
    const end: (number | null)[] = x.shape.map(() => null);
    const strides: number[] = x.shape.map(() => 1);
    axes.forEach((axis, i) => {
      const a = axisOf(n, axis, x.rank);
      if (steps[i] === 0) throw n.fail("a step is 0");
      const dim = x.shape[a]!;
      // ONNX clamps like Python; bounds as large as int64's are "to the end".
      begin[a] = clampBound(starts[i]!, dim);
      end[a] = clampBound(ends[i]!, dim);
      strides[a] = steps[i]!;
    });
    return ops.slice(x, begin, end, strides);
  },
});

/** A slice bound as Python would read it, with huge values (INT64_MAX/MIN) brought into range. */
function clampBound(b: number, dim: number): number {
  if (b > dim) return dim;
  if (b < -dim - 1) return -dim - 1;
  return b;
}

/**
 * The sizes of axes `axes` of `x` as a 1-D tensor of `dtype`: constants where known while
 * tracing, the run-time size (dimSize) of an axis that is unknown (-1 in a traced shape: a
 * symbolic dim), so negative indices never wrap by that -1.
 */
function axisSizes(x: Tensor, axes: readonly number[], dtype: DType): Tensor {
  if (axes.every((a) => x.shape[a]! >= 0)) return ops.tensor(axes.map((a) => x.shape[a]!), dtype);
  return ops.stack(axes.map((a) => (x.shape[a]! >= 0 ? ops.scalar(x.shape[a]!, dtype) : ops.cast(applyOp1(dimSizeOp, [x], { axis: a }), dtype))));
}

/** The size of axis `axis` of `x`: a number where known while tracing, else a run-time scalar of `dtype`. */
function axisSize(x: Tensor, axis: number, dtype: DType): number | Tensor {
  const d = x.shape[axis]!;
  return d >= 0 ? d : ops.cast(applyOp1(dimSizeOp, [x], { axis }), dtype);
}

/**
 * Indices into axis `axis` of `x` with ONNX's negative entries (counting from the end of the
 * axis) made positive; an axis of unknown size wraps by its run-time size.
 */
export function wrapIndices(idx: Tensor, x: Tensor, axis: number): Tensor {
  const known = idx.isSymbolic ? null : idx.dataSync();
  if (known !== null && known.every((v) => v >= 0)) return idx;
  return ops.where(ops.less(idx, 0), ops.add(idx, axisSize(x, axis, idx.dtype)), idx);
}

/**
 * Gather's indices in 0..dim-1 for the kernel: ONNX's -dim..-1 wrapped, and any index out of
 * ONNX's range -dim..dim-1 named as the model wrote it (not as it would be after wrapping).
 * Indices known when traced are checked here, with ONNX's range in the message; run-time ones
 * wrap only -dim..-1, so an out-of-range one reaches the kernel's check unchanged (the gather
 * is told so, `wrappedBy`, and states ONNX's range and the node).
 */
function gatherIndices(n: NodeContext, idx: Tensor, x: Tensor, axis: number): Tensor {
  const dim = x.shape[axis]!;
  if (dim < 0 || idx.isSymbolic) {
    // (an axis of unknown size, a symbolic dim: its run-time size; checked by the kernel)
    const size = axisSize(x, axis, idx.dtype);
    return ops.where(ops.logicalAnd(ops.less(idx, 0), ops.greaterEqual(idx, typeof size === "number" ? -size : ops.neg(size))), ops.add(idx, size), idx);
  }
  const xShape = x.shape;
  const known = idx.dataSync();
  let negative = false;
  for (let j = 0; j < known.length; j++) {
    const k = Number(known[j]);
    if (k < -dim || k >= dim) throw new IndexError(indexRangeMessage(k, j, idx.shape as number[], dim, axis, xShape as number[], true), "gather");
    if (k < 0) negative = true;
  }
  return negative ? ops.where(ops.less(idx, 0), ops.add(idx, dim), idx) : idx;
}

onnxOp("Gather", {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", 0), x.rank);
    const idx = n.input(1);
    const wrapped = gatherIndices(n, idx, x, axis);
    // indices or axis size decided at run time: the kernel's range check names ONNX's range and this node
    if (idx.isSymbolic || x.shape[axis]! < 0) return applyOp1(gatherOp, [x, wrapped], { axis, wrappedBy: `ONNX ${n.label}` });
    return ops.gather(x, wrapped, axis);
  },
});

onnxOp("GatherND", {
  run(n) {
    const x = n.input(0);
    const idx = n.input(1);
    const b = n.int("batch_dims", 0);
    const m = idx.shape[idx.rank - 1]!;
    if (b < 0 || b >= Math.min(x.rank, idx.rank)) throw n.fail(`batch_dims ${b} must be in [0, ${Math.min(x.rank, idx.rank) - 1}]`);
    if (b + m > x.rank) throw n.fail(`indices address ${m} axes after ${b} batch axes of data of rank ${x.rank}`);
    for (let d = 0; d < b; d++) if (x.shape[d] !== idx.shape[d]) throw n.fail(`batch axis ${d} has size ${x.shape[d]} in data but ${idx.shape[d]} in indices`);
    // wrap negative indices per indexed axis
    const dims = axisSizes(x, Array.from({ length: m }, (_, k) => b + k), idx.dtype);
    const wrapped = ops.where(ops.less(idx, 0), ops.add(idx, dims), idx);
    if (b === 0) return ops.gatherND(x, wrapped);
    // Batch axes: flatten them into one, prefix each index tuple with its batch number, gather
    // from the flattened data, and give the batch axes back.
    const batch = x.shape.slice(0, b) as number[];
    const B = batch.reduce((p, q) => p * q, 1);
    const inner = idx.shape.slice(b, -1) as number[];
    const tuples = ops.reshape(wrapped, [B, ...inner, m]);
    const batchNo = ops.broadcastTo(ops.reshape(ops.cast(ops.arange(0, B, 1, "int32"), idx.dtype), [B, ...inner.map(() => 1), 1]), [B, ...inner, 1]);
    const y = ops.gatherND(ops.reshape(x, [B, ...(x.shape.slice(b) as number[])]), ops.concat([batchNo, tuples], -1));
    return ops.reshape(y, [...batch, ...(y.shape.slice(1) as number[])]);
  },
});

onnxOp("Expand", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const shape = n.knownInts(1, "shape");
    n.checkShape(shape, "the shape input");
    const out = broadcastShapes("Expand", x.shape, shape);
    n.checkShape(out);
    return ops.broadcastTo(x, out);
  },
});

onnxOp("Tile", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const reps = n.knownInts(1, "repeats");
    if (reps.length !== x.rank) throw n.fail(`repeats has ${reps.length} entries for an input of rank ${x.rank}`);
    n.checkShape(x.shape.map((d, i) => d * reps[i]!));
    return ops.tile(x, reps);
  },
});

/**
 * Pad mode "wrap": output position i of a padded axis reads input position (i - begin) mod size,
 * one gather per padded axis (negative pads crop the same way), so it differentiates as gathers.
 */
function wrapPad(n: NodeContext, x: Tensor, pairs: [number, number][]): Tensor {
  let y = x;
  pairs.forEach(([b, e], axis) => {
    if (b === 0 && e === 0) return;
    const size = x.shape[axis]!;
    const length = size + b + e;
    if (size === 0 && length > 0) throw n.fail(`cannot wrap-pad axis ${axis} of size 0`);
    const idx = Array.from({ length }, (_, i) => (((i - b) % size) + size) % size);
    y = ops.gather(y, ops.tensor(idx, "int32", [length]), axis);
  });
  return y === x ? ops.identity(x) : y;
}

onnxOp("Pad", {
  constInputs: [1, 2, 3],
  run(n) {
    const x = n.input(0);
    const r = x.rank;
    const pads = n.opset < 11 ? n.ints("pads", []) : n.knownInts(1, "pads");
    const value = n.opset < 11 ? n.float("value", 0) : n.hasInput(2) ? Number(n.known(2, "constant_value").dataSync()[0] ?? 0) : 0;
    const axes = (n.opset >= 18 ? n.knownInts(3, "axes", null) : null) ?? [...Array(r).keys()];
    if (pads.length !== 2 * axes.length) throw n.fail(`pads has ${pads.length} entries, expected ${2 * axes.length}`);
    const pairs: [number, number][] = x.shape.map(() => [0, 0]);
    axes.forEach((axis, i) => {
      pairs[axisOf(n, axis, r)] = [pads[i]!, pads[i + axes.length]!];
    });
    const modeName = n.string("mode", "constant");
    n.checkShape(x.shape.map((d, i) => Math.max(0, d + pairs[i]![0] + pairs[i]![1])));
    if (modeName === "wrap") return wrapPad(n, x, pairs);
    const mode = modeName === "constant" ? "constant" : modeName === "reflect" ? "reflect" : modeName === "edge" ? "edge" : null;
    if (mode === null) throw n.fail(`unknown mode ${JSON.stringify(modeName)}`);
    // Negative pads crop: slice first, then pad with the non-negative parts.
    let y = x;
    if (pairs.some(([b, e]) => b < 0 || e < 0)) {
      y = ops.slice(
        x,
        pairs.map(([b]) => Math.max(0, -b)),
        pairs.map(([, e], d) => x.shape[d]! - Math.max(0, -e)),
      );
    }
    const pos = pairs.map(([b, e]) => [Math.max(0, b), Math.max(0, e)] as [number, number]);
    if (pos.every(([b, e]) => b === 0 && e === 0)) return y === x ? ops.identity(x) : y;
    return ops.pad(y, pos, x.dtype === "bool" ? value !== 0 : value, mode);
  },
});

onnxOp("Shape", {
  run(n) {
    const x = n.input(0);
    const r = x.rank;
    let start = n.int("start", 0);
    let end = n.int("end", r);
    start = Math.min(Math.max(start < 0 ? start + r : start, 0), r);
    end = Math.min(Math.max(end < 0 ? end + r : end, 0), r);
    return int64Tensor(x.shape.slice(start, Math.max(start, end)));
  },
});

onnxOp("Size", { run: (n) => int64Tensor([n.input(0).size], []) });

onnxOp("DepthToSpace", {
  run(n) {
    const x = n.input(0);
    const b = n.int("blocksize");
    if (b === undefined || b < 1) throw n.fail("needs a positive blocksize");
    const [N, C, H, W] = x.shape as [number, number, number, number];
    if (x.rank !== 4 || C % (b * b) !== 0) throw n.fail(`needs a rank-4 input whose channels divide by blocksize^2, got shape [${x.shape.join(", ")}]`);
    const c = C / (b * b);
    const dcr = n.string("mode", "DCR") === "DCR";
    const t = dcr ? ops.transpose(ops.reshape(x, [N, b, b, c, H, W]), [0, 3, 4, 1, 5, 2]) : ops.transpose(ops.reshape(x, [N, c, b, b, H, W]), [0, 1, 4, 2, 5, 3]);
    return ops.reshape(t, [N, c, H * b, W * b]);
  },
});

onnxOp("SpaceToDepth", {
  run(n) {
    const x = n.input(0);
    const b = n.int("blocksize");
    if (b === undefined || b < 1) throw n.fail("needs a positive blocksize");
    const [N, C, H, W] = x.shape as [number, number, number, number];
    if (x.rank !== 4 || H % b !== 0 || W % b !== 0) throw n.fail(`needs a rank-4 input whose height and width divide by blocksize, got shape [${x.shape.join(", ")}]`);
    const t = ops.transpose(ops.reshape(x, [N, C, H / b, b, W / b, b]), [0, 3, 5, 1, 2, 4]);
    return ops.reshape(t, [N, C * b * b, H / b, W / b]);
  },
});

onnxOp("GatherElements", {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", 0), x.rank);
    return ops.gatherElements(x, wrapIndices(n.input(1), x, axis), axis);
  },
});

/** The reduction attribute of ScatterElements / ScatterND ("none" by default). */
function reductionOf(n: NodeContext): ops.ScatterReduction {
  const r = n.string("reduction", "none");
  if (r !== "none" && r !== "add" && r !== "mul" && r !== "max" && r !== "min") throw n.fail(`unknown reduction ${JSON.stringify(r)}`);
  return r;
}

onnxOp(["ScatterElements", "Scatter"], {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", 0), x.rank);
    return ops.scatterElements(x, wrapIndices(n.input(1), x, axis), n.input(2), axis, reductionOf(n));
  },
});

onnxOp("ScatterND", {
  run(n) {
    const x = n.input(0);
    const idx = n.input(1);
    const k = idx.shape[idx.rank - 1]!;
    const dims = axisSizes(x, Array.from({ length: k }, (_, a) => a), idx.dtype);
    return ops.scatterND(x, ops.where(ops.less(idx, 0), ops.add(idx, dims), idx), n.input(2), reductionOf(n));
  },
});

/** ai.onnx.ml ArrayFeatureExtractor: the given entries of the last axis (a 1-D input as one row; gather checks the indices). */
onnxOp(
  "ArrayFeatureExtractor",
  {
    run(n) {
      const x = n.input(0);
      const idx = n.input(1);
      if (x.rank === 0) throw n.fail("the input must have at least one axis");
      const rows = x.rank === 1 ? ops.reshape(x, [1, x.shape[0]!]) : x;
      const last = rows.rank - 1;
      const flat = ops.reshape(idx, [idx.size]);
      return ops.gather(rows, flat, last);
    },
  },
  "ai.onnx.ml",
);

/**
 * TensorScatter (a KV-cache write): present = past_cache with update's entries along `axis`
 * written at write_indices[b] + j for batch entry b (mod the cache length in circular mode):
 * one scatterElements, so both the cache and the update get gradients.
 */
onnxOp("TensorScatter", {
  run(n) {
    const past = n.input(0);
    const update = n.input(1);
    const r = past.rank;
    const axis = axisOf(n, n.int("axis", -2), r);
    if (axis === 0) throw n.fail("axis cannot be the batch axis 0");
    const mode = n.string("mode", "linear");
    if (mode !== "linear" && mode !== "circular") throw n.fail(`unknown mode ${JSON.stringify(mode)} (linear or circular)`);
    if (update.rank !== r || update.shape.some((d, i) => i !== axis && d !== past.shape[i])) throw n.fail(`update [${update.shape.join(", ")}] must match past_cache [${past.shape.join(", ")}] except along axis ${axis}`);
    const [B, S, s] = [past.shape[0]!, past.shape[axis]!, update.shape[axis]!];
    if (s > S) throw n.fail(`the update's ${s} entries along axis ${axis} do not fit the cache's ${S}`);
    const w = n.optional(2);
    const start = w === null ? ops.full([B, 1], 0, "int64") : ops.reshape(ops.cast(w, "int64"), [B, 1]);
    let idx = ops.add(start, ops.reshape(ops.arange(0, s, 1, "int64"), [1, s])); // [B, s]
    if (mode === "circular") idx = ops.mod(idx, S);
    const shape = past.shape.map((_, i) => (i === 0 ? B : i === axis ? s : 1));
    const full = ops.broadcastTo(ops.reshape(idx, shape), update.shape as number[]);
    return ops.scatterElements(past, full, update, axis);
  },
});
