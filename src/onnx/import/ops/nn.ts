/**
 * ONNX neural-network ops: MatMul, Gemm, Conv, ConvTranspose, pooling, normalizations,
 * Softmax/LogSoftmax/Hardmax, LRN, TopK, Einsum. Convolution and pooling
 * are two-dimensional in the registry: 1-D ones run as 2-D with a height of 1.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { axisOf } from "./shape.js";
import { avgPoolNd, maxPoolIndices, maxPoolNd, poolGeometry, resolvePads, sumBlocks } from "./pool-nd.js";

onnxOp("MatMul", { run: (n) => ops.matmul(n.input(0), n.input(1)) });

onnxOp("Gemm", {
  run(n) {
    const a = n.input(0);
    const b = n.input(1);
    const alpha = n.float("alpha", 1);
    const beta = n.float("beta", 1);
    let y = ops.matmul(a, b, { transposeA: n.int("transA", 0) !== 0, transposeB: n.int("transB", 0) !== 0 });
    if (alpha !== 1) y = ops.mul(y, alpha);
    const c = n.optional(2);
    if (c !== null && beta !== 0) y = ops.add(y, beta === 1 ? c : ops.mul(c, beta));
    return y;
  },
});

// ---- convolution and pooling ----------------------------------------------------------------

/** 1-D tensors [N, C, L] as 2-D [N, C, 1, L]; the spatial rank is checked to be 1 or 2. */
function as2d(n: NodeContext, x: Tensor): { x: Tensor; oneD: boolean } {
  if (x.rank === 4) return { x, oneD: false };
  if (x.rank === 3) return { x: ops.expandDims(x, 2), oneD: true };
  throw n.unsupported(`only 1-D and 2-D ${n.node.op_type} are supported (input of shape [${x.shape.join(", ")}])`);
}
const back1d = (y: Tensor, oneD: boolean): Tensor => (oneD ? ops.squeeze(y, 2) : y);
/** Per-spatial-axis attribute values, with 1-D ones lifted to 2-D (height 1). */
function pair(values: number[], oneD: boolean, fill: number): [number, number] {
  return oneD ? [fill, values[0]!] : [values[0]!, values[1]!];
}
function padPairs(pads: number[], oneD: boolean): [[number, number], [number, number]] {
  return oneD ? [[0, 0], [pads[0]!, pads[1]!]] : [[pads[0]!, pads[2]!], [pads[1]!, pads[3]!]];
}

/** A Conv or ConvTranspose node's operands (1-D ones as 2-D) and the geometry of its spatial axes. */
function convGeometry(n: NodeContext, x0: Tensor = n.input(0), w0: Tensor = n.input(1)) {
  const { x, oneD } = as2d(n, x0);
  const w = oneD ? ops.expandDims(w0, 2) : w0;
  const k = oneD ? 1 : 2;
  const kernel = oneD ? [w.shape[3]!] : [w.shape[2]!, w.shape[3]!];
  const strides = n.ints("strides", new Array(k).fill(1));
  const dilations = n.ints("dilations", new Array(k).fill(1));
  const size = oneD ? [x.shape[3]!] : [x.shape[2]!, x.shape[3]!];
  const keff = kernel.map((kk, i) => (kk - 1) * dilations[i]! + 1);
  return { x, w, oneD, k, strides, dilations, size, keff };
}

/** The optional bias (input 2) added per channel, and a 1-D result back to 1-D. */
function finishConv(n: NodeContext, y: Tensor, oneD: boolean): Tensor {
  const b = n.optional(2);
  return back1d(b === null ? y : ops.add(y, ops.reshape(b, [1, b.size, 1, 1])), oneD);
}

/** The convolution a Conv-like node's attributes describe, of x by w (no bias). */
export function convolve(n: NodeContext, x0: Tensor, w0: Tensor): Tensor {
  const { x, w, oneD, strides, dilations, size, keff } = convGeometry(n, x0, w0);
  const pads = resolvePads(n, size, keff, strides);
  return back1d(ops.conv2d(x, w, { strides: pair(strides, oneD, 1), dilations: pair(dilations, oneD, 1), padding: padPairs(pads, oneD), groups: n.int("group", 1) }), oneD);
}

