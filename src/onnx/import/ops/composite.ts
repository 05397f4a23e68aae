/**
 * ONNX ops that are compositions of registry ops: SwiGLU, RotaryEmbedding, LpPool,
 * CenterCropPad, the window functions (Hann, Hamming, Blackman), DFT (as products with
 * cosine/sine matrices), ReverseSequence. Formulas follow ONNX's reference implementations.
 */
import type { Tensor } from "../../../core/tensor.js";
import type { DType } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { axisOf } from "./shape.js";
import { lpPoolNd, poolGeometry } from "./pool-nd.js";

onnxOp("SwiGLU", {
  run(n) {
    const a = n.input(0);
    const alpha = n.float("alpha", 1);
    return ops.mul(ops.mul(a, ops.sigmoid(ops.mul(a, alpha))), n.input(1));
  },
});

onnxOp("RotaryEmbedding", {
  run(n) {
    let x = n.input(0);
    let cos = n.input(1);
    let sin = n.input(2);
    const positions = n.optional(3);
    const interleaved = n.int("interleaved", 0) !== 0;
    const rank = x.rank;
    if (rank === 4) x = ops.transpose(x, [0, 2, 1, 3]);
    const [B, S] = x.shape as [number, number];
    if (rank === 3) {
      const heads = n.int("num_heads", 0);
      if (!(heads > 0)) throw n.fail("3-D input needs num_heads");
      x = ops.reshape(x, [B, S, heads, x.shape[2]! / heads]);
    } else if (rank !== 4) throw n.fail(`input must have rank 3 or 4, got shape [${x.shape.join(", ")}]`);
    const head = x.shape[3]!;
    const dim = n.int("rotary_embedding_dim", 0) || head;
    const half = dim / 2;
    const rotate = ops.slice(x, [null, null, null, 0], [null, null, null, dim]);
    const rest = dim < head ? ops.slice(x, [null, null, null, dim], [null, null, null, head]) : null;
    if (positions !== null) {
      cos = ops.gather(cos, positions, 0);
      sin = ops.gather(sin, positions, 0);
    }
    if (cos.shape[cos.rank - 1] !== half) throw n.fail(`the cos cache's last dimension is ${cos.shape[cos.rank - 1]}, not rotary_embedding_dim / 2 = ${half}`);
    cos = ops.expandDims(cos, -2);
    sin = ops.expandDims(sin, -2);
    const [x1, x2] = interleaved
      ? [ops.slice(rotate, [null, null, null, 0], null, [1, 1, 1, 2]), ops.slice(rotate, [null, null, null, 1], null, [1, 1, 1, 2])]
      : (ops.split(rotate, 2, -1) as [Tensor, Tensor]);
    const real = ops.sub(ops.mul(cos, x1), ops.mul(sin, x2));
    const imag = ops.add(ops.mul(sin, x1), ops.mul(cos, x2));
    let rotated = interleaved ? ops.reshape(ops.stack([real, imag], -1), rotate.shape) : ops.concat([real, imag], -1);
    if (rest !== null) rotated = ops.concat([rotated, rest], -1);
    return rank === 3 ? ops.reshape(rotated, n.input(0).shape) : ops.transpose(rotated, [0, 2, 1, 3]);
  },
});

// LpPool of any spatial rank, with dilations and auto_pad (padded positions add 0).
onnxOp("LpPool", { run: (n) => lpPoolNd(n.input(0), poolGeometry(n, n.input(0)), n.int("p", 2)) });

onnxOp("CenterCropPad", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const shape = n.knownInts(1, "shape");
    const axes = (n.ints("axes") ?? [...Array(x.rank).keys()]).map((a) => axisOf(n, a, x.rank));
    if (shape.length !== axes.length) throw n.fail(`shape has ${shape.length} entries for ${axes.length} axes`);
    n.checkShape(x.shape.map((d, i) => (axes.includes(i) ? shape[axes.indexOf(i)]! : d)));
    const begin: number[] = x.shape.map(() => 0);
    const end: number[] = x.shape.slice();
    const pads: [number, number][] = x.shape.map(() => [0, 0]);
    axes.forEach((a, i) => {
      const dim = x.shape[a]!;
      const want = shape[i]!;
      const d = Math.abs(dim - want);
      const lo = Math.floor(d / 2);
      if (want < dim) {
        begin[a] = lo;
        end[a] = lo + want;
      } else if (want > dim) pads[a] = [lo, d - lo];
    });
    return ops.pad(ops.slice(x, begin, end), pads);
  },
});

