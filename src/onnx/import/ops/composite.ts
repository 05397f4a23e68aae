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

/**
 * STFT: frames of frame_length samples every frame_step (a gather with a trace-time index
 * table), times the window, each frame's DFT (onesided by default) as above.
 */
onnxOp("STFT", {
  constInputs: [1, 3],
  run(n) {
    const signal = n.input(0);
    if (signal.rank !== 3 || (signal.shape[2] !== 1 && signal.shape[2] !== 2)) throw n.fail(`the signal must be [batch, length, 1 or 2], got shape [${signal.shape.join(", ")}]`);
    const [step] = n.knownInts(1, "frame_step");
    const window = n.optional(2);
    const length = n.hasInput(3) ? n.knownInts(3, "frame_length")[0]! : window !== null ? window.shape[0]! : null;
    if (length === null) throw n.fail("needs a window or a frame_length");
    if (window !== null && (window.rank !== 1 || window.shape[0] !== length)) throw n.fail(`the window has shape [${window.shape.join(", ")}], expected [${length}]`);
    const L = signal.shape[1]!;
    if (!(step! >= 1) || length < 1 || length > L) throw n.fail(`frame_step ${step} and frame_length ${length} do not fit a signal of length ${L}`);
    const frames = Math.floor((L - length) / step!) + 1;
    n.checkShape([signal.shape[0]!, frames, length, signal.shape[2]!]);
    const table = Array.from({ length: frames * length }, (_, i) => Math.floor(i / length) * step! + (i % length));
    let x = ops.gather(signal, ops.tensor(table, "int32", [frames, length]), 1); // [B, frames, length, 1|2]
    if (window !== null) x = ops.mul(x, ops.reshape(ops.cast(window, x.dtype), [1, 1, length, 1]));
    const onesided = n.int("onesided", 1) !== 0;
    if (onesided && signal.shape[2] === 2) throw n.fail("a complex signal has no one-sided transform");
    return dft(n, x, 2, null, false, onesided);
  },
});

/**
 * AffineGrid: the sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of theta [N, 2, 3] (or
 * [N, 3, 4]) applied to the normalized coordinates of the output (x fastest), align_corners
 * placing -1 and 1 at the corner pixels' centres or edges.
 */
onnxOp("AffineGrid", {
  constInputs: [1],
  run(n) {
    const theta = n.input(0);
    const size = n.knownInts(1, "size");
    const k = size.length - 2;
    if ((k !== 2 && k !== 3) || theta.rank !== 3 || theta.shape[1] !== k || theta.shape[2] !== k + 1 || theta.shape[0] !== size[0]) {
      throw n.fail(`theta [${theta.shape.join(", ")}] and size [${size.join(", ")}] must be [N, 2, 3] with [N, C, H, W] or [N, 3, 4] with [N, C, D, H, W]`);
    }
    const align = n.int("align_corners", 0) !== 0;
    const spatial = size.slice(2); // [(D,) H, W]
    n.checkShape([size[0]!, ...spatial, k]);
    const coord = (m: number, i: number): number => (m === 1 ? 0 : align ? -1 + (2 * i) / (m - 1) : (2 * i + 1) / m - 1);
    const count = spatial.reduce((p, q) => p * q, 1);
    const base: number[] = [];
    for (let p = 0; p < count; p++) {
      // row-major position -> (x, y[, z], 1), x along the last axis
      const idx: number[] = [];
      let r = p;
      for (let a = spatial.length - 1; a >= 0; a--) {
        idx.unshift(r % spatial[a]!);
        r = Math.floor(r / spatial[a]!);
      }
      for (let a = spatial.length - 1; a >= 0; a--) base.push(coord(spatial[a]!, idx[a]!));
      base.push(1);
    }
    const grid = ops.matmul(ops.tensor(base, theta.dtype, [count, k + 1]), theta, { transposeB: true }); // [N, count, k]
    return ops.reshape(grid, [size[0]!, ...spatial, k]);
  },
});

/**
 * MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters between mel-spaced
 * frequencies, computed at trace time from the (constant) inputs as the specification's
 * reference does (bin edges floored to spectrogram bins).
 */
onnxOp("MelWeightMatrix", {
  constInputs: [0, 1, 2, 3, 4],
  run(n) {
    const [bins] = n.knownInts(0, "num_mel_bins");
    const [dftLength] = n.knownInts(1, "dft_length");
    const [rate] = n.knownInts(2, "sample_rate");
    const lower = Number(n.known(3, "lower_edge_hertz").dataSync()[0]);
    const upper = Number(n.known(4, "upper_edge_hertz").dataSync()[0]);
    if (!(bins! >= 1 && dftLength! >= 1 && rate! >= 1) || !(lower >= 0 && upper > lower)) throw n.fail(`invalid parameters: ${bins} bins, dft_length ${dftLength}, sample_rate ${rate}, edges ${lower} to ${upper} Hz`);
    const spectrum = Math.floor(dftLength! / 2) + 1;
    n.checkShape([spectrum, bins!]);
    const mel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
    const lowMel = mel(lower);
    // ONNX's reference divides the mel range by the number of edges (bins + 2), so the last edge
    // falls short of upper_edge_hertz; its node test expects exactly that.
    const step = (mel(upper) - lowMel) / (bins! + 2);
    const edges = Array.from({ length: bins! + 2 }, (_, i) => Math.floor(((dftLength! + 1) * 700 * (10 ** ((i * step + lowMel) / 2595) - 1)) / rate!));
    const out = new Array<number>(spectrum * bins!).fill(0);
    const set = (j: number, i: number, v: number) => {
      if (j < 0 || j >= spectrum) throw n.fail(`the filters reach frequency bin ${j}, beyond the ${spectrum} bins (upper_edge_hertz above the Nyquist frequency)`);
      out[j * bins! + i] = v;
    };
    for (let i = 0; i < bins!; i++) {
      const [lo, mid, hi] = [edges[i]!, edges[i + 1]!, edges[i + 2]!];
      if (mid === lo) set(mid, i, 1);
      else for (let j = lo; j <= mid; j++) set(j, i, (j - lo) / (mid - lo));
      if (hi > mid) for (let j = mid; j < hi; j++) set(j, i, (hi - j) / (hi - mid));
    }
    const dtype: DType = n.hasAttr("output_datatype") ? n.dtypeAttr("output_datatype") : "float32";
    return ops.tensor(out, dtype, [spectrum, bins!]);
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