onnxOp("Conv", {
  run(n) {
    const y = convolve(n, n.input(0), n.input(1));
    const b = n.optional(2);
    return b === null ? y : ops.add(y, ops.reshape(b, [1, b.size, ...new Array<number>(y.rank - 2).fill(1)]));
  },
});

/**
 * ConvTranspose's explicit pads [begin..., end...] and output padding for k spatial axes of sizes
 * `size`: from output_shape or SAME_* auto_pad (the total padding the wanted output size implies)
 * or the pads attribute. A negative total padding (an output larger than the full transposed
 * convolution) becomes extra output padding at the end.
 */
function transposePads(n: NodeContext, size: number[], strides: number[], keff: number[]): { pads: number[]; outPad: number[] } {
  const k = size.length;
  const outPad = n.ints("output_padding", new Array(k).fill(0));
  let pads: number[];
  const outputShape = n.ints("output_shape");
  const autoPad = n.string("auto_pad", "NOTSET");
  if (outputShape !== undefined || autoPad === "SAME_UPPER" || autoPad === "SAME_LOWER") {
    // SAME_UPPER puts the odd pixel at the start (ONNX's ConvTranspose rule), SAME_LOWER at the end.
    const target = outputShape !== undefined ? outputShape.slice(-k) : size.map((s, i) => s * strides[i]!);
    const begin: number[] = [];
    const end: number[] = [];
    for (let i = 0; i < k; i++) {
      const total = strides[i]! * (size[i]! - 1) + outPad[i]! + keff[i]! - target[i]!;
      const half = Math.floor(total / 2);
      const upperFirst = autoPad !== "SAME_LOWER";
      begin.push(upperFirst ? total - half : half);
      end.push(upperFirst ? half : total - half);
    }
    pads = [...begin, ...end];
  } else pads = n.ints("pads", new Array(2 * k).fill(0));
  if (pads.length !== 2 * k) throw n.fail(`pads has ${pads.length} entries, expected ${2 * k}`);
  for (let i = 0; i < k; i++) {
    const extra = -Math.min(0, pads[i]! + pads[i + k]!);
    if (extra > 0) {
      outPad[i] = outPad[i]! + extra;
      pads[i] = Math.max(0, pads[i]!);
      pads[i + k] = Math.max(0, pads[i + k]!);
    }
  }
  return { pads, outPad };
}

onnxOp("ConvTranspose", {
  run(n) {
    if (n.input(0).rank === 5) return convTranspose3d(n);
    const { x, w, oneD, strides, dilations, size, keff } = convGeometry(n);
    const { pads, outPad } = transposePads(n, size, strides, keff);
    const y = ops.conv2dTranspose(x, w, {
      strides: pair(strides, oneD, 1),
      dilations: pair(dilations, oneD, 1),
      padding: padPairs(pads, oneD),
      outputPadding: pair(outPad, oneD, 0),
      groups: n.int("group", 1),
    });
    return finishConv(n, y, oneD);
  },
});

/**
 * 3-D ConvTranspose [N, C, D, H, W] as 2-D ones: for each kernel depth index kd, a 2-D
 * transposed convolution of every input depth slice with w[:, :, kd]; slice d lands at output
 * depth d * strideD + kd * dilationD (zeros between slices for the stride), the kD results add
 * up, and the depth padding crops. Every step is a differentiable registry op.
 */
