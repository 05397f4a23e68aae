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
 * Calls `fn` for every output position of every plane with the window clipped to the image:
 * xb and o index the plane's first input element and the output element; rows hs..he-1 and
 * columns ws..we-1 of the plane are the window (never empty for valid parameters).
 */
function forEachWindow(p: Pool2dParams, fn: (xb: number, o: number, hs: number, he: number, ws: number, we: number) => void): void {
  const inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
  for (let c = 0; c < p.planes; c++) {
    const xb = c * inPlane, ob = c * outPlane;
    for (let oh = 0; oh < p.outH; oh++) {
      const h0 = oh * p.strideH - p.padTop;
      const hs = h0 < 0 ? 0 : h0, he = Math.min(p.inH, h0 + p.kH);
      for (let ow = 0; ow < p.outW; ow++) {
        const w0 = ow * p.strideW - p.padLeft;
        fn(xb, ob + oh * p.outW + ow, hs, he, w0 < 0 ? 0 : w0, Math.min(p.inW, w0 + p.kW));
      }
    }
  }
}

/**
 * Index (within its plane) of the maximum of a window: the first NaN if there is one, else
 * the first (row-major) occurrence of the largest value.
 */
function windowArgmax(x: TypedArray, xb: number, inW: number, hs: number, he: number, ws: number, we: number): number {
  let best = hs * inW + ws;
  let m = x[xb + best]!;
  if (m !== m) return best;
  for (let h = hs; h < he; h++) {
    const row = h * inW;
    for (let w = ws; w < we; w++) {
      const v = x[xb + row + w]!;
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
  forEachWindow(p, (xb, o, hs, he, ws, we) => {
    out[o] = x[xb + windowArgmax(x, xb, p.inW, hs, he, ws, we)]!;
  });
}

/** dx (zeroed here) += dy routed to each window's argmax in x. */
export function maxPool2dScatter(x: TypedArray, dy: TypedArray, dx: TypedArray, p: Pool2dParams): void {
  dx.fill(0, 0, p.planes * p.inH * p.inW);
  forEachWindow(p, (xb, o, hs, he, ws, we) => {
    dx[xb + windowArgmax(x, xb, p.inW, hs, he, ws, we)] += dy[o]!;
  });
}

/** out[window] = g at the window's argmax in x (the adjoint of maxPool2dScatter in dy). */
export function maxPool2dGather(x: TypedArray, g: TypedArray, out: TypedArray, p: Pool2dParams): void {
  forEachWindow(p, (xb, o, hs, he, ws, we) => {
    out[o] = g[xb + windowArgmax(x, xb, p.inW, hs, he, ws, we)]!;
  });
}

/** out[window] = mean of the window's elements inside the image (padding is not counted). */
export function avgPool2d(x: TypedArray, out: TypedArray, p: Pool2dParams): void {
  forEachWindow(p, (xb, o, hs, he, ws, we) => {
    let s = 0;
    for (let h = hs; h < he; h++) {
      const row = xb + h * p.inW;
      for (let w = ws; w < we; w++) s += x[row + w]!;
    }
    out[o] = s / ((he - hs) * (we - ws));
  });
}

/** dx (zeroed here): each window spreads dy / count evenly over its elements inside the image. */
export function avgPool2dScatter(dy: TypedArray, dx: TypedArray, p: Pool2dParams): void {
  dx.fill(0, 0, p.planes * p.inH * p.inW);
  forEachWindow(p, (xb, o, hs, he, ws, we) => {
    const g = dy[o]! / ((he - hs) * (we - ws));
    for (let h = hs; h < he; h++) {
      const row = xb + h * p.inW;
      for (let w = ws; w < we; w++) dx[row + w] += g;
    }
  });
}