/** A window of `size` samples: f(n, N) with N = size (periodic) or size - 1 (symmetric). */
function windowOp(name: string, f: (i: number, N: number) => number): void {
  onnxOp(name, {
    constInputs: [0],
    run(n) {
      const [size] = n.knownInts(0, "size");
      n.checkShape([size!]);
      const N = n.int("periodic", 1) !== 0 ? size! : size! - 1;
      const dtype: DType = n.hasAttr("output_datatype") ? n.dtypeAttr("output_datatype") : "float32";
      return ops.tensor(Array.from({ length: size! }, (_, i) => f(i, N)), dtype, [size!]);
    },
  });
}
windowOp("HannWindow", (i, N) => Math.sin((i * Math.PI) / N) ** 2);
windowOp("HammingWindow", (i, N) => 25 / 46 - (1 - 25 / 46) * Math.cos((i * Math.PI * 2) / N));
windowOp("BlackmanWindow", (i, N) => 0.42 - 0.5 * Math.cos((i * 2 * Math.PI) / N) + 0.08 * Math.cos((i * 4 * Math.PI) / N));

/**
 * DFT along one axis of a signal [..., n, 1 or 2] (real or complex as [re, im]): products with
 * the n x m cosine and sine matrices built at trace time. onesided keeps the first n/2 + 1
 * frequencies; inverse divides by n. The inverse one-sided transform (irfft) takes the first
 * n/2 + 1 frequencies of a Hermitian-symmetric spectrum and returns the real signal [..., n, 1].
 */
function dft(n: NodeContext, signal: Tensor, axis: number, length: number | null, inverse: boolean, onesided: boolean): Tensor {
  const r = signal.rank;
  const complexIn = signal.shape[r - 1] === 2;
  if (signal.shape[r - 1] !== 1 && !complexIn) throw n.fail(`the signal's last dimension must be 1 or 2, got ${signal.shape[r - 1]}`);
  const halfSpectrum = inverse && onesided;
  // The real signal's length: given, or (for irfft) 2 (m - 1) from the m frequencies given.
  const N = length ?? (halfSpectrum ? 2 * (signal.shape[axis]! - 1) : signal.shape[axis]!);
  if (N < 1) throw n.fail(`the transform length must be positive, got ${N}`);
  // The rows the products read: N samples, or for irfft the N/2 + 1 frequencies they determine.
  const rows = halfSpectrum ? Math.floor(N / 2) + 1 : N;
  let x = signal;
  const have = x.shape[axis]!;
  if (rows !== have) {
    x = rows < have ? ops.slice(x, x.shape.map((_, d) => (d === axis ? 0 : null)), x.shape.map((_, d) => (d === axis ? rows : null))) : ops.pad(x, x.shape.map((_, d) => (d === axis ? [0, rows - have] : [0, 0]) as [number, number]));
  }
  const cols = halfSpectrum ? N : onesided ? Math.floor(N / 2) + 1 : N;
  const sign = inverse ? 1 : -1;
  const cosM: number[] = [];
  const sinM: number[] = [];
  for (let k = 0; k < rows; k++) {
    // irfft: frequencies 1 .. ceil(N/2) - 1 stand for themselves and their conjugate mirror.
    const weight = halfSpectrum && k > 0 && 2 * k < N ? 2 : 1;
    for (let m = 0; m < cols; m++) {
      // k m mod N keeps the angle small, so the tables are exact at the symmetric points.
      const angle = (2 * Math.PI * ((k * m) % N)) / N;
      cosM.push(weight * Math.cos(angle));
      sinM.push(weight * sign * Math.sin(angle));
    }
  }
  const dtype = x.dtype;
  const C = ops.tensor(cosM, dtype, [rows, cols]);
  const S = ops.tensor(sinM, dtype, [rows, cols]);
  // Move the transform axis last: [..., n] per real/imaginary part.
  const parts = ops.split(x, complexIn ? 2 : 1, r - 1).map((t) => ops.squeeze(t, r - 1));
  const perm = [...Array(r - 1).keys()].filter((d) => d !== axis).concat([axis]);
  const inv = perm.map((_, i) => perm.indexOf(i));
  const re = ops.transpose(parts[0]!, perm);
  const im = complexIn ? ops.transpose(parts[1]!, perm) : null;
  // (re + i im)(C + i S) = re C - im S + i (re S + im C)
  let outRe = ops.matmul(re, C);
  let outIm = ops.matmul(re, S);
  if (im !== null) {
    outRe = ops.sub(outRe, ops.matmul(im, S));
    outIm = ops.add(outIm, ops.matmul(im, C));
  }
  if (inverse) {
    outRe = ops.div(outRe, N);
    outIm = ops.div(outIm, N);
  }
  if (halfSpectrum) return ops.expandDims(ops.transpose(outRe, inv), -1);
  return ops.stack([ops.transpose(outRe, inv), ops.transpose(outIm, inv)], -1);
}