function convTranspose3d(n: NodeContext): Tensor {
  const x = n.input(0);
  const w = n.input(1);
  if (w.rank !== 5) throw n.fail(`the weight must have rank 5 for a 3-D input, got shape [${w.shape.join(", ")}]`);
  const [N, C, D, H, W] = x.shape as [number, number, number, number, number];
  const kernel = w.shape.slice(2) as number[];
  const strides = n.ints("strides", [1, 1, 1]);
  const dilations = n.ints("dilations", [1, 1, 1]);
  if (strides.length !== 3 || dilations.length !== 3) throw n.fail("strides and dilations need 3 entries for a 3-D input");
  const keff = kernel.map((kk, i) => (kk - 1) * dilations[i]! + 1);
  const { pads, outPad } = transposePads(n, [D, H, W], strides, keff);
  const groups = n.int("group", 1);
  const [sd, dd] = [strides[0]!, dilations[0]!];
  const fullDepth = sd * (D - 1) + keff[0]! + outPad[0]!;
  const outDepth = fullDepth - pads[0]! - pads[3]!;
  const slices = ops.reshape(ops.transpose(x, [0, 2, 1, 3, 4]), [N * D, C, H, W]);
  let sum: Tensor | null = null;
  for (let kd = 0; kd < kernel[0]!; kd++) {
    const wk = ops.squeeze(ops.slice(w, [0, 0, kd, 0, 0], [null, null, kd + 1, null, null]), 2);
    const z2 = ops.conv2dTranspose(slices, wk, {
      strides: [strides[1]!, strides[2]!],
      dilations: [dilations[1]!, dilations[2]!],
      padding: [[pads[1]!, pads[4]!], [pads[2]!, pads[5]!]],
      outputPadding: [outPad[1]!, outPad[2]!],
      groups,
    });
    const [, M, Ho, Wo] = z2.shape as [number, number, number, number];
    let z = ops.reshape(z2, [N, D, M, Ho, Wo]);
    if (sd > 1) {
      // Interleave sd - 1 zero slices after each depth slice, dropping the trailing ones.
      z = ops.reshape(ops.pad(ops.expandDims(z, 2), [[0, 0], [0, 0], [0, sd - 1], [0, 0], [0, 0], [0, 0]]), [N, D * sd, M, Ho, Wo]);
      z = ops.slice(z, [0, 0, 0, 0, 0], [N, (D - 1) * sd + 1, M, Ho, Wo]);
    }
    const before = kd * dd;
    z = ops.pad(z, [[0, 0], [before, fullDepth - before - z.shape[1]!], [0, 0], [0, 0], [0, 0]]);
    sum = sum === null ? z : ops.add(sum, z);
  }
  const cropped = ops.slice(sum!, [0, pads[0]!, 0, 0, 0], [null, pads[0]! + outDepth, null, null, null]);
  const y = ops.transpose(cropped, [0, 2, 1, 3, 4]);
  const b = n.optional(2);
  return b === null ? y : ops.add(y, ops.reshape(b, [1, b.size, 1, 1, 1]));
}

function pool(op: "MaxPool" | "AveragePool"): void {
  onnxOp(op, {
    run(n) {
      const x0 = n.input(0);
      const g = poolGeometry(n, x0);
      const k = g.kernel.length;
      const includePad = op === "AveragePool" && n.int("count_include_pad", 0) !== 0;
      const wantIndices = op === "MaxPool" && n.node.output.length > 1 && !!n.node.output[1];
      // 3-D and higher, dilated windows and the Indices output: the N-D lowering (pool-nd.ts).
      if (k > 2 || g.dilations.some((d) => d !== 1) || wantIndices) {
        if (op === "AveragePool") return avgPoolNd(x0, g, includePad);
        const storageOrder = n.int("storage_order", 0);
        if (storageOrder !== 0 && storageOrder !== 1) throw n.fail(`storage_order must be 0 or 1, got ${storageOrder}`);
        const y = maxPoolNd(x0, g);
        return wantIndices ? [y, maxPoolIndices(x0, g, storageOrder === 1)] : y;
      }
      const { x, oneD } = as2d(n, x0);
      // The 2-D kernels take the ceil-mode growth as extra end padding (never counted).
      const pads = [...g.begin, ...g.end.map((e, i) => e + g.ceilExtra[i]!)];
      let input = x;
      let padding = padPairs(pads, oneD);
      if (includePad && g.begin.concat(g.end).some((p) => p !== 0)) {
        input = ops.pad(x, [[0, 0], [0, 0], ...padPairs([...g.begin, ...g.end], oneD)]);
        padding = oneD ? [[0, 0], [0, g.ceilExtra[0]!]] : [[0, g.ceilExtra[0]!], [0, g.ceilExtra[1]!]];
      }
      const options = { kernelSize: pair(g.kernel, oneD, 1), strides: pair(g.strides, oneD, 1), padding };
      const y = op === "MaxPool" ? ops.maxPool2d(input, options) : ops.avgPool2d(input, options);
      return back1d(y, oneD);
    },
  });
}
pool("MaxPool");
pool("AveragePool");

/**
 * Col2Im: input [N, C * prod(block), L] holds L sliding blocks (im2col's columns); each block
 * element is added back at its image position (sumBlocks, pool-nd.ts).
 */
