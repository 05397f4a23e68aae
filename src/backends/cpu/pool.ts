// 2-D pooling (NCHW) for the CPU backend: max and average, forward and gradients.
// Every (image, channel) plane is pooled independently; windows are clipped to the image, so
// padding never contributes a value (max) or a count (average).
import type { TypedArray } from "../../core/dtype.js";

export interface Pool2dParams {
  /** N * C: the number of independent planes. */
  planes: number;
  inH: number; inW: number;
  outH: number; outW: number;
  kH: number; kW: number;
  strideH: number; strideW: number;
  padTop: number; padLeft: number;
}

/**
 * Index (within its plane) of the maximum of window (oh, ow): the first NaN if there is one,
 * else the first (row-major) occurrence of the largest value. The window is clipped to the
 * plane and, for valid parameters, never empty.
 */
function windowArgmax(x: TypedArray, base: number, p: Pool2dParams, oh: number, ow: number): number {
  const h0 = oh * p.strideH - p.padTop, w0 = ow * p.strideW - p.padLeft;
  const hs = h0 < 0 ? 0 : h0, he = Math.min(p.inH, h0 + p.kH);
  const ws = w0 < 0 ? 0 : w0, we = Math.min(p.inW, w0 + p.kW);
  let best = hs * p.inW + ws;
  let m = x[base + best]!;
  if (m !== m) return best;
  for (let h = hs; h < he; h++) {
    const row = h * p.inW;
    for (let w = ws; w < we; w++) {
      const v = x[base + row + w]!;
      if (v > m) {
        m = v;
        best = row + w;
      } else if (v !== v) {
        return row + w;
      }
    }
  }
  return best;
}

/** out[plane, oh, ow] = max of the window (NaN if the window holds a NaN). */
export function maxPool2d(x: TypedArray, out: TypedArray, p: Pool2dParams): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      const h0 = oh * p.strideH - p.padTop;
      const hs = h0 < 0 ? 0 : h0, he = Math.min(p.inH, h0 + p.kH);
      for (let ow = 0; ow < p.outW; ow++) {
        const w0 = ow * p.strideW - p.padLeft;
        const ws = w0 < 0 ? 0 : w0, we = Math.min(p.inW, w0 + p.kW);
        let m = -Infinity;
        let nan = false;
        for (let h = hs; h < he && !nan; h++) {
          const row = xb + h * p.inW;
          for (let w = ws; w < we; w++) {
            const v = x[row + w]!;
            if (v > m) m = v;
            else if (v !== v) {
              nan = true;
              break;
            }
          }
        }
        out[ob + oh * p.outW + ow] = nan ? NaN : m;
      }
    }
  }
}

/** dx (zeroed here) += dy routed to each window's argmax in x. */
export function maxPool2dScatter(x: TypedArray, dy: TypedArray, dx: TypedArray, p: Pool2dParams): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  dx.fill(0, 0, p.planes * inPlane);
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      for (let ow = 0; ow < p.outW; ow++) {
        dx[xb + windowArgmax(x, xb, p, oh, ow)] += dy[ob + oh * p.outW + ow]!;
      }
    }
  }
}

/** out[window] = g at the window's argmax in x (the adjoint of maxPool2dScatter in dy). */
export function maxPool2dGather(x: TypedArray, g: TypedArray, out: TypedArray, p: Pool2dParams): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      for (let ow = 0; ow < p.outW; ow++) {
        out[ob + oh * p.outW + ow] = g[xb + windowArgmax(x, xb, p, oh, ow)]!;
      }
    }
  }
}

/** out[window] = mean of the window's elements inside the image (padding is not counted). */
export function avgPool2d(x: TypedArray, out: TypedArray, p: Pool2dParams): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      const h0 = oh * p.strideH - p.padTop;
      const hs = h0 < 0 ? 0 : h0, he = Math.min(p.inH, h0 + p.kH);
      for (let ow = 0; ow < p.outW; ow++) {
        const w0 = ow * p.strideW - p.padLeft;
        const ws = w0 < 0 ? 0 : w0, we = Math.min(p.inW, w0 + p.kW);
        let s = 0;
        for (let h = hs; h < he; h++) {
          const row = xb + h * p.inW;
          for (let w = ws; w < we; w++) s += x[row + w]!;
        }
        out[ob + oh * p.outW + ow] = s / ((he - hs) * (we - ws));
      }
    }
  }
}

/** dx (zeroed here): each window spreads dy / count evenly over its elements inside the image. */
export function avgPool2dScatter(dy: TypedArray, dx: TypedArray, p: Pool2dParams): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  dx.fill(0, 0, p.planes * inPlane);
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      const h0 = oh * p.strideH - p.padTop;
      const hs = h0 < 0 ? 0 : h0, he = Math.min(p.inH, h0 + p.kH);
      for (let ow = 0; ow < p.outW; ow++) {
        const w0 = ow * p.strideW - p.padLeft;
        const ws = w0 < 0 ? 0 : w0, we = Math.min(p.inW, w0 + p.kW);
        const g = dy[ob + oh * p.outW + ow]! / ((he - hs) * (we - ws));
        for (let h = hs; h < he; h++) {
          const row = xb + h * p.inW;
          for (let w = ws; w < we; w++) dx[row + w] += g;
        }
      }
    }
  }
}