onnxOp("DFT", {
  constInputs: [1, 2],
  run(n) {
    const x = n.input(0);
    const length = n.hasInput(1) ? n.knownInts(1, "dft_length")[0]! : null;
    const axisValue = n.opset >= 20 ? (n.hasInput(2) ? n.knownInts(2, "axis")[0]! : -2) : n.int("axis", 1);
    const axis = axisOf(n, axisValue, x.rank);
    if (axis === x.rank - 1) throw n.fail("the transform axis cannot be the last (real/imaginary) axis");
    const inverse = n.int("inverse", 0) !== 0;
    const onesided = n.int("onesided", 0) !== 0;
    return dft(n, x, axis, length, inverse, onesided);
  },
});

onnxOp("ReverseSequence", {
  run(n) {
    const x = n.input(0);
    const lens = n.input(1);
    const batchAxis = n.int("batch_axis", 1);
    const timeAxis = n.int("time_axis", 0);
    const T = x.shape[timeAxis]!;
    const B = x.shape[batchAxis]!;
    // index[t, b] = t < len[b] ? len[b] - 1 - t : t, gathered along the time axis per batch entry
    const t = ops.reshape(ops.arange(0, T, 1, "float64"), [T, 1]);
    const len = ops.reshape(ops.cast(lens, "float64"), [1, B]);
    const idx = ops.cast(ops.where(ops.less(t, len), ops.sub(ops.sub(len, 1), t), t), "int32");
    const shape = x.shape.map((_, d) => (d === timeAxis ? T : d === batchAxis ? B : 1));
    const full = ops.broadcastTo(ops.reshape(timeAxis < batchAxis ? idx : ops.transpose(idx), shape), x.shape as number[]);
    return ops.gatherElements(x, full, timeAxis);
  },
});

/** A depthwise causal 1-D convolution that carries its last k - 1 input columns as state. */
onnxOp("CausalConvWithState", {
  run(n) {
    const x = n.input(0);
    const w = n.input(1);
    const bias = n.optional(2);
    const past = n.optional(3);
    const act = n.string("activation", "none");
    if (act !== "none" && act !== "silu" && act !== "swish") throw n.fail(`unknown activation ${JSON.stringify(act)}`);
    if (x.rank !== 3 || w.rank !== 3) throw n.fail("input and weight must have rank 3");
    const [B, C] = x.shape as [number, number];
    const k = w.shape[2]!;
    const padded = ops.concat([past ?? ops.full([B, C, k - 1], 0, x.dtype), x], 2);
    let y = ops.squeeze(ops.conv2d(ops.expandDims(padded, 2), ops.expandDims(w, 2), { groups: C }), 2);
    if (bias !== null) y = ops.add(y, ops.reshape(bias, [1, C, 1]));
    if (act !== "none") y = ops.mul(y, ops.sigmoid(y));
    const L = padded.shape[2]!;
    return [y, ops.slice(padded, [0, 0, L - (k - 1)], [B, C, L])];
  },
});
