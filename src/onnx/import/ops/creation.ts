/** ONNX ops that make tensors: Constant, ConstantOfShape, Range, OneHot, EyeLike, Trilu, CumSum, CumProd. */
import type { Tensor } from "../../../core/tensor.js";
import { isFloat, type DType } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import { axisOf } from "./shape.js";

onnxOp("Constant", {
  run(n) {
    const t = n.tensor("value");
    if (t !== undefined) return t;
    const f = n.float("value_float");
    if (f !== undefined) return ops.scalar(f, "float32");
    const fs = n.floats("value_floats");
    if (fs !== undefined) return ops.tensor(fs, "float32", [fs.length]);
    const i = n.int("value_int");
    if (i !== undefined) return ops.scalar(i, "int64");
    const is = n.ints("value_ints");
    if (is !== undefined) return ops.tensor(is, "int64", [is.length]);
    if (n.hasAttr("value_string") || n.hasAttr("value_strings")) throw n.unsupported("string constants are not supported (Stagecraft has no string dtype)");
    if (n.hasAttr("sparse_value")) throw n.unsupported("sparse constants are not supported");
    throw n.fail("has no value attribute");
  },
});

onnxOp("ConstantOfShape", {
  constInputs: [0],
  run(n) {
    const shape = n.knownInts(0, "shape");
    n.checkShape(shape);
    const v = n.tensor("value");
    if (v === undefined) return ops.full(shape, 0, "float32");
    if (v.size !== 1) throw n.fail(`value must hold one element, got shape [${v.shape.join(", ")}]`);
    const x = v.dataSync()[0]!;
    return ops.full(shape, v.dtype === "bool" ? x !== 0 : x, v.dtype);
  },
});

onnxOp("Range", {
  constInputs: [0, 1, 2],
  run(n) {
    const start = n.known(0, "start");
    const [s] = n.knownNumbers(0, "start");
    const [limit] = n.knownNumbers(1, "limit");
    const [delta] = n.knownNumbers(2, "delta");
    if (delta === 0) throw n.fail("delta is 0");
    const count = Math.max(Math.ceil((limit! - s!) / delta!), 0);
    n.checkShape([count]);
    const dtype = start.dtype;
    const values = Array.from({ length: count }, (_, i) => s! + i * delta!);
    return ops.tensor(values, dtype, [count]);
  },
});

onnxOp("OneHot", {
  constInputs: [1],
  run(n) {
    const indices = n.input(0);
    const [depthValue] = n.knownNumbers(1, "depth");
    const depth = Math.trunc(depthValue!);
    if (!(depth > 0)) throw n.fail(`depth must be positive, got ${depthValue}`);
    n.checkShape([...indices.shape, depth]);
    const values = n.input(2);
    const r = indices.rank + 1;
    const axis = axisOf(n, n.int("axis", -1), r);
    // Negative indices count from the end; out-of-range ones give an all-off row.
    const idx = ops.cast(indices, "float64");
    const wrapped = ops.where(ops.less(idx, 0), ops.add(idx, depth), idx);
    const shape = Array.from({ length: r }, (_, d) => (d === axis ? depth : 1));
    const positions = ops.reshape(ops.arange(0, depth, 1, "float64"), shape);
    const hot = ops.equal(ops.expandDims(wrapped, axis), positions);
    const off = ops.gather(values, ops.scalar(0, "int32"), 0);
    const on = ops.gather(values, ops.scalar(1, "int32"), 0);
    return ops.where(hot, on, off);
  },
});

onnxOp("EyeLike", {
  run(n) {
    const x = n.input(0);
    if (x.rank !== 2) throw n.fail(`needs a rank-2 input, got shape [${x.shape.join(", ")}]`);
    const dtype: DType = n.hasAttr("dtype") ? n.dtypeAttr("dtype") : x.dtype;
    const k = n.int("k", 0);
    const [rows, cols] = x.shape as [number, number];
    const values = new Array<number>(rows * cols).fill(0);
    for (let i = 0; i < rows; i++) if (i + k >= 0 && i + k < cols) values[i * cols + i + k] = 1;
    return ops.tensor(values, dtype, [rows, cols]);
  },
});

onnxOp("Trilu", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    if (x.rank < 2) throw n.fail(`needs rank 2 or more, got shape [${x.shape.join(", ")}]`);
    const k = n.hasInput(1) ? n.knownInts(1, "k")[0]! : 0;
    const upper = n.int("upper", 1) !== 0;
    const rows = x.shape[x.rank - 2]!;
    const cols = x.shape[x.rank - 1]!;
    const keep = new Array<boolean>(rows * cols);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) keep[i * cols + j] = upper ? j - i >= k : j - i <= k;
    const mask = ops.tensor(keep, "bool", [rows, cols]);
    return ops.where(mask, x, ops.zerosLike(x));
  },
});

onnxOp("CumSum", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const [axis] = n.knownInts(1, "axis");
    const a = axisOf(n, axis!, x.rank);
    return ops.cumsum(x, a, { exclusive: n.int("exclusive", 0) !== 0, reverse: n.int("reverse", 0) !== 0 });
  },
});

/**
 * CumProd as a parallel prefix product (Hillis-Steele): log2(n) steps of y *= y shifted by 2^k
 * along the axis (ones shifted in). Only multiplications, so zeros, negatives and integers are
 * exact and the gradient is the product rule's, with no division by x.
 */
onnxOp("CumProd", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    if (x.dtype === "bool") throw n.fail("does not take bool inputs");
    const [axis] = n.knownInts(1, "axis");
    const a = axisOf(n, axis!, x.rank);
    const L = x.shape[a]!;
    const reverse = n.int("reverse", 0) !== 0;
    /** y shifted by s towards the end of the axis, ones shifted in. */
    const shift = (y: Tensor, s: number): Tensor =>
      ops.pad(ops.slice(y, y.shape.map(() => 0), y.shape.map((d, i) => (i === a ? L - s : d))), y.shape.map((_, i) => (i === a ? [s, 0] : [0, 0]) as [number, number]), 1);
    let y = reverse ? ops.flip(x, a) : x;
    if (n.int("exclusive", 0) !== 0 && L > 0) y = shift(y, 1);
    for (let s = 1; s < L; s *= 2) y = ops.mul(y, shift(y, s));
    return reverse ? ops.flip(y, a) : y === x ? ops.identity(x) : y;
  },
});

/** The dtype a handler should compute a float result in (float16 computes in float32). */
export function computeDtype(t: Tensor): DType {
  return isFloat(t.dtype) ? t.dtype : "float32";
}
