/**
 * DeformConv (2-D): each kernel tap reads the input at its regular position plus a learned
 * offset, by bilinear interpolation (corners outside the image count as zero), scaled by an
 * optional mask; the sampled columns are then multiplied by the weights per group. Built from
 * floor, gatherElements and matmul, so it differentiates in X, W, the offsets and the mask.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";

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
