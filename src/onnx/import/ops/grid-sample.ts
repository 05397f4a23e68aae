/**
 * ONNX GridSample (N-D): sampling X [N, C, d1..dk] at the normalized coordinates of grid
 * [N, o1..om, k] with nearest, (bi)linear or (bi)cubic interpolation and zeros, border or
 * reflection padding, following ONNX's reference step by step. The coordinates are data, so
 * the taps are computed with registry ops and read with gatherElements from X flattened to
 * [N, C, d1*..*dk]; the result is differentiable in X and (through the weights) in grid.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";

/** Reflects x into [lo, hi] by its nearer border until it lies inside (the reference's _gs_reflect). */
function reflect(x: Tensor, lo: number, hi: number): Tensor {
  const rng = hi - lo;
  const below = ops.less(x, lo);
  const above = ops.greater(x, hi);
  const dx = ops.where(below, ops.sub(lo, x), ops.sub(x, hi));
  const k = ops.floor(ops.div(dx, rng));
  const r = ops.sub(dx, ops.mul(k, rng));
  const even = ops.equal(ops.mod(k, 2), 0);
  const fromBelow = ops.where(even, ops.add(lo, r), ops.sub(hi, r));
  const fromAbove = ops.where(even, ops.sub(hi, r), ops.add(lo, r));
  return ops.where(below, fromBelow, ops.where(above, fromAbove, x));
}

function cubicCoeffs(t: Tensor): Tensor[] {
  const A = -0.75;
  const x = ops.abs(t);
  const c = (f: (v: Tensor) => Tensor) => f(x);
  return [
    c((v) => ops.sub(ops.mul(ops.add(ops.mul(ops.sub(ops.mul(ops.add(v, 1), A), 5 * A), ops.add(v, 1)), 8 * A), ops.add(v, 1)), 4 * A)),
    c((v) => ops.add(ops.mul(ops.mul(ops.sub(ops.mul(v, A + 2), A + 3), v), v), 1)),
    c((v) => {
      const w = ops.sub(1, v);
      return ops.add(ops.mul(ops.mul(ops.sub(ops.mul(w, A + 2), A + 3), w), w), 1);
    }),
    c((v) => {
      const w = ops.sub(2, v);
      return ops.sub(ops.mul(ops.add(ops.mul(ops.sub(ops.mul(w, A), 5 * A), w), 8 * A), w), 4 * A);
    }),
  ];
}

onnxOp("GridSample", {
  run(n) {
    const X = n.input(0);
    const grid = n.input(1);
    const modeName = n.string("mode", n.opset >= 20 ? "linear" : "bilinear");
    const mode = modeName === "bilinear" || modeName === "linear" ? "linear" : modeName === "bicubic" || modeName === "cubic" ? "cubic" : modeName === "nearest" ? "nearest" : null;
    if (mode === null) throw n.fail(`unknown mode ${JSON.stringify(modeName)}`);
    const padding = n.string("padding_mode", "zeros");
    if (padding !== "zeros" && padding !== "border" && padding !== "reflection") throw n.fail(`unknown padding_mode ${JSON.stringify(padding)}`);
    const align = n.int("align_corners", 0) !== 0;
    const dims = X.shape.slice(2);
    const k = dims.length;
    if (grid.shape[grid.rank - 1] !== k || grid.shape[0] !== X.shape[0]) throw n.fail(`grid of shape [${grid.shape.join(", ")}] does not match X of shape [${X.shape.join(", ")}]`);
    const [N, C] = X.shape as [number, number];
    const outDims = grid.shape.slice(1, -1);
    const P = outDims.reduce((a, b) => a * b, 1);
    const dtype = X.dtype;
    const g = ops.reshape(ops.cast(grid, "float64"), [N, P, k]);
    // Coordinates per spatial axis (grid's last axis is reversed: x first).
    const coords = dims.map((d, i) => {
      const gi = ops.reshape(ops.slice(g, [0, 0, k - 1 - i], [N, P, k - i]), [N, P]);
      let x = align ? ops.mul(ops.div(ops.add(gi, 1), 2), d - 1) : ops.div(ops.sub(ops.mul(ops.add(gi, 1), d), 1), 2);
      if (mode === "nearest") x = ops.round(x);
      const lo = align ? 0 : -0.5;
      const hi = align ? d - 1 : d - 0.5;
      if (padding === "border") x = ops.where(ops.logicalOr(ops.less(x, lo), ops.greater(x, hi)), ops.clip(x, 0, d - 1), x);
      else if (padding === "reflection") x = reflect(x, lo, hi);
      return x;
    });
    // Taps per axis: integer positions and weights.
    const taps = coords.map((x) => {
      if (mode === "nearest") return [{ i: ops.floor(x), w: null as Tensor | null }];
      const x0 = ops.floor(x);
      const t = ops.sub(x, x0);
      if (mode === "linear") return [{ i: x0, w: ops.sub(1, t) }, { i: ops.add(x0, 1), w: t }];
      const c = cubicCoeffs(t);
      return [-1, 0, 1, 2].map((o, j) => ({ i: ops.add(x0, o), w: c[j]! }));
    });
    /** A tap position read with the padding rule: [index to gather, weight factor or null]. */
    const pixel = (i: Tensor, axis: number): { idx: Tensor; valid: Tensor | null } => {
      const d = dims[axis]!;
      if (padding === "zeros") return { idx: ops.clip(i, 0, d - 1), valid: ops.logicalAnd(ops.greaterEqual(i, 0), ops.less(i, d)) };
      if (padding === "border") return { idx: ops.clip(i, 0, d - 1), valid: null };
      const r = reflect(i, align ? 0 : -0.5, align ? d - 1 : d - 0.5);
      return { idx: ops.clip(ops.sign(r).mul(ops.floor(ops.abs(r))), 0, d - 1), valid: null };
    };
    const strides = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
    const flat = ops.reshape(X, [N, C, -1]);
    let out: Tensor | null = null;
    const combos = taps.reduce<{ i: Tensor; w: Tensor | null }[][]>((acc, ts) => acc.flatMap((c) => ts.map((t) => [...c, t])), [[]]);
    for (const combo of combos) {
      let index: Tensor | null = null;
      let weight: Tensor | null = null;
      combo.forEach((t, axis) => {
        const { idx, valid } = pixel(t.i, axis);
        const term = ops.mul(idx, strides[axis]!);
        index = index === null ? term : ops.add(index, term);
        let w = t.w;
        if (valid !== null) w = w === null ? ops.cast(valid, "float64") : ops.where(valid, w, 0);
        if (w !== null) weight = weight === null ? w : ops.mul(weight, w);
      });
      const idx3 = ops.broadcastTo(ops.expandDims(ops.cast(index!, "int32"), 1), [N, C, P]);
      let v = ops.gatherElements(flat, idx3, 2);
      if (weight !== null) v = ops.mul(v, ops.cast(ops.expandDims(weight, 1), dtype));
      out = out === null ? v : ops.add(out, v);
    }
    return ops.reshape(out!, [N, C, ...outDims]);
  },
});
