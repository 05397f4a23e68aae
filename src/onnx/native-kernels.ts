/**
 * onnxruntime-node's CPU kernels (MLAS: AVX2/AVX-512 where the CPU has them) as the CPU
 * backend's native kernels (backends/cpu/native.ts): each product or convolution shape is a
 * single-node model built with the builders (builders.ts, the official schema), loaded once
 * into a synchronous session (sync-session.ts) per thread count, and run with the op's own
 * output storage as the fetch. api/wiring.ts installs it where onnxruntime-node is installed.
 *
 * The crossover (STAGECRAFT_NATIVE_MIN_FLOPS, core/config.ts) is in flops and depends only on
 * the shape. MLAS splits products and convolutions over threads by rows and columns, never
 * along k, so the bits do not depend on the thread count the backend's policy picks.
 */
import { config } from "../core/config.js";
import { Tensor } from "../core/tensor.js";
import type { NativeKernels } from "../backends/cpu/native.js";
import type { Conv2dParams } from "../backends/cpu/conv.js";
import { makeGraph, makeModel, makeNode, makeValueInfo, modelBytes, type AttributeValue } from "./builders.js";
import { onnxRuntimeInstalled, SessionCache, syncRuntime, unshared } from "./sync-session.js";

const sessions = new SessionCache();

type Io = [string, number[]];

/** The bytes of a model of `nodes` over float32 inputs and outputs (and int64 initializers). */
function model(nodes: Record<string, unknown>[], inputs: Io[], outputs: Io[], constants: [string, number[]][] = []): Uint8Array {
  const vi = ([name, dims]: Io) => makeValueInfo(name, "float32", dims);
  const init = constants.map(([name, v]) => ({ name, value: new Tensor(Float64Array.from(v), [v.length], "int64") }));
  return modelBytes(makeModel(makeGraph(nodes, "stagecraft_native", inputs.map(vi), outputs.map(vi), init), { opset: 17 }));
}

const convFlops = (p: Conv2dParams) => 2 * p.batch * p.outC * p.outH * p.outW * (p.inC / p.groups) * p.kH * p.kW;
const effective = (k: number, d: number) => (k - 1) * d + 1;
const convKey = (p: Conv2dParams) => Object.values(p).join(" ");

/** Bottom/right padding that makes a convolution of `inH` rows give `outH` rows (never negative). */
function endPad(inH: number, outH: number, kH: number, s: number, d: number, pt: number): number {
  return Math.max(0, (outH - 1) * s + effective(kH, d) - inH - pt);
}

function convAttrs(p: Conv2dParams): Record<string, AttributeValue> {
  return { strides: [p.strideH, p.strideW], dilations: [p.dilationH, p.dilationW], group: p.groups, kernel_shape: [p.kH, p.kW] };
}

/** Runs session `key`'s model (built by `build` once) on `threads` threads, copying out of shared memory where needed. */
function runModel(key: string, threads: number, build: () => Uint8Array, ins: [string, Float32Array, number[]][], out: [string, Float32Array, number[]]): void {
  const s = sessions.get(key, threads, build)!;
  const o = unshared(out[1], 0, false);
  const feeds: Record<string, [Float32Array, number[]]> = {};
  ins.forEach(([name, data, dims], i) => (feeds[name] = [unshared(data, i + 1, true), dims]));
  s.run(feeds, { [out[0]]: [o, out[2]] });
  if (o !== out[1]) out[1].set(o);
}

/**
 * Largest column matrix (floats) of the im2col form of a filter gradient: past it (64 MiB), the
 * swapped convolution, which needs no columns, computes it.
 */
const FILTER_GRAD_COLUMNS_MAX = 1 << 24;

/**
 * Kernels of at most this many taps take the two faster-on-small-kernels forms: the im2col
 * filter gradient and the flipped-filter input gradient. Measured (one thread, quiet machine):
 * on the small ResNet's 3x3 and 1x1 layers they win (filter gradient 1.6-8x, input gradient
 * 10-20%); on the MNIST demo's 5x5 layers (28x28 and 12x12 images, 12 and 24 filters) each lost,
 * the two together taking the demo's staged step from 114 to 92 steps/s. A shape rule, not a
 * timing: the same shape always runs the same arithmetic, in eager and staged code.
 */
const SMALL_KERNEL_TAPS = 9;
const smallKernel = (p: Conv2dParams) => p.kH * p.kW <= SMALL_KERNEL_TAPS;

/** Floats in the column matrix of `p`'s filter gradient: (inC kH kW) x (batch outH outW). */
export const filterGradColumns = (p: Conv2dParams) => p.inC * p.kH * p.kW * p.batch * p.outH * p.outW;

