// 2-D convolution (NCHW) for the CPU backend, forward and both gradients.
// float32: native kernels past their crossover where they are installed (native.ts:
// onnxruntime-node's); otherwise im2col into the shared wasm memory, then one SIMD sgemm per
// (image, group), run on the worker pool when big; backprop-input scatters the column gradient back with col2im.
// float64 (and float32 when wasm is unavailable): direct TS loops.
import type { TypedArray } from "../../core/dtype.js";
import { getWasmRuntime, type WasmRuntime } from "./wasm-runtime.js";
import { sgemmBatch } from "./worker-pool.js";
import { tryNativeConv2d, tryNativeConv2dBackpropFilter, tryNativeConv2dBackpropInput } from "./native.js";

export interface Conv2dParams {
  batch: number; inC: number; inH: number; inW: number;
  outC: number; kH: number; kW: number; outH: number; outW: number;
  strideH: number; strideW: number; padTop: number; padLeft: number;
  dilationH: number; dilationW: number; groups: number;
}

/** Upper bound on the im2col buffer (floats); larger batches are processed in chunks. */
const COL_LIMIT = 1 << 24;

/** NCHW conv2d forward: x [N,C,H,W], w [outC, inC/groups, kH, kW] -> out [N, outC, outH, outW] (zero padding). */
export function conv2d(dtype: "float32" | "float64", x: TypedArray, w: TypedArray, out: TypedArray, p: Conv2dParams): void {
  if (dtype === "float32" && tryNativeConv2d(x as Float32Array, w as Float32Array, out as Float32Array, p)) return;
  const rt = dtype === "float32" ? getWasmRuntime() : null;
  if (rt !== null) {
    try { return conv2dWasm(rt, x, w, out, p); } catch { /* fall back to loops */ }
  }
  conv2dLoop(x, w, out, p);
}

/** Gradient w.r.t. the input (= conv2dTranspose): dy [N,outC,outH,outW], w -> dx [N,inC,inH,inW]. */
export function conv2dBackpropInput(dtype: "float32" | "float64", dy: TypedArray, w: TypedArray, dx: TypedArray, p: Conv2dParams): void {
  if (dtype === "float32" && tryNativeConv2dBackpropInput(dy as Float32Array, w as Float32Array, dx as Float32Array, p)) return;
  const rt = dtype === "float32" ? getWasmRuntime() : null;
  if (rt !== null) {
    try { return backpropInputWasm(rt, dy, w, dx, p); } catch { /* fall back to loops */ }
  }
  backpropInputLoop(dy, w, dx, p);
}

/** Gradient w.r.t. the filter: x, dy -> dw [outC, inC/groups, kH, kW]. */
export function conv2dBackpropFilter(dtype: "float32" | "float64", x: TypedArray, dy: TypedArray, dw: TypedArray, p: Conv2dParams): void {
  if (dtype === "float32" && tryNativeConv2dBackpropFilter(x as Float32Array, dy as Float32Array, dw as Float32Array, p)) return;
  const rt = dtype === "float32" ? getWasmRuntime() : null;
  if (rt !== null) {
    try { return backpropFilterWasm(rt, x, dy, dw, p); } catch { /* fall back to loops */ }
  }
  backpropFilterLoop(x, dy, dw, p);
}

// ---- shapes ---------------------------------------------------------------------------------

interface Dims { cg: number; ocg: number; K: number; P: number; HW: number }
function dims(p: Conv2dParams): Dims {
  const cg = p.inC / p.groups, ocg = p.outC / p.groups;
  return { cg, ocg, K: cg * p.kH * p.kW, P: p.outH * p.outW, HW: p.inH * p.inW };
}

// ---- im2col / col2im ------------------------------------------------------------------------

