/**
 * ONNX linear quantization (integer types only; float8 and int4 have no Stagecraft dtype):
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv,
 * MatMulInteger, ConvInteger. Quantized values are rounded half to even and saturated to the
 * target type; integer products are computed exactly in float64.
 */
import type { Tensor } from "../../../core/tensor.js";
import { dtypeRange, type DType } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { axisOf } from "./shape.js";
import { convolve } from "./nn.js";

/** A scale or zero point shaped to broadcast against x: scalar, per-axis [C], or blocked. */
function along(n: NodeContext, p: Tensor, x: Tensor): Tensor {
  if (p.rank === 0 || p.size === 1) return ops.reshape(p, []);
  const axis = axisOf(n, n.int("axis", 1), x.rank);
  const block = n.int("block_size", 0);
  if (block > 0) {
    // Blocked: p has x's shape except along axis, where it has ceil(dim / block) entries.
    const expanded = ops.reshape(ops.broadcastTo(ops.expandDims(p, axis + 1), [...p.shape.slice(0, axis + 1), block, ...p.shape.slice(axis + 1)]), [
      ...p.shape.slice(0, axis),
      p.shape[axis]! * block,
      ...p.shape.slice(axis + 1),
    ]);
    return ops.slice(expanded, x.shape.map(() => 0), x.shape as number[]);
  }
  if (p.rank !== 1 || p.size !== x.shape[axis]) throw n.fail(`a per-axis scale or zero point must have ${x.shape[axis]} entries (axis ${axis}), got shape [${p.shape.join(", ")}]`);
  return ops.reshape(p, x.shape.map((d, i) => (i === axis ? d : 1)));
}

/** round-half-even(v) saturated to `dtype`'s range, as `dtype`. */
function saturate(v: Tensor, dtype: DType): Tensor {
  const [lo, hi] = dtypeRange(dtype);
  return ops.cast(ops.clip(ops.round(v), lo, hi), dtype);
}

/** saturate(round(x / scale) + zp): the division in x's precision (float16 in float32), as ONNX defines it. */
function quantize(x: Tensor, scale: Tensor, zp: Tensor | null, dtype: DType): Tensor {
  const f: DType = x.dtype === "float64" ? "float64" : "float32";
  const q = ops.round(ops.div(ops.cast(x, f), ops.cast(scale, f)));
  return saturate(zp === null ? q : ops.add(ops.cast(q, "float64"), ops.cast(zp, "float64")), dtype);
}

function dequantize(x: Tensor, scale: Tensor, zp: Tensor | null, dtype: DType): Tensor {
  const centred = zp === null ? ops.cast(x, "float64") : ops.sub(ops.cast(x, "float64"), ops.cast(zp, "float64"));
  return ops.cast(ops.mul(centred, ops.cast(scale, "float64")), dtype);
}

onnxOp("QuantizeLinear", {
  run(n) {
    const x = n.input(0);
    const zp = n.optional(2);
    const dtype: DType = zp?.dtype ?? (n.hasAttr("output_dtype") && n.int("output_dtype") !== 0 ? n.dtypeAttr("output_dtype") : "uint8");
    return quantize(x, along(n, n.input(1), x), zp === null ? null : along(n, zp, x), dtype);
  },
});

onnxOp("DequantizeLinear", {
  run(n) {
    const x = n.input(0);
    const scale = n.input(1);
    const zp = n.optional(2);
    const dtype: DType = n.hasAttr("output_dtype") && n.int("output_dtype") !== 0 ? n.dtypeAttr("output_dtype") : scale.dtype;
    return dequantize(x, along(n, scale, x), zp === null ? null : along(n, zp, x), dtype);
  },
});

onnxOp("DynamicQuantizeLinear", {
  run(n) {
    // (in float32, as the op is defined)
    const x = ops.cast(n.input(0), "float32");
    const lo = ops.minimum(ops.min(x), 0);
    const hi = ops.maximum(ops.max(x), 0);
    const scale = ops.div(ops.sub(hi, lo), 255);
    const zp = saturate(ops.neg(ops.div(lo, scale)), "uint8");
    const y = saturate(ops.add(ops.round(ops.div(x, scale)), ops.cast(zp, "float32")), "uint8");
    return [y, scale, zp];
  },
});

onnxOp("QLinearMatMul", {
  run(n) {
    const [a, as, az, b, bs, bz, ys, yz] = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => n.input(i)) as Tensor[];
    const fa = dequantize(a!, as!, az!, "float64");
    const fb = dequantize(b!, bs!, bz!, "float64");
    return quantize(ops.matmul(fa, fb), ys!, yz!, yz!.dtype);
  },
});

onnxOp("MatMulInteger", {
  run(n) {
    const center = (t: Tensor, zp: Tensor | null) => (zp === null ? ops.cast(t, "float64") : ops.sub(ops.cast(t, "float64"), ops.cast(zp, "float64")));
    const a = n.input(0);
    const b = n.input(1);
    const az = n.optional(2);
    const bz = n.optional(3);
    return ops.cast(ops.matmul(center(a, az === null ? null : az.rank === 1 && a.rank > 1 ? ops.reshape(az, [-1, 1]) : az), center(b, bz)), "int32");
  },
});

/** A per-output-channel parameter [M] of a conv weight [M, C/g, ...] shaped to broadcast; a scalar stays one. */
const perOutputChannel = (p: Tensor, w: Tensor): Tensor => (p.size === 1 ? ops.reshape(p, []) : ops.reshape(p, [p.size, ...new Array<number>(w.rank - 1).fill(1)]));

/** ConvInteger: (x - x_zero_point) conv (w - w_zero_point), exactly in float64, as int32. */
onnxOp("ConvInteger", {
  run(n) {
    const x = n.input(0);
    const w = n.input(1);
    const xz = n.optional(2);
    const wz = n.optional(3);
    const fx = xz === null ? ops.cast(x, "float64") : ops.sub(ops.cast(x, "float64"), ops.cast(ops.reshape(xz, []), "float64"));
    const fw = wz === null ? ops.cast(w, "float64") : ops.sub(ops.cast(w, "float64"), ops.cast(perOutputChannel(wz, w), "float64"));
    return ops.cast(convolve(n, fx, fw), "int32");
  },
});

/** QLinearConv: dequantized x and w (w per output channel), convolved in float64, plus the int32 bias at scale x_scale * w_scale, quantized to y. */
onnxOp("QLinearConv", {
  run(n) {
    const [x, xs, xz, w, ws, wz, ys, yz] = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => n.input(i)) as Tensor[];
    const fx = dequantize(x!, ops.reshape(xs!, []), ops.reshape(xz!, []), "float64");
    const fw = dequantize(w!, perOutputChannel(ws!, w!), perOutputChannel(wz!, w!), "float64");
    let y = convolve(n, fx, fw);
    const b = n.optional(8);
    if (b !== null) {
      const scale = ops.mul(ops.cast(ops.reshape(xs!, []), "float64"), ops.cast(ops.reshape(ws!, [-1]), "float64"));
      y = ops.add(y, ops.reshape(ops.mul(ops.cast(b, "float64"), scale), [1, b.size, ...new Array<number>(y.rank - 2).fill(1)]));
    }
    return quantize(y, ys!, yz!, yz!.dtype);
  },
});
