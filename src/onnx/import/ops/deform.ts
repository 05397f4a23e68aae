/**
 * Bilinear sampling ops: DeformConv and RoiAlign.
 *
 * DeformConv (2-D): each kernel tap reads the input at its regular position plus a learned
 * offset, by bilinear interpolation (corners outside the image count as zero), scaled by an
 * optional mask; the sampled columns are then multiplied by the weights per group. Built from
 * floor, gatherElements and matmul, so it differentiates in X, W, the offsets and the mask.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import { hostCall } from "../../../staging/host.js";
import { AllocationError, IndexError } from "../../../core/errors.js";
import { spec } from "../../../staging/signature.js";

/**
 * Bilinear samples of x [N, C, H, W] at positions py, px [N, G, P] (channels split into G groups,
 * each group sampled at its own positions) -> [N, C, P]; a corner outside the image adds zero.
 */
export function bilinearSample(x: Tensor, py: Tensor, px: Tensor, groups: number): Tensor {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const P = py.shape[2]!;
  const perGroup = C / groups;
  const flat = ops.reshape(x, [N, C, H * W]);
  const y0 = ops.floor(py);
  const x0 = ops.floor(px);
  const ly = ops.sub(py, y0);
  const lx = ops.sub(px, x0);
  let sum: Tensor | null = null;
  for (const [dy, dx] of [[0, 0], [0, 1], [1, 0], [1, 1]] as const) {
    const yc = dy === 0 ? y0 : ops.add(y0, 1);
    const xc = dx === 0 ? x0 : ops.add(x0, 1);
    const inside = ops.logicalAnd(ops.logicalAnd(ops.greaterEqual(yc, 0), ops.less(yc, H)), ops.logicalAnd(ops.greaterEqual(xc, 0), ops.less(xc, W)));
    const weight = ops.mul(ops.mul(dy === 0 ? ops.sub(1, ly) : ly, dx === 0 ? ops.sub(1, lx) : lx), ops.cast(inside, x.dtype));
    // Out-of-image corners read position 0 (their weight is zero).
    const index = ops.where(inside, ops.add(ops.mul(yc, W), xc), ops.zerosLike(yc));
    const perChannel = (t: Tensor): Tensor => ops.reshape(ops.broadcastTo(ops.expandDims(t, 2), [N, groups, perGroup, P]), [N, C, P]);
    const values = ops.gatherElements(flat, ops.cast(perChannel(index), "int32"), 2);
    const term = ops.mul(values, perChannel(weight));
    sum = sum === null ? term : ops.add(sum, term);
  }
  return sum!;
}

onnxOp("DeformConv", {
  run(n) {
    const x = n.input(0);
    const w = n.input(1);
    const offset = n.input(2);
    const bias = n.optional(3);
    const mask = n.optional(4);
    if (x.rank !== 4 || w.rank !== 4) throw n.unsupported(`only 2-D DeformConv is supported (input of shape [${x.shape.join(", ")}])`);
    const [N, C, H, W] = x.shape as [number, number, number, number];
    const [M, Cg, kH, kW] = w.shape as [number, number, number, number];
    const group = n.int("group", 1);
    const offsetGroups = n.int("offset_group", 1);
    const kernel = n.ints("kernel_shape", [kH, kW]);
    if (kernel[0] !== kH || kernel[1] !== kW) throw n.fail(`kernel_shape [${kernel.join(", ")}] does not match the weight [${w.shape.join(", ")}]`);
    if (group < 1 || C % group !== 0 || M % group !== 0 || Cg !== C / group) throw n.fail(`group ${group} does not fit ${C} input channels, weight [${w.shape.join(", ")}]`);
    if (offsetGroups < 1 || C % offsetGroups !== 0) throw n.fail(`offset_group ${offsetGroups} does not divide ${C} channels`);
    const [sH, sW] = n.ints("strides", [1, 1]) as [number, number];
    const [dH, dW] = n.ints("dilations", [1, 1]) as [number, number];
    const [pT, pL, pB, pR] = n.ints("pads", [0, 0, 0, 0]) as [number, number, number, number];
    const oH = Math.floor((H + pT + pB - ((kH - 1) * dH + 1)) / sH) + 1;
    const oW = Math.floor((W + pL + pR - ((kW - 1) * dW + 1)) / sW) + 1;
    const K = kH * kW;
    const L = oH * oW;
    if (oH < 1 || oW < 1) throw n.fail(`the kernel does not fit the padded input [${H}, ${W}]`);
    if (offset.rank !== 4 || offset.shape[0] !== N || offset.shape[1] !== offsetGroups * 2 * K || offset.shape[2] !== oH || offset.shape[3] !== oW) {
      throw n.fail(`offset has shape [${offset.shape.join(", ")}], expected [${N}, ${offsetGroups * 2 * K}, ${oH}, ${oW}]`);
    }
    if (mask !== null && (mask.rank !== 4 || mask.shape[0] !== N || mask.shape[1] !== offsetGroups * K || mask.shape[2] !== oH || mask.shape[3] !== oW)) {
      throw n.fail(`mask has shape [${mask.shape.join(", ")}], expected [${N}, ${offsetGroups * K}, ${oH}, ${oW}]`);
    }
    n.checkShape([N, C, K, L]);
    // Regular tap positions [K, L] (trace-time constants), plus the offsets [N, G, K, L].
    const baseY: number[] = [];
    const baseX: number[] = [];
    for (let i = 0; i < kH; i++) for (let j = 0; j < kW; j++) for (let oh = 0; oh < oH; oh++) for (let ow = 0; ow < oW; ow++) {
      baseY.push(oh * sH - pT + i * dH);
      baseX.push(ow * sW - pL + j * dW);
    }
    const pairs = ops.reshape(offset, [N, offsetGroups, K, 2, L]);
    const part = (p: number) => ops.squeeze(ops.slice(pairs, [0, 0, 0, p, 0], [N, offsetGroups, K, p + 1, L]), 3);
    const py = ops.reshape(ops.add(part(0), ops.tensor(baseY, x.dtype, [1, 1, K, L])), [N, offsetGroups, K * L]);
    const px = ops.reshape(ops.add(part(1), ops.tensor(baseX, x.dtype, [1, 1, K, L])), [N, offsetGroups, K * L]);
    let cols = ops.reshape(bilinearSample(x, py, px, offsetGroups), [N, offsetGroups, C / offsetGroups, K, L]);
    if (mask !== null) cols = ops.mul(cols, ops.reshape(mask, [N, offsetGroups, 1, K, L]));
    // [N, group, Cg * K, L] times the weights [group, M / group, Cg * K]
    const grouped = ops.reshape(cols, [N, group, Cg * K, L]);
    const weights = ops.reshape(w, [1, group, M / group, Cg * K]);
    let y = ops.reshape(ops.matmul(weights, grouped), [N, M, oH, oW]);
    if (bias !== null) y = ops.add(y, ops.reshape(bias, [1, M, 1, 1]));
    return y;
  },
});