onnxOp("Col2Im", {
  constInputs: [1, 2],
  run(n) {
    const x = n.input(0);
    const image = n.knownInts(1, "image_shape");
    const block = n.knownInts(2, "block_shape");
    const k = image.length;
    if (block.length !== k || k === 0) throw n.fail(`image_shape [${image.join(", ")}] and block_shape [${block.join(", ")}] must have the same positive length`);
    if (x.rank !== 3) throw n.fail(`the input must be [N, C * prod(block_shape), L], got shape [${x.shape.join(", ")}]`);
    const strides = n.ints("strides", new Array(k).fill(1));
    const dilations = n.ints("dilations", new Array(k).fill(1));
    const pads = n.ints("pads", new Array(2 * k).fill(0));
    if (strides.length !== k || dilations.length !== k || pads.length !== 2 * k) throw n.fail(`strides, dilations need ${k} entries and pads ${2 * k}`);
    if ([...image, ...block, ...strides, ...dilations].some((v) => !Number.isInteger(v) || v < 1) || pads.some((p) => p < 0)) throw n.fail("image and block sizes, strides and dilations must be positive, pads non-negative");
    const K = block.reduce((p, q) => p * q, 1);
    const [N, CK, L] = x.shape as [number, number, number];
    if (CK % K !== 0) throw n.fail(`the input's ${CK} rows are not a multiple of the block's ${K} elements`);
    const out = image.map((s, i) => Math.floor((s + pads[i]! + pads[i + k]! - ((block[i]! - 1) * dilations[i]! + 1)) / strides[i]!) + 1);
    if (out.some((o) => o < 1) || out.reduce((p, q) => p * q, 1) !== L) throw n.fail(`the image [${image.join(", ")}] holds [${out.join(", ")}] blocks, not the input's ${L}`);
    n.checkShape([N, CK / K, ...image]);
    const cols = ops.reshape(x, [N, CK / K, K, ...out]);
    return sumBlocks(cols, image, block, strides, dilations, pads.slice(0, k), pads.slice(k));
  },
});

/**
 * MaxUnpool: zeros of the unpooled shape (output_shape, or the pooling geometry run backwards),
 * with each X value written at its Indices position (flat over the whole output, as MaxPool's
 * Indices are): one scatterND, so the values' gradient is a gather.
 */
onnxOp("MaxUnpool", {
  constInputs: [2],
  run(n) {
    const x = n.input(0);
    const idx = n.input(1);
    if (idx.rank !== x.rank || idx.shape.some((d, i) => d !== x.shape[i])) throw n.fail(`indices have shape [${idx.shape.join(", ")}], expected the input's [${x.shape.join(", ")}]`);
    const k = x.rank - 2;
    const kernel = n.ints("kernel_shape");
    if (kernel === undefined || kernel.length !== k) throw n.fail(`needs kernel_shape with ${k} entries`);
    const strides = n.ints("strides", new Array(k).fill(1));
    const pads = n.ints("pads", new Array(2 * k).fill(0));
    // Indices address the unpooled shape the pooling geometry implies; a larger output_shape
    // adds zeros at the end of each spatial axis (as onnxruntime places them).
    const shape = [x.shape[0]!, x.shape[1]!, ...kernel.map((kk, i) => (x.shape[i + 2]! - 1) * strides[i]! - pads[i]! - pads[i + k]! + kk)];
    n.checkShape(shape);
    const total = shape.reduce((p, q) => p * q, 1);
    const flat = ops.scatterND(ops.full([total], 0, x.dtype), ops.reshape(ops.cast(idx, "int64"), [x.size, 1]), ops.reshape(x, [x.size]));
    const y = ops.reshape(flat, shape);
    if (!n.hasInput(2)) return y;
    const want = n.knownInts(2, "output_shape");
    if (want.length !== x.rank || want.some((d, i) => (i < 2 ? d !== shape[i] : d < shape[i]!))) {
      throw n.fail(`output_shape [${want.join(", ")}] must keep N and C and be at least the unpooled shape [${shape.join(", ")}]`);
    }
    n.checkShape(want);
    return ops.pad(y, want.map((d, i) => [0, d - shape[i]!] as [number, number]));
  },
});

const spatialAxes = (x: Tensor): number[] => [...Array(x.rank).keys()].slice(2);
onnxOp("GlobalAveragePool", { run: (n) => ops.mean(n.input(0), spatialAxes(n.input(0)), true) });
onnxOp("GlobalMaxPool", { run: (n) => ops.max(n.input(0), spatialAxes(n.input(0)), true) });

