/**
 * 2-D convolution (NCHW) as implicit GEMMs on the tiled GEMM of matmul.ts: no im2col buffer, the
 * GEMM's loads compute the column matrix's elements from the image as they stage them. Per group g
 * (the batch dimension z of the GEMM):
 *
 * - forward:        out[n, g*ocg + o, p]   = sum_k w[g*ocg + o, k] * col(k, (n, p))
 *                   (M = outC/groups, N = batch * outH * outW, K = C/groups * kH * kW)
 * - input gradient: dx[n, g*cg + c, q]     = sum_(o,kh,kw) w[g*ocg + o, c, kh, kw] * dy[n, g*ocg + o, oh, ow]
 *                   over the (oh, ow) whose window covers q (M = C/groups, N = batch * H * W)
 * - filter gradient: dw[g*ocg + o, k]      = sum_(n,p) dy[n, g*ocg + o, p] * col(k, (n, p))
 *                   (M = outC/groups, N = C/groups * kH * kW, K = batch * outH * outW)
 *
 * Every output element is written by one thread (gathers, no atomics), so results are deterministic.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, launch, lazy, Params, storageType, type GpuArray } from "./common.js";
import { gemmSource, pickTile, type GemmOperand } from "./matmul.js";

export interface ConvParams {
  batch: number; inC: number; inH: number; inW: number;
  outC: number; kH: number; kW: number; outH: number; outW: number;
  strideH: number; strideW: number; padTop: number; padLeft: number;
  dilationH: number; dilationW: number; groups: number;
}

function convParams(c: ConvParams, M: number, N: number, K: number): Params {
  return new Params()
    .u32("M", M).u32("N", N).u32("K", K)
    .u32("B", c.batch).u32("C", c.inC).u32("H", c.inH).u32("W", c.inW)
    .u32("OC", c.outC).u32("kH", c.kH).u32("kW", c.kW).u32("OH", c.outH).u32("OW", c.outW)
    .i32("sH", c.strideH).i32("sW", c.strideW).i32("pT", c.padTop).i32("pL", c.padLeft)
    .i32("dH", c.dilationH).i32("dW", c.dilationW)
    .u32("cg", c.inC / c.groups).u32("ocg", c.outC / c.groups);
}

/** col(k, col): element (c, kh, kw) x (n, oh, ow) of group z's column matrix (0 in the padding). */
const COLUMN_FN = (s: string) => `
fn column(z: u32, col: u32, k: u32) -> ${s} {
  let khw = p.kH * p.kW;
  let c = k / khw; let r = k % khw; let kh = i32(r / p.kW); let kw = i32(r % p.kW);
  let ohw = p.OH * p.OW;
  let n = col / ohw; let q = col % ohw;
  let ih = i32(q / p.OW) * p.sH - p.pT + kh * p.dH;
  let iw = i32(q % p.OW) * p.sW - p.pL + kw * p.dW;
  if (ih < 0 || iw < 0 || ih >= i32(p.H) || iw >= i32(p.W)) { return ${s}(0); }
  return x[((n * p.C + z * p.cg + c) * p.H + u32(ih)) * p.W + u32(iw)];
}`;

function run(dev: KernelDevice, dtype: DType, label: string, decls: string, A: GemmOperand, B: GemmOperand, store: (r: string, c: string, v: string) => string, buffers: number[], params: Params, M: number, N: number, groups: number): void {
  const s = storageType(dtype, label);
  const tile = pickTile(M, N, dev.limits);
  const k = lazy(`${label}|${s}|${tile.BM}x${tile.BN}x${tile.BK}/${tile.TM}x${tile.TN}`, () => ({
    source: gemmSource(tile, s, `${decls}${params.wgsl(buffers.length)}`, "  let z = wid.z;", A, B, store),
    layout: "rrwu",
    label: `${label}_${tile.BM}x${tile.BN}`,
  }));
  launch(dev, k, buffers, params, [Math.ceil(N / tile.BN), Math.ceil(M / tile.BM), groups]);
}

/** conv2d: x [B, C, H, W], w [OC, C/g, kH, kW] -> [B, OC, OH, OW]. */
export function conv2d(dev: KernelDevice, x: GpuArray, w: GpuArray, c: ConvParams, outShape: readonly number[], dtype: DType): GpuArray {
  const out = allocArray(dev, outShape, dtype);
  const s = storageType(dtype, "conv2d");
  const M = c.outC / c.groups, N = c.batch * c.outH * c.outW, K = (c.inC / c.groups) * c.kH * c.kW;
  if (M * N === 0) return out;
  const decls = bindings([
    ["x", "r", s],
    ["w", "r", s],
    ["y", "w", s],
  ]).wgsl;
  run(
    dev, dtype, "conv2d", decls + COLUMN_FN(s),
    { fast: "k", load: (o, k) => `w[(z * p.ocg + ${o}) * p.K + ${k}]` },
    { fast: "mn", load: (col, k) => `column(z, ${col}, ${k})` },
    (o, col, v) => `let ohw = p.OH * p.OW; y[((${col} / ohw) * p.OC + z * p.ocg + ${o}) * ohw + ${col} % ohw] = ${v};`,
    [x.id, w.id, out.id], convParams(c, M, N, Math.max(K, 0)), M, N, c.groups,
  );
  return out;
}