/**
 * The corner reads of RoiAlign's samples: for each roi, output cell and sample (up to `most`
 * per cell, padding ones weighted 0 and flagged), four flat positions into x [N * H * W] and
 * their bilinear weights (onnxruntime's rules: samples beyond one pixel outside are zero,
 * coordinates clamp to the image). Returns [positions, weights, valid] of shape [R, oh, ow, most, 4].
 */
function roiSamples(rois: Tensor, batch: Tensor, a: { N: number; H: number; W: number; oh: number; ow: number; ratio: number; scale: number; halfPixel: boolean }): Tensor[] {
  const r = Array.from(rois.dataSync(), Number);
  const b = Array.from(batch.dataSync(), Number);
  const R = b.length;
  const geometry = Array.from({ length: R }, (_, i) => {
    if (!(b[i]! >= 0 && b[i]! < a.N)) throw new IndexError(`batch index ${b[i]} of roi ${i} is outside [0, ${a.N})`, "RoiAlign");
    const off = a.halfPixel ? 0.5 : 0;
    const [x1, y1, x2, y2] = [r[4 * i]! * a.scale - off, r[4 * i + 1]! * a.scale - off, r[4 * i + 2]! * a.scale - off, r[4 * i + 3]! * a.scale - off];
    let [rw, rh] = [x2 - x1, y2 - y1];
    if (!a.halfPixel) [rw, rh] = [Math.max(rw, 1), Math.max(rh, 1)];
    const [bh, bw] = [rh / a.oh, rw / a.ow];
    const gh = a.ratio > 0 ? a.ratio : Math.ceil(rh / a.oh);
    const gw = a.ratio > 0 ? a.ratio : Math.ceil(rw / a.ow);
    return { x1, y1, bh, bw, gh: Math.max(gh, 0), gw: Math.max(gw, 0) };
  });
  const most = Math.max(1, ...geometry.map((g) => g.gh * g.gw));
  const cells = R * a.oh * a.ow * most * 4;
  if (!(cells <= 2 ** 28)) throw new AllocationError(`${cells} sample reads (rois of ${most} samples per output cell) are more than 2^28`, "RoiAlign");
  const pos = new Array<number>(cells).fill(0);
  const wts = new Array<number>(cells).fill(0);
  const valid = new Array<number>(cells).fill(0);
  geometry.forEach((g, i) => {
    const count = Math.max(g.gh * g.gw, 1);
    for (let ph = 0; ph < a.oh; ph++) for (let pw = 0; pw < a.ow; pw++) {
      let s = 0;
      for (let iy = 0; iy < g.gh; iy++) for (let ix = 0; ix < g.gw; ix++, s++) {
        let y = g.y1 + ph * g.bh + ((iy + 0.5) * g.bh) / g.gh;
        let x = g.x1 + pw * g.bw + ((ix + 0.5) * g.bw) / g.gw;
        const at = ((((i * a.oh + ph) * a.ow + pw) * most) + s) * 4;
        valid.fill(1, at, at + 4);
        if (y < -1 || y > a.H || x < -1 || x > a.W) continue; // reads nothing (weights 0)
        y = Math.max(y, 0);
        x = Math.max(x, 0);
        let yl = Math.floor(y), xl = Math.floor(x), yh: number, xh: number;
        if (yl >= a.H - 1) [yl, yh, y] = [a.H - 1, a.H - 1, a.H - 1];
        else yh = yl + 1;
        if (xl >= a.W - 1) [xl, xh, x] = [a.W - 1, a.W - 1, a.W - 1];
        else xh = xl + 1;
        const [ly, lx] = [y - yl, x - xl];
        const base = b[i]! * a.H * a.W;
        const corners = [[yl, xl, (1 - ly) * (1 - lx)], [yl, xh, (1 - ly) * lx], [yh, xl, ly * (1 - lx)], [yh, xh, ly * lx]] as const;
        corners.forEach(([cy, cx, w], c) => {
          pos[at + c] = base + cy * a.W + cx;
          wts[at + c] = w / count;
        });
      }
    }
  });
  const shape = [R, a.oh, a.ow, most, 4];
  return [ops.tensor(pos, "int32", shape), ops.tensor(wts, "float64", shape), ops.tensor(valid, "bool", shape)];
}

