/**
 * 2-D pooling (NCHW) on the GPU, with the CPU's semantics (backends/cpu/pool.ts): windows are
 * clipped to the image, so padding never contributes a value (max) or a count (average); a window's
 * max is its first NaN, else the first occurrence of its largest value.
 *
 * Forward kernels run a thread per output. The gradients run a thread per input element that sums
 * over the windows covering it (a gather: deterministic, no atomics).
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";

export interface PoolParams {
  planes: number;
  inH: number; inW: number;
  outH: number; outW: number;
  kH: number; kW: number;
  strideH: number; strideW: number;
  padTop: number; padLeft: number;
}

function params(c: PoolParams, n: number): Params {
  return new Params()
    .u32("n", n).u32("H", c.inH).u32("W", c.inW).u32("OH", c.outH).u32("OW", c.outW)
    .i32("kH", c.kH).i32("kW", c.kW).i32("sH", c.strideH).i32("sW", c.strideW).i32("pT", c.padTop).i32("pL", c.padLeft);
}

/** The clipped window of output (oh, ow): rows hs..he-1, columns ws..we-1 of the plane. */
const WINDOW = `
struct Win { hs: i32, he: i32, ws: i32, we: i32 }
fn window(oh: i32, ow: i32) -> Win {
  let h0 = oh * p.sH - p.pT;
  let w0 = ow * p.sW - p.pL;
  return Win(max(h0, 0), min(i32(p.H), h0 + p.kH), max(w0, 0), min(i32(p.W), w0 + p.kW));
}`;

/** argmax_in(xb, win): index within the plane of the window's max (first NaN, else first largest). */
const ARGMAX = `
fn argmax_in(xb: u32, w: Win) -> u32 {
  var best = u32(w.hs) * p.W + u32(w.ws);
  var m = x[xb + best];
  if (is_nan(m)) { return best; }
  for (var h = w.hs; h < w.he; h++) {
    for (var c = w.ws; c < w.we; c++) {
      let at = u32(h) * p.W + u32(c);
      let v = x[xb + at];
      if (is_nan(v)) { return at; }
      if (v > m) { m = v; best = at; }
    }
  }
  return best;
}`;

/** Output element i -> (plane, oh, ow) and the plane's first input element. */
const LOCATE_OUT = `  if (i >= p.n) { return; }
  let ohw = p.OH * p.OW;
  let plane = i / ohw;
  let q = i % ohw;
  let win = window(i32(q / p.OW), i32(q % p.OW));
  let xb = plane * p.H * p.W;`;

function source(s: string, decl: [string, "r" | "w", string][], extra: string, body: string): { source: string; layout: string } {
  const b = bindings(decl);
  return { source: `${SCALAR_HELPERS}${b.wgsl}${params({} as PoolParams, 0).wgsl(decl.length)}${WINDOW}${extra}\n${linearMain(WG, body)}`, layout: b.layout + "u" };
}

function go(dev: KernelDevice, make: () => { source: string; layout: string }, label: string, buffers: number[], c: PoolParams, n: number): void {
  launch(dev, lazy(`pool|${label}`, () => ({ ...make(), label })), buffers, params(c, n), grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}

export function maxPool2d(dev: KernelDevice, x: GpuArray, c: PoolParams, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "maxPool2d");
  const out = allocArray(dev, outShape, dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  go(dev, () => source(s, [["x", "r", s], ["y", "w", s]], ARGMAX, `${LOCATE_OUT}\n  y[i] = x[xb + argmax_in(xb, win)];`), "max_pool2d", [x.id, out.id], c, n);
  return out;
}

/** maxPool2dGradGrad: out[window] = g at the window's argmax in x. */
export function maxPool2dGather(dev: KernelDevice, x: GpuArray, g: GpuArray, c: PoolParams, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "maxPool2dGradGrad");
  const out = allocArray(dev, outShape, dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  go(dev, () => source(s, [["x", "r", s], ["g", "r", s], ["y", "w", s]], ARGMAX, `${LOCATE_OUT}\n  y[i] = g[xb + argmax_in(xb, win)];`), "max_pool2d_gather", [x.id, g.id, out.id], c, n);
  return out;
}

export function avgPool2d(dev: KernelDevice, x: GpuArray, c: PoolParams, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "avgPool2d");
  const out = allocArray(dev, outShape, dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  const body = `${LOCATE_OUT}
  var sum = 0.0;
  for (var h = win.hs; h < win.he; h++) { for (var w = win.ws; w < win.we; w++) { sum += x[xb + u32(h) * p.W + u32(w)]; } }
  y[i] = sum / f32((win.he - win.hs) * (win.we - win.ws));`;
  go(dev, () => source(s, [["x", "r", s], ["y", "w", s]], "", body), "avg_pool2d", [x.id, out.id], c, n);
  return out;
}

/** For input element i: the range of window rows/columns covering it (oh0..oh1, ow0..ow1 inclusive). */
const LOCATE_IN = `  if (i >= p.n) { return; }
  let hw = p.H * p.W;
  let plane = i / hw;
  let q = i % hw;
  let ih = i32(q / p.W);
  let iw = i32(q % p.W);
  let xb = plane * hw;
  let yb = plane * p.OH * p.OW;
  // windows oh with oh*sH - pT <= ih < oh*sH - pT + kH
  let oh0 = max(0, (ih + p.pT - p.kH + p.sH) / p.sH);
  let oh1 = min(i32(p.OH) - 1, (ih + p.pT) / p.sH);
  let ow0 = max(0, (iw + p.pL - p.kW + p.sW) / p.sW);
  let ow1 = min(i32(p.OW) - 1, (iw + p.pL) / p.sW);`;
// (ih + pT - kH + sH) / sH is ceil((ih + pT - kH + 1) / sH) for a non-negative numerator; a negative
// one truncates toward zero, giving a value <= 0 that max(0, ...) fixes.

/** maxPool2dGrad: dx[i] = sum of dy over the windows whose argmax is i. */
export function maxPool2dScatter(dev: KernelDevice, x: GpuArray, dy: GpuArray, c: PoolParams, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "maxPool2dGrad");
  const out = allocArray(dev, outShape, dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  const body = `${LOCATE_IN}
  var sum = 0.0;
  for (var oh = oh0; oh <= oh1; oh++) {
    for (var ow = ow0; ow <= ow1; ow++) {
      if (argmax_in(xb, window(oh, ow)) == u32(q)) { sum += dy[yb + u32(oh) * p.OW + u32(ow)]; }
    }
  }
  dx[i] = sum;`;
  go(dev, () => source(s, [["x", "r", s], ["dy", "r", s], ["dx", "w", s]], ARGMAX, body), "max_pool2d_grad", [x.id, dy.id, out.id], c, n);
  return out;
}

/** avgPool2dGrad: dx[i] = sum over covering windows of dy / the window's count. */
export function avgPool2dScatter(dev: KernelDevice, dy: GpuArray, c: PoolParams, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "avgPool2dGrad");
  const out = allocArray(dev, outShape, dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  const body = `${LOCATE_IN}
  var sum = 0.0;
  for (var oh = oh0; oh <= oh1; oh++) {
    for (var ow = ow0; ow <= ow1; ow++) {
      let w = window(oh, ow);
      sum += dy[yb + u32(oh) * p.OW + u32(ow)] / f32((w.he - w.hs) * (w.we - w.ws));
    }
  }
  dx[i] = sum;`;
  go(dev, () => source(s, [["dy", "r", s], ["dx", "w", s]], "", body), "avg_pool2d_grad", [dy.id, out.id], c, n);
  return out;
}