// ---- normalization --------------------------------------------------------------------------

/** A per-channel vector [C] shaped to broadcast against an [N, C, ...] tensor of rank r. */
const perChannel = (v: Tensor, r: number): Tensor => ops.reshape(v, [1, v.size, ...new Array(r - 2).fill(1)]);

onnxOp("BatchNormalization", {
  run(n) {
    const x = n.input(0);
    const [scale, bias, mean, variance] = [1, 2, 3, 4].map((i) => n.input(i)) as [Tensor, Tensor, Tensor, Tensor];
    const eps = n.float("epsilon", 1e-5);
    const training = n.int("training_mode", 0) !== 0;
    const r = x.rank;
    if (!training) {
      const inv = ops.rsqrt(ops.add(perChannel(variance, r), eps));
      return ops.add(ops.mul(ops.mul(ops.sub(x, perChannel(mean, r)), inv), perChannel(scale, r)), perChannel(bias, r));
    }
    const axes = [0, ...spatialAxes(x)];
    const m = ops.mean(x, axes, true);
    const v = ops.mean(ops.square(ops.sub(x, m)), axes, true);
    const y = ops.add(ops.mul(ops.div(ops.sub(x, m), ops.sqrt(ops.add(v, eps))), perChannel(scale, r)), perChannel(bias, r));
    const momentum = n.float("momentum", 0.9);
    const runMean = ops.add(ops.mul(mean, momentum), ops.mul(ops.reshape(m, [m.size]), 1 - momentum));
    const runVar = ops.add(ops.mul(variance, momentum), ops.mul(ops.reshape(v, [v.size]), 1 - momentum));
    return [y, runMean, runVar];
  },
});

onnxOp("InstanceNormalization", {
  run(n) {
    const x = n.input(0);
    const eps = n.float("epsilon", 1e-5);
    const axes = spatialAxes(x);
    const m = ops.mean(x, axes, true);
    const v = ops.mean(ops.square(ops.sub(x, m)), axes, true);
    const r = x.rank;
    return ops.add(ops.mul(ops.div(ops.sub(x, m), ops.sqrt(ops.add(v, eps))), perChannel(n.input(1), r)), perChannel(n.input(2), r));
  },
});

onnxOp("LayerNormalization", {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", -1), x.rank);
    const eps = n.float("epsilon", 1e-5);
    const axes = [...Array(x.rank).keys()].slice(axis);
    const m = ops.mean(x, axes, true);
    const d = ops.sub(x, m);
    const inv = ops.rsqrt(ops.add(ops.mean(ops.square(d), axes, true), eps));
    let y = ops.mul(ops.mul(d, inv), n.input(1));
    const b = n.optional(2);
    if (b !== null) y = ops.add(y, b);
    return [y, m, inv];
  },
});

onnxOp("GroupNormalization", {
  run(n) {
    const x = n.input(0);
    const groups = n.int("num_groups");
    if (groups === undefined || groups < 1) throw n.fail("needs a positive num_groups");
    const eps = n.float("epsilon", 1e-5);
    const [N, C] = x.shape as [number, number];
    if (C % groups !== 0) throw n.fail(`${C} channels do not divide into ${groups} groups`);
    const g = ops.reshape(x, [N, groups, -1]);
    const m = ops.mean(g, [2], true);
    const d = ops.sub(g, m);
    const normed = ops.reshape(ops.div(d, ops.sqrt(ops.add(ops.mean(ops.square(d), [2], true), eps))), x.shape);
    let scale = n.input(1);
    let bias = n.input(2);
    if (scale.size === groups && groups !== C) {
      // (opset 18: one scale and bias per group)
      scale = ops.reshape(ops.broadcastTo(ops.reshape(scale, [groups, 1]), [groups, C / groups]), [C]);
      bias = ops.reshape(ops.broadcastTo(ops.reshape(bias, [groups, 1]), [groups, C / groups]), [C]);
    }
    return ops.add(ops.mul(normed, perChannel(scale, x.rank)), perChannel(bias, x.rank));
  },
});

onnxOp("LpNormalization", {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", -1), x.rank);
    const p = n.int("p", 2);
    const norm = p === 1 ? ops.sum(ops.abs(x), [axis], true) : ops.sqrt(ops.sum(ops.square(x), [axis], true));
    return ops.div(x, norm);
  },
});