/**
 * Writes the K x P column matrix of image `xo` (offset of its first element in x), group g, into
 * dst starting at `d`, rows `ld` apart. Row (c, ki, kj), column (oh, ow) holds
 * x[c, oh*sH - padTop + ki*dH, ow*sW - padLeft + kj*dW] (0 outside the image).
 */
function im2col(x: TypedArray, xo: number, p: Conv2dParams, g: number, dst: Float32Array, d: number, ld: number): void {
  const { cg, HW } = dims(p);
  const { inH, inW, outH, outW, kH, kW, strideH: sH, strideW: sW, dilationH: dH, dilationW: dW } = p;
  let row = d;
  for (let c = 0; c < cg; c++) {
    const xc = xo + (g * cg + c) * HW;
    for (let ki = 0; ki < kH; ki++) {
      for (let kj = 0; kj < kW; kj++, row += ld) {
        const ow0 = p.padLeft - kj * dW; // iw = ow*sW - ow0
        // valid ow range: 0 <= ow*sW - ow0 < inW
        const lo = Math.max(0, Math.ceil(ow0 / sW)), hi = Math.min(outW, Math.ceil((inW + ow0) / sW));
        let o = row;
        for (let oh = 0; oh < outH; oh++, o += outW) {
          const ih = oh * sH - p.padTop + ki * dH;
          if (ih < 0 || ih >= inH || lo >= hi) { dst.fill(0, o, o + outW); continue; }
          if (lo > 0) dst.fill(0, o, o + lo);
          const xr = xc + ih * inW - ow0;
          if (sW === 1) dst.set(x.subarray(xr + lo, xr + hi), o + lo);
          else for (let ow = lo; ow < hi; ow++) dst[o + ow] = x[xr + ow * sW];
          if (hi < outW) dst.fill(0, o + hi, o + outW);
        }
      }
    }
  }
}

/** Adds the K x P column matrix at src[s] (rows `ld` apart) back into image dxo, group g. */
function col2im(src: Float32Array, s: number, ld: number, p: Conv2dParams, g: number, dx: TypedArray, dxo: number): void {
  const { cg, HW } = dims(p);
  const { inH, inW, outH, outW, kH, kW, strideH: sH, strideW: sW, dilationH: dH, dilationW: dW } = p;
  let row = s;
  for (let c = 0; c < cg; c++) {
    const xc = dxo + (g * cg + c) * HW;
    for (let ki = 0; ki < kH; ki++) {
      for (let kj = 0; kj < kW; kj++, row += ld) {
        const ow0 = p.padLeft - kj * dW;
        const lo = Math.max(0, Math.ceil(ow0 / sW)), hi = Math.min(outW, Math.ceil((inW + ow0) / sW));
        let o = row;
        for (let oh = 0; oh < outH; oh++, o += outW) {
          const ih = oh * sH - p.padTop + ki * dH;
          if (ih < 0 || ih >= inH) continue;
          const xr = xc + ih * inW - ow0;
          for (let ow = lo; ow < hi; ow++) dx[xr + ow * sW] += src[o + ow];
        }
      }
    }
  }
}

/** Images per chunk so that `floatsPerImage * nb` stays under COL_LIMIT (at least 1). */
function chunk(p: Conv2dParams, floatsPerImage: number): number {
  return Math.max(1, Math.min(p.batch, Math.floor(COL_LIMIT / Math.max(1, floatsPerImage))));
}

// ---- float32 via wasm sgemm -----------------------------------------------------------------