/**
 * RoiAlign: each roi's output cells average (or take the max of) bilinear samples of its batch
 * entry's feature map. Sample positions come from the rois' values (a host call when they are
 * only known at run time); the reads are a gather from x, so the result differentiates in x.
 * Max mode takes, as onnxruntime does, the largest weighted corner read of any sample.
 */
onnxOp("RoiAlign", {
  run(n) {
    const x = n.input(0);
    const rois = n.input(1);
    const batch = n.input(2);
    if (x.rank !== 4) throw n.fail(`X must be [N, C, H, W], got shape [${x.shape.join(", ")}]`);
    if (rois.rank !== 2 || rois.shape[1] !== 4 || batch.rank !== 1 || batch.shape[0] !== rois.shape[0]) throw n.fail(`rois must be [R, 4] with batch_indices [R], got [${rois.shape.join(", ")}] and [${batch.shape.join(", ")}]`);
    const [N, C, H, W] = x.shape as [number, number, number, number];
    const mode = n.string("mode", "avg");
    if (mode !== "avg" && mode !== "max") throw n.fail(`unknown mode ${JSON.stringify(mode)} (avg or max)`);
    const transform = n.string("coordinate_transformation_mode", n.opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (transform !== "half_pixel" && transform !== "output_half_pixel") throw n.fail(`unknown coordinate_transformation_mode ${JSON.stringify(transform)}`);
    const a = { N, H, W, oh: n.int("output_height", 1), ow: n.int("output_width", 1), ratio: n.int("sampling_ratio", 0), scale: n.float("spatial_scale", 1), halfPixel: transform === "half_pixel" };
    if (a.oh < 1 || a.ow < 1 || a.ratio < 0) throw n.fail(`output_height ${a.oh}, output_width ${a.ow} and sampling_ratio ${a.ratio} must be positive (the ratio may be 0)`);
    const R = rois.shape[0]!;
    const run = (rt: Tensor, bt: Tensor) => roiSamples(rt, bt, a);
    const [pos, wts, valid] = (rois.isSymbolic || batch.isSymbolic
      ? hostCall(run, [spec([R, a.oh, a.ow, null, 4], "int32"), spec([R, a.oh, a.ow, null, 4], "float64"), spec([R, a.oh, a.ow, null, 4], "bool")], rois, batch)
      : run(rois, batch)) as Tensor[];
    const rows = ops.reshape(ops.transpose(x, [0, 2, 3, 1]), [N * H * W, C]);
    const reads = ops.gather(rows, pos!, 0); // [R, oh, ow, S, 4, C]
    const weighted = ops.mul(reads, ops.expandDims(ops.cast(wts!, x.dtype), -1));
    let y: Tensor;
    if (mode === "avg") y = ops.sum(weighted, [3, 4]);
    else {
      // Padding samples (beyond a roi's own grid) must never be the max.
      const penalty = ops.where(valid!, ops.scalar(0, x.dtype), ops.scalar(-Infinity, x.dtype)); // [R, oh, ow, S, 4]
      const masked = ops.add(weighted, ops.expandDims(penalty, -1));
      // onnxruntime scales the max by the sample count it divided the weights by: undo it.
      const counts = ops.sum(ops.cast(valid!, x.dtype), [3, 4]); // 4 * count per cell [R, oh, ow]
      // A cell without samples (an empty roi) is 0, as in avg mode.
      const scaleBack = ops.expandDims(ops.div(counts, 4), -1);
      y = ops.where(ops.greater(scaleBack, 0), ops.mul(ops.max(masked, [3, 4]), scaleBack), ops.scalar(0, x.dtype));
    }
    return ops.transpose(y, [0, 3, 1, 2]);
  },
});