/**
 * The model of a filter gradient dw = conv2dBackpropFilter(x, dy) (one group), input x and dy,
 * output dw, in one of two forms:
 *
 * "im2col": the zero-padded x gives one strided slice per filter tap (ki, kj) ([N, C, outH,
 * outW], the inputs that tap meets); stacked, they are each image's columns [N, C kH kW, outH
 * outW], and dw^T [C kH kW, OC] = the sum over images of columns times dy_n^T: one batched
 * product (k = outH outW) and a sum over the batch. Measured 1.6x faster than the swapped
 * convolution on 3x3 filters of 16-32 channels at 16-32 pixels, 2x on 3 channels, 8x on a
 * strided 1x1 (MLAS's convolution is slow at the swapped form's tiny outputs: 3x3 pixels of a
 * 32x32 "filter"). One product over the whole batch (k = N outH outW) was as fast but MLAS
 * splits so long a k over threads: its bits depended on the thread count.
 *
 * "swapped": with images and channels swapped (x as [C, N, H, W], dy as [OC, N, oH, oW]
 * filters), it is a convolution of x by dy whose stride is the forward's dilation and whose
 * dilation is the forward's stride, transposed back ([C, OC, kH, kW] -> [OC, C, kH, kW]).
 */
export function filterGradModel(p: Conv2dParams, form: "im2col" | "swapped"): Uint8Array {
  const xDims = [p.batch, p.inC, p.inH, p.inW], dyDims = [p.batch, p.outC, p.outH, p.outW], dwDims = [p.outC, p.inC, p.kH, p.kW];
  const io = (): [Io[], Io[]] => [[["x", xDims], ["dy", dyDims]], [["dw", dwDims]]];
  const nodes: Record<string, unknown>[] = [];
  const constants: [string, number[]][] = [];
  if (form === "im2col") {
    // the last tap's last row reads padded row (kH - 1) dH + (outH - 1) sH
    const pb = Math.max(0, (p.kH - 1) * p.dilationH + (p.outH - 1) * p.strideH + 1 - p.padTop - p.inH);
    const pr = Math.max(0, (p.kW - 1) * p.dilationW + (p.outW - 1) * p.strideW + 1 - p.padLeft - p.inW);
    const padded = p.padTop + p.padLeft + pb + pr > 0;
    if (padded) {
      constants.push(["pads", [0, 0, p.padTop, p.padLeft, 0, 0, pb, pr]]);
      nodes.push(makeNode("Pad", ["x", "pads"], ["xp"]));
    }
    const src = padded ? "xp" : "x", H = p.inH + p.padTop + pb, W = p.inW + p.padLeft + pr;
    if (p.kH * p.kW > 1) constants.push(["tapAxis", [2]]);
    const taps: string[] = [];
    for (let i = 0; i < p.kH; i++) {
      for (let j = 0; j < p.kW; j++) {
        const start = [i * p.dilationH, j * p.dilationW], end = [start[0]! + (p.outH - 1) * p.strideH + 1, start[1]! + (p.outW - 1) * p.strideW + 1];
        const whole = start[0] === 0 && start[1] === 0 && end[0] === H && end[1] === W && p.strideH === 1 && p.strideW === 1;
        const tap = whole ? src : `tap${i}_${j}`;
        if (!whole) {
          if (!constants.some(([c]) => c === "axes")) constants.push(["axes", [2, 3]], ["steps", [p.strideH, p.strideW]]);
          constants.push([`start${i}_${j}`, start], [`end${i}_${j}`, end]);
          nodes.push(makeNode("Slice", [src, `start${i}_${j}`, `end${i}_${j}`, "axes", "steps"], [tap]));
        }
        if (p.kH * p.kW === 1) {
          taps.push(tap);
          continue;
        }
        nodes.push(makeNode("Unsqueeze", [tap, "tapAxis"], [`${tap}u`]));
        taps.push(`${tap}u`);
      }
    }
    if (taps.length > 1) nodes.push(makeNode("Concat", taps, ["cols"], { axis: 2 }));
    const P = p.outH * p.outW;
    constants.push(["colShape", [p.batch, p.inC * p.kH * p.kW, P]], ["dyShape", [p.batch, p.outC, P]], ["batchAxis", [0]], ["dwShape", dwDims]);
    nodes.push(
      makeNode("Reshape", [taps.length > 1 ? "cols" : taps[0]!, "colShape"], ["col"]),
      makeNode("Reshape", ["dy", "dyShape"], ["dy3"]),
      makeNode("Transpose", ["dy3"], ["dyt"], { perm: [0, 2, 1] }),
      makeNode("MatMul", ["col", "dyt"], ["g"]),
      makeNode("ReduceSum", ["g", "batchAxis"], ["gs"], { keepdims: 0 }),
      makeNode("Transpose", ["gs"], ["gt"], { perm: [1, 0] }),
      makeNode("Reshape", ["gt", "dwShape"], ["dw"]),
    );
    return model(nodes, ...io(), constants);
  }
  // rows of the swapped convolution: (in + pads - effective(outH, strideH)) / dilationH + 1 >= kH
  const rows = (inH: number, outH: number, s: number, d: number, pt: number, kH: number) => Math.max(0, (kH - 1) * d + effective(outH, s) - inH - pt);
  const pb = rows(p.inH, p.outH, p.strideH, p.dilationH, p.padTop, p.kH), pr = rows(p.inW, p.outW, p.strideW, p.dilationW, p.padLeft, p.kW);
  const gH = Math.floor((p.inH + p.padTop + pb - effective(p.outH, p.strideH)) / p.dilationH) + 1;
  const gW = Math.floor((p.inW + p.padLeft + pr - effective(p.outW, p.strideW)) / p.dilationW) + 1;
  const sliced = gH !== p.kH || gW !== p.kW;
  nodes.push(
    makeNode("Transpose", ["x"], ["xt"], { perm: [1, 0, 2, 3] }),
    makeNode("Transpose", ["dy"], ["dyt"], { perm: [1, 0, 2, 3] }),
    makeNode("Conv", ["xt", "dyt"], ["g"], { strides: [p.dilationH, p.dilationW], dilations: [p.strideH, p.strideW], kernel_shape: [p.outH, p.outW], pads: [p.padTop, p.padLeft, pb, pr] }),
  );
  if (sliced) nodes.push(makeNode("Slice", ["g", "s0", "s1", "sa"], ["gs"]));
  nodes.push(makeNode("Transpose", [sliced ? "gs" : "g"], ["dw"], { perm: [1, 0, 2, 3] }));
  if (sliced) constants.push(["s0", [0, 0]], ["s1", [p.kH, p.kW]], ["sa", [2, 3]]);
  return model(nodes, ...io(), constants);
}