function conv2dWasm(rt: WasmRuntime, x: TypedArray, w: TypedArray, out: TypedArray, p: Conv2dParams): void {
  const { ocg, K, P, HW } = dims(p);
  const G = p.groups, inImg = p.inC * HW, outImg = p.outC * P;
  const nb = chunk(p, G * K * P + outImg);
  for (let n0 = 0; n0 < p.batch; n0 += nb) {
    const cnt = Math.min(nb, p.batch - n0);
    rt.reset();
    const wp = rt.alloc(w.length * 4), col = rt.alloc(cnt * G * K * P * 4), op = rt.alloc(cnt * outImg * 4);
    const f = rt.f32();
    f.set(w, wp >>> 2);
    const A: number[] = [], B: number[] = [], C: number[] = [];
    for (let i = 0; i < cnt; i++) {
      for (let g = 0; g < G; g++) {
        const cp = col + ((i * G + g) * K * P) * 4;
        im2col(x, (n0 + i) * inImg, p, g, f, cp >>> 2, P);
        A.push(wp + g * ocg * K * 4); B.push(cp); C.push(op + (i * outImg + g * ocg * P) * 4);
      }
    }
    sgemmBatch(rt, A, B, C, ocg, P, K, K, P, P, false, false);
    out.set(rt.f32().subarray(op >>> 2, (op >>> 2) + cnt * outImg), n0 * outImg);
  }
}

function backpropInputWasm(rt: WasmRuntime, dy: TypedArray, w: TypedArray, dx: TypedArray, p: Conv2dParams): void {
  const { ocg, K, P, HW } = dims(p);
  const G = p.groups, inImg = p.inC * HW, outImg = p.outC * P;
  dx.fill(0, 0, p.batch * inImg);
  const nb = chunk(p, G * K * P + outImg);
  for (let n0 = 0; n0 < p.batch; n0 += nb) {
    const cnt = Math.min(nb, p.batch - n0);
    rt.reset();
    const wp = rt.alloc(w.length * 4), dyp = rt.alloc(cnt * outImg * 4), col = rt.alloc(cnt * G * K * P * 4);
    const f = rt.f32();
    f.set(w, wp >>> 2);
    f.set(dy.subarray(n0 * outImg, (n0 + cnt) * outImg), dyp >>> 2);
    const A: number[] = [], B: number[] = [], C: number[] = [];
    for (let i = 0; i < cnt; i++) {
      for (let g = 0; g < G; g++) {
        A.push(wp + g * ocg * K * 4); B.push(dyp + (i * outImg + g * ocg * P) * 4); C.push(col + ((i * G + g) * K * P) * 4);
      }
    }
    // dcol (K x P) = w_g^T (K x ocg) @ dy_g (ocg x P)
    sgemmBatch(rt, A, B, C, K, P, ocg, K, P, P, true, false);
    const f2 = rt.f32();
    for (let i = 0; i < cnt; i++) {
      for (let g = 0; g < G; g++) col2im(f2, (col >>> 2) + (i * G + g) * K * P, P, p, g, dx, (n0 + i) * inImg);
    }
  }
}

function backpropFilterWasm(rt: WasmRuntime, x: TypedArray, dy: TypedArray, dw: TypedArray, p: Conv2dParams): void {
  const { ocg, K, P, HW } = dims(p);
  const G = p.groups, inImg = p.inC * HW, outImg = p.outC * P;
  dw.fill(0, 0, p.outC * K);
  const nb = chunk(p, G * K * P + outImg);
  for (let n0 = 0; n0 < p.batch; n0 += nb) {
    const cnt = Math.min(nb, p.batch - n0), NP = cnt * P;
    rt.reset();
    // per group: dyT_g (ocg x cnt*P) and col_g (K x cnt*P), so the batch sum is one product
    const dyp = rt.alloc(G * ocg * NP * 4), col = rt.alloc(G * K * NP * 4), dwp = rt.alloc(p.outC * K * 4);
    const f = rt.f32();
    for (let i = 0; i < cnt; i++) {
      const img = (n0 + i) * outImg;
      for (let oc = 0; oc < p.outC; oc++) {
        f.set(dy.subarray(img + oc * P, img + (oc + 1) * P), (dyp >>> 2) + oc * NP + i * P);
      }
      for (let g = 0; g < G; g++) im2col(x, (n0 + i) * inImg, p, g, f, (col >>> 2) + g * K * NP + i * P, NP);
    }
    const A: number[] = [], B: number[] = [], C: number[] = [];
    for (let g = 0; g < G; g++) {
      A.push(dyp + g * ocg * NP * 4); B.push(col + g * K * NP * 4); C.push(dwp + g * ocg * K * 4);
    }
    // dw_g (ocg x K) = dyT_g (ocg x NP) @ col_g^T (NP x K)
    sgemmBatch(rt, A, B, C, ocg, K, NP, NP, NP, K, false, true);
    const f2 = rt.f32(), base = dwp >>> 2;
    for (let i = 0; i < p.outC * K; i++) dw[i] += f2[base + i];
  }
}