onnxOp("MeanVarianceNormalization", {
  run(n) {
    const x = n.input(0);
    const axes = n.ints("axes", [0, 2, 3]).map((a) => axisOf(n, a, x.rank));
    const m = ops.mean(x, axes, true);
    const v = ops.sub(ops.mean(ops.square(x), axes, true), ops.square(m));
    return ops.div(ops.sub(x, m), ops.add(ops.sqrt(v), 1e-9));
  },
});

onnxOp("RMSNormalization", {
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", -1), x.rank);
    const eps = n.float("epsilon", 1e-5);
    const axes = [...Array(x.rank).keys()].slice(axis);
    const inv = ops.rsqrt(ops.add(ops.mean(ops.square(x), axes, true), eps));
    return ops.mul(ops.mul(x, inv), n.input(1));
  },
});

onnxOp("LRN", {
  run(n) {
    const x = n.input(0);
    const size = n.int("size");
    if (size === undefined || size < 1) throw n.fail("needs a positive size");
    const alpha = n.float("alpha", 1e-4);
    const beta = n.float("beta", 0.75);
    const bias = n.float("bias", 1);
    const C = x.shape[1]!;
    const sq = ops.square(x);
    const lo = Math.floor((size - 1) / 2);
    const hi = Math.ceil((size - 1) / 2);
    const padded = ops.pad(sq, x.shape.map((_, d) => (d === 1 ? [lo, hi] : [0, 0]) as [number, number]));
    let total: Tensor | null = null;
    for (let k = 0; k < size; k++) {
      const part = ops.slice(padded, x.shape.map((_, d) => (d === 1 ? k : null)), x.shape.map((_, d) => (d === 1 ? k + C : null)));
      total = total === null ? part : ops.add(total, part);
    }
    return ops.div(x, ops.pow(ops.add(ops.mul(total!, alpha / size), bias), beta));
  },
});

// ---- softmax family -------------------------------------------------------------------------

/** Applies `f` along `axis` (opset 13+), or over the flattened axes from `axis` on (older opsets). */
function softmaxLike(n: NodeContext, f: (x: Tensor, axis: number) => Tensor): Tensor {
  const x = n.input(0);
  if (n.opset >= 13) return f(x, axisOf(n, n.int("axis", -1), x.rank));
  const axis = axisOf(n, n.int("axis", 1), Math.max(x.rank, 1));
  const outer = x.shape.slice(0, axis).reduce((p, d) => p * d, 1);
  return ops.reshape(f(ops.reshape(x, [outer, -1]), 1), x.shape);
}
onnxOp("Softmax", { run: (n) => softmaxLike(n, (x, a) => ops.softmax(x, a)) });
onnxOp("LogSoftmax", { run: (n) => softmaxLike(n, (x, a) => ops.logSoftmax(x, a)) });
onnxOp("Hardmax", {
  run: (n) =>
    softmaxLike(n, (x, a) => {
      const i = ops.argMax(x, a, true);
      const shape = x.shape.map((d, k) => (k === a ? d : 1));
      const positions = ops.reshape(ops.arange(0, x.shape[a]!, 1, "int32"), shape);
      return ops.cast(ops.equal(i, positions), x.dtype);
    }),
});

onnxOp("TopK", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const k = n.opset < 10 ? n.int("k", 1) : n.knownInts(1, "k")[0]!;
    const axis = axisOf(n, n.int("axis", -1), x.rank);
    const largest = n.int("largest", 1) !== 0;
    const sorted = n.int("sorted", 1) !== 0;
    const last = x.rank - 1;
    const perm = [...Array(x.rank).keys()];
    perm[axis] = last;
    perm[last] = axis;
    let t = axis === last ? x : ops.transpose(x, perm);
    if (!largest) t = ops.neg(t);
    let [values, indices] = ops.topK(t, k, { sorted });
    if (!largest) values = ops.neg(values);
    if (axis !== last) {
      values = ops.transpose(values, perm);
      indices = ops.transpose(indices, perm);
    }
    return [values, ops.cast(indices, "int64")];
  },
});

onnxOp("Einsum", {
  run(n) {
    const eq = n.string("equation");
    if (eq === undefined) throw n.fail("needs the equation attribute");
    return ops.einsum(eq.replace(/\s+/g, ""), ...n.inputsFrom(0));
  },
});