/**
 * Pads [top, left, bottom, right] of the stride-1 input gradient as a convolution of dy by the
 * flipped filter: dx[i] = sum over taps k of dy[i + padTop - k d] w[k], a correlation with the
 * filter reversed, padded by (effective kernel - 1 - padTop) before and whatever makes inH rows
 * after; null where that is not such a convolution (strides, groups, a pad past the kernel).
 */
function flippedPads(p: Conv2dParams): number[] | null {
  if (p.strideH !== 1 || p.strideW !== 1 || p.groups !== 1) return null;
  const eH = effective(p.kH, p.dilationH), eW = effective(p.kW, p.dilationW);
  const top = eH - 1 - p.padTop, left = eW - 1 - p.padLeft;
  const bottom = p.inH - 1 + eH - p.outH - top, right = p.inW - 1 + eW - p.outW - left;
  return Math.min(top, left, bottom, right) < 0 ? null : [top, left, bottom, right];
}

export const ortNativeKernels: NativeKernels = {
  name: "onnxruntime-node",

  // (the binding loads at the first shape past the crossover, not at import: most programs'
  // ops never reach it, and loading it costs 0.1-0.3 s; a binding that fails to load leaves
  // every shape to the WebAssembly kernels, as where onnxruntime-node is not installed)
  matmulWins: (m, n, k) => 2 * m * n * k >= config.nativeMinFlops && syncRuntime() !== null,
  convWins: (p) => convFlops(p) >= config.nativeMinFlops && syncRuntime() !== null,

  matmul(a, aOffsets, b, bOffsets, out, m, k, n, transA, transB, threads) {
    const batch = aOffsets.length;
    const aDims = transA ? [k, m] : [m, k], bDims = transB ? [n, k] : [k, n];
    const build = () => model([makeNode("Gemm", ["a", "b"], ["c"], { transA: +transA, transB: +transB })], [["a", aDims], ["b", bDims]], [["c", [m, n]]]);
    const s = sessions.get(`gemm ${m} ${k} ${n} ${+transA}${+transB}`, threads, build)!;
    const o = unshared(out.subarray(0, batch * m * n), 0, false);
    for (let i = 0; i < batch; i++) {
      const A = unshared(a.subarray(aOffsets[i]!, aOffsets[i]! + m * k), 1, true);
      const B = unshared(b.subarray(bOffsets[i]!, bOffsets[i]! + k * n), 2, true);
      s.run({ a: [A, aDims], b: [B, bDims] }, { c: [o.subarray(i * m * n, (i + 1) * m * n), [m, n]] });
    }
    if (o.buffer !== out.buffer) out.set(o);
  },

  conv2d(x, w, out, p, threads) {
    const xDims = [p.batch, p.inC, p.inH, p.inW], wDims = [p.outC, p.inC / p.groups, p.kH, p.kW], oDims = [p.batch, p.outC, p.outH, p.outW];
    const pads = [p.padTop, p.padLeft, endPad(p.inH, p.outH, p.kH, p.strideH, p.dilationH, p.padTop), endPad(p.inW, p.outW, p.kW, p.strideW, p.dilationW, p.padLeft)];
    const build = () => model([makeNode("Conv", ["x", "w"], ["y"], { ...convAttrs(p), pads })], [["x", xDims], ["w", wDims]], [["y", oDims]]);
    runModel(`conv ${convKey(p)}`, threads, build, [["x", x, xDims], ["w", w, wDims]], ["y", out, oDims]);
  },

  /**
   * The input gradient: at stride 1 (one group), a convolution of dy by the filter flipped and
   * its channels exchanged, which MLAS computes 10-20% faster than its ConvTranspose (measured
   * on the small ResNet's 3x3 layers; kernels of more taps than SMALL_KERNEL_TAPS lose); otherwise
   * a ConvTranspose.
   */
  conv2dBackpropInput(dy, w, dx, p, threads) {
    const dyDims = [p.batch, p.outC, p.outH, p.outW], wDims = [p.outC, p.inC / p.groups, p.kH, p.kW], dxDims = [p.batch, p.inC, p.inH, p.inW];
    const flipped = smallKernel(p) ? flippedPads(p) : null;
    if (flipped !== null) {
      const build = () => model([
        makeNode("Transpose", ["w"], ["wt"], { perm: [1, 0, 2, 3] }),
        makeNode("Slice", ["wt", "last", "before", "axes", "back"], ["wf"]),
        makeNode("Conv", ["dy", "wf"], ["dx"], { dilations: [p.dilationH, p.dilationW], kernel_shape: [p.kH, p.kW], pads: flipped }),
      ], [["dy", dyDims], ["w", wDims]], [["dx", dxDims]], [["last", [-1, -1]], ["before", [-(2 ** 53), -(2 ** 53)]], ["axes", [2, 3]], ["back", [-1, -1]]]);
      runModel(`convT flipped ${convKey(p)}`, threads, build, [["dy", dy, dyDims], ["w", w, wDims]], ["dx", dx, dxDims]);
      return true;
    }
    // ConvTranspose of dy: (outH - 1) * s + effective kernel rows, less the pads, plus output_padding
    const full = (n: number, k: number, s: number, d: number) => (n - 1) * s + effective(k, d);
    const fullH = full(p.outH, p.kH, p.strideH, p.dilationH), fullW = full(p.outW, p.kW, p.strideW, p.dilationW);
    const pb = Math.max(0, fullH - p.padTop - p.inH), pr = Math.max(0, fullW - p.padLeft - p.inW);
    const opH = p.inH - (fullH - p.padTop - pb), opW = p.inW - (fullW - p.padLeft - pr);
    if (opH >= p.strideH || opW >= p.strideW) return false; // (never for a conv2d's own gradient)
    const attrs = { ...convAttrs(p), pads: [p.padTop, p.padLeft, pb, pr], output_padding: [opH, opW] };
    const build = () => model([makeNode("ConvTranspose", ["dy", "w"], ["dx"], attrs)], [["dy", dyDims], ["w", wDims]], [["dx", dxDims]]);
    runModel(`convT ${convKey(p)}`, threads, build, [["dy", dy, dyDims], ["w", w, wDims]], ["dx", dx, dxDims]);
    return true;
  },

  /** The filter gradient: as im2col and one product where the columns fit, else as one swapped convolution. One group only. */
  conv2dBackpropFilter(x, dy, dw, p, threads) {
    if (p.groups !== 1) return false;
    const xDims = [p.batch, p.inC, p.inH, p.inW], dyDims = [p.batch, p.outC, p.outH, p.outW], dwDims = [p.outC, p.inC, p.kH, p.kW];
    const form = smallKernel(p) && filterGradColumns(p) <= FILTER_GRAD_COLUMNS_MAX ? "im2col" : "swapped";
    runModel(`convW ${form} ${convKey(p)}`, threads, () => filterGradModel(p, form), [["x", x, xDims], ["dy", dy, dyDims]], ["dw", dw, dwDims]);
    return true;
  },
};

/**
 * onnxruntime-node's kernels where it is installed (and STAGECRAFT_NATIVE is not 0), else null:
 * found, not loaded (its binding loads when a shape first wins, `matmulWins`).
 */
export function loadOrtNativeKernels(): NativeKernels | null {
  return config.native && onnxRuntimeInstalled() ? ortNativeKernels : null;
}