// ---- direct loops (float64, and the float32 fallback) ---------------------------------------

function conv2dLoop(x: TypedArray, w: TypedArray, out: TypedArray, p: Conv2dParams): void {
  const { cg, ocg, K, P, HW } = dims(p);
  for (let n = 0; n < p.batch; n++) {
    for (let oc = 0; oc < p.outC; oc++) {
      const g = Math.floor(oc / ocg), xb = (n * p.inC + g * cg) * HW, wb = oc * K, ob = (n * p.outC + oc) * P;
      for (let oh = 0; oh < p.outH; oh++) {
        for (let ow = 0; ow < p.outW; ow++) {
          let s = 0;
          for (let c = 0; c < cg; c++) {
            for (let ki = 0; ki < p.kH; ki++) {
              const ih = oh * p.strideH - p.padTop + ki * p.dilationH;
              if (ih < 0 || ih >= p.inH) continue;
              for (let kj = 0; kj < p.kW; kj++) {
                const iw = ow * p.strideW - p.padLeft + kj * p.dilationW;
                if (iw < 0 || iw >= p.inW) continue;
                s += x[xb + c * HW + ih * p.inW + iw] * w[wb + (c * p.kH + ki) * p.kW + kj];
              }
            }
          }
          out[ob + oh * p.outW + ow] = s;
        }
      }
    }
  }
}

/** Visits every (output element, input element, weight element) triple of the convolution. */
function forEachTap(p: Conv2dParams, f: (o: number, xi: number, wi: number) => void): void {
  const { cg, ocg, K, P, HW } = dims(p);
  for (let n = 0; n < p.batch; n++) {
    for (let oc = 0; oc < p.outC; oc++) {
      const g = Math.floor(oc / ocg), xb = (n * p.inC + g * cg) * HW, wb = oc * K, ob = (n * p.outC + oc) * P;
      for (let c = 0; c < cg; c++) {
        for (let ki = 0; ki < p.kH; ki++) {
          for (let kj = 0; kj < p.kW; kj++) {
            const wi = wb + (c * p.kH + ki) * p.kW + kj;
            for (let oh = 0; oh < p.outH; oh++) {
              const ih = oh * p.strideH - p.padTop + ki * p.dilationH;
              if (ih < 0 || ih >= p.inH) continue;
              for (let ow = 0; ow < p.outW; ow++) {
                const iw = ow * p.strideW - p.padLeft + kj * p.dilationW;
                if (iw < 0 || iw >= p.inW) continue;
                f(ob + oh * p.outW + ow, xb + c * HW + ih * p.inW + iw, wi);
              }
            }
          }
        }
      }
    }
  }
}

function backpropInputLoop(dy: TypedArray, w: TypedArray, dx: TypedArray, p: Conv2dParams): void {
  dx.fill(0, 0, p.batch * p.inC * p.inH * p.inW);
  forEachTap(p, (o, xi, wi) => { dx[xi] += dy[o] * w[wi]; });
}

function backpropFilterLoop(x: TypedArray, dy: TypedArray, dw: TypedArray, p: Conv2dParams): void {
  dw.fill(0, 0, p.outC * dims(p).K);
  forEachTap(p, (o, xi, wi) => { dw[wi] += dy[o] * x[xi]; });
}