/** The input gradient (conv2dTranspose): dy [B, OC, OH, OW], w [OC, C/g, kH, kW] -> dx [B, C, H, W]. */
export function conv2dBackpropInput(dev: KernelDevice, dy: GpuArray, w: GpuArray, c: ConvParams, outShape: readonly number[], dtype: DType): GpuArray {
  const out = allocArray(dev, outShape, dtype);
  const s = storageType(dtype, "conv2dTranspose");
  const M = c.inC / c.groups, N = c.batch * c.inH * c.inW, K = (c.outC / c.groups) * c.kH * c.kW;
  if (M * N === 0) return out;
  const decls =
    bindings([
      ["dy", "r", s],
      ["w", "r", s],
      ["dx", "w", s],
    ]).wgsl +
    `
// Element (o, kh, kw) x (n, ih, iw): dy at the window position whose tap (kh, kw) lands on (ih, iw).
fn taps(z: u32, col: u32, k: u32) -> ${s} {
  let khw = p.kH * p.kW;
  let o = k / khw; let r = k % khw; let kh = i32(r / p.kW); let kw = i32(r % p.kW);
  let hw = p.H * p.W;
  let n = col / hw; let q = col % hw;
  let th = i32(q / p.W) + p.pT - kh * p.dH;
  let tw = i32(q % p.W) + p.pL - kw * p.dW;
  if (th < 0 || tw < 0 || th % p.sH != 0 || tw % p.sW != 0) { return ${s}(0); }
  let oh = th / p.sH; let ow = tw / p.sW;
  if (oh >= i32(p.OH) || ow >= i32(p.OW)) { return ${s}(0); }
  return dy[((n * p.OC + z * p.ocg + o) * p.OH + u32(oh)) * p.OW + u32(ow)];
}`;
  run(
    dev, dtype, "conv2d_backprop_input", decls,
    // A(c, (o, kh, kw)) = w[z*ocg + o, c, kh, kw]
    { fast: "k", load: (ci, k) => `w[((z * p.ocg + ${k} / (p.kH * p.kW)) * p.cg + ${ci}) * p.kH * p.kW + ${k} % (p.kH * p.kW)]` },
    { fast: "mn", load: (col, k) => `taps(z, ${col}, ${k})` },
    (ci, col, v) => `let hw = p.H * p.W; dx[((${col} / hw) * p.C + z * p.cg + ${ci}) * hw + ${col} % hw] = ${v};`,
    [dy.id, w.id, out.id], convParams(c, M, N, K), M, N, c.groups,
  );
  return out;
}

/** The filter gradient: x [B, C, H, W], dy [B, OC, OH, OW] -> dw [OC, C/g, kH, kW]. */
export function conv2dBackpropFilter(dev: KernelDevice, x: GpuArray, dy: GpuArray, c: ConvParams, outShape: readonly number[], dtype: DType): GpuArray {
  const out = allocArray(dev, outShape, dtype);
  const s = storageType(dtype, "conv2dBackpropFilter");
  const M = c.outC / c.groups, N = (c.inC / c.groups) * c.kH * c.kW, K = c.batch * c.outH * c.outW;
  if (M * N === 0) return out;
  const decls =
    bindings([
      ["x", "r", s],
      ["dy", "r", s],
      ["dw", "w", s],
    ]).wgsl + COLUMN_FN(s);
  run(
    dev, dtype, "conv2d_backprop_filter", decls,
    // A(o, (n, p)) = dy[n, z*ocg + o, p]
    { fast: "k", load: (o, k) => `dy[((${k} / (p.OH * p.OW)) * p.OC + z * p.ocg + ${o}) * p.OH * p.OW + ${k} % (p.OH * p.OW)]` },
    // B((n, p), kidx) = column(kidx, (n, p))
    { fast: "k", load: (kidx, np) => `column(z, ${np}, ${kidx})` },
    (o, kidx, v) => `dw[(z * p.ocg + ${o}) * p.N + ${kidx}] = ${v};`,
    [x.id, dy.id, out.id], convParams(c, M, N, K), M, N, c.groups,
  );
  return out;
}
