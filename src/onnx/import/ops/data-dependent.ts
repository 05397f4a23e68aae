/**
 * ONNX ops whose output size depends on the input's values: NonZero, Compress, Unique and
 * NonMaxSuppression. The indices are computed by a host call when the graph runs (sc.hostCall,
 * whose output has an unknown length), so the rest stays staged; Compress and Unique then
 * gather, which keeps them differentiable in their data.
 * (A host call runs JavaScript: such a graph can be staged and run here, not exported.)
 */
import { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { hostCall } from "../../../staging/host.js";
import { spec } from "../../../staging/signature.js";
import { onnxOp } from "../op-table.js";
import { axisOf } from "./shape.js";

/** Positions of the non-zero elements of x: [rank, count] int64, row-major order. */
function nonZero(x: Tensor): Tensor {
  const run = (t: Tensor): Tensor => {
    const d = t.dataSync();
    const r = t.rank;
    const hits: number[] = [];
    for (let i = 0; i < d.length; i++) if (d[i] !== 0) hits.push(i);
    const out = new Array<number>(r * hits.length);
    hits.forEach((flat, k) => {
      let rest = flat;
      for (let a = r - 1; a >= 0; a--) {
        out[a * hits.length + k] = rest % t.shape[a]!;
        rest = Math.floor(rest / t.shape[a]!);
      }
    });
    return ops.tensor(out, "int64", [r, hits.length]);
  };
  return x.isSymbolic ? (hostCall(run, spec([x.rank, null], "int64"), x) as Tensor) : run(x);
}

onnxOp("NonZero", { run: (n) => nonZero(n.input(0)) });

onnxOp("Compress", {
  run(n) {
    let x = n.input(0);
    const cond = n.input(1);
    const axisAttr = n.int("axis");
    if (axisAttr === undefined) x = ops.reshape(x, [x.size]);
    const axis = axisAttr === undefined ? 0 : axisOf(n, axisAttr, x.rank);
    // condition may be shorter than the axis (the rest is dropped) but not longer
    if (cond.rank !== 1 || cond.shape[0]! > x.shape[axis]!) throw n.fail(`condition of shape [${cond.shape.join(", ")}] does not fit axis ${axis} of size ${x.shape[axis]}`);
    const idx = ops.reshape(nonZero(cond), [-1]);
    return ops.gather(x, idx, axis);
  },
});

/**
 * Unique: the distinct elements (no axis: of the flattened input) or distinct slices along an
 * axis, sorted ascending (sorted = 1) or in order of first occurrence. A host call finds each
 * one's first position, every element's (slice's) position among them, and their counts; the
 * values are then gathered from x, so Y stays differentiable in x.
 */
onnxOp("Unique", {
  run(n) {
    const x0 = n.input(0);
    const axisAttr = n.int("axis");
    const x = axisAttr === undefined ? ops.reshape(x0, [x0.size]) : x0;
    const axis = axisAttr === undefined ? 0 : axisOf(n, axisAttr, x.rank);
    const sorted = n.int("sorted", 1) !== 0;
    const length = x.shape[axis]!;
    const find = (t: Tensor): Tensor[] => {
      const d = t.dataSync();
      const inner = t.shape.slice(axis + 1).reduce((p, q) => p * q, 1);
      const outer = t.shape.slice(0, axis).reduce((p, q) => p * q, 1);
      // Each slice along the axis as a list of its values (row-major).
      const slices = Array.from({ length }, (_, i) => {
        const v: (number | bigint)[] = [];
        for (let o = 0; o < outer; o++) for (let j = 0; j < inner; j++) v.push(d[(o * length + i) * inner + j]!);
        return v;
      });
      const keyOf = (v: (number | bigint)[]) => v.map((e) => (Object.is(e, -0) ? "0" : String(e))).join(",");
      const firstAt = new Map<string, number>();
      slices.forEach((v, i) => firstAt.has(keyOf(v)) || firstAt.set(keyOf(v), i));
      let order = [...firstAt.values()];
      if (sorted) {
        const cmp = (a: (number | bigint)[], b: (number | bigint)[]): number => {
          for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return a[k]! < b[k]! ? -1 : 1;
          return 0;
        };
        order = order.sort((i, j) => cmp(slices[i]!, slices[j]!));
      }
      const rank = new Map(order.map((i, r) => [keyOf(slices[i]!), r]));
      const inverse = slices.map((v) => rank.get(keyOf(v))!);
      const counts = order.map(() => 0);
      for (const r of inverse) counts[r]!++;
      return [ops.tensor(order, "int64", [order.length]), ops.tensor(inverse, "int64", [length]), ops.tensor(counts, "int64", [counts.length])];
    };
    const [indices, inverse, counts] = (x.isSymbolic ? hostCall(find, [spec([null], "int64"), spec([length], "int64"), spec([null], "int64")], x) : find(x)) as Tensor[];
    return [ops.gather(x, indices!, axis), indices!, inverse!, counts!];
  },
});

/**
 * NonMaxSuppression: per batch and class, the boxes scoring above score_threshold, greedily in
 * descending score order, each kept unless its IoU with a kept box exceeds iou_threshold, at most
 * max_output_boxes_per_class; [count, 3] rows (batch, class, box). Computed by a host call.
 */
onnxOp("NonMaxSuppression", {
  run(n) {
    const boxes = n.input(0);
    const scores = n.input(1);
    if (boxes.rank !== 3 || boxes.shape[2] !== 4) throw n.fail(`boxes must be [batch, boxes, 4], got shape [${boxes.shape.join(", ")}]`);
    if (scores.rank !== 3 || scores.shape[0] !== boxes.shape[0] || scores.shape[2] !== boxes.shape[1]) throw n.fail(`scores must be [batch, classes, ${boxes.shape[1]}] for boxes [${boxes.shape.join(", ")}], got [${scores.shape.join(", ")}]`);
    const center = n.int("center_point_box", 0) !== 0;
    const scalarIn = (i: number, dtype: "int64" | "float32", def: number): Tensor => {
      const t = n.optional(i);
      if (t === null) return ops.scalar(def, dtype);
      if (t.size !== 1) throw n.fail(`input ${i} must hold one value, got shape [${t.shape.join(", ")}]`);
      return ops.cast(ops.reshape(t, []), dtype);
    };
    const maxOut = scalarIn(2, "int64", 0);
    const iouT = scalarIn(3, "float32", 0);
    const scoreT = n.optional(4) === null ? ops.scalar(-Infinity, "float32") : scalarIn(4, "float32", 0);
    const [B, S] = boxes.shape as [number, number];
    const C = scores.shape[1]!;
    const select = (bx: Tensor, sc: Tensor, mo: Tensor, it: Tensor, st: Tensor): Tensor => {
      const b = bx.dataSync() as ArrayLike<number>;
      const s = sc.dataSync() as ArrayLike<number>;
      const limit = Number(mo.dataSync()[0]);
      const iouMax = Number(it.dataSync()[0]);
      const scoreMin = Number(st.dataSync()[0]);
      const corners = (bi: number, i: number): [number, number, number, number] => {
        const o = (bi * S + i) * 4;
        const [p, q, r, t] = [b[o]!, b[o + 1]!, b[o + 2]!, b[o + 3]!];
        // [y1, x1, y2, x2] (either diagonal) or [x_center, y_center, width, height]
        if (center) return [q - t / 2, p - r / 2, q + t / 2, p + r / 2];
        return [Math.min(p, r), Math.min(q, t), Math.max(p, r), Math.max(q, t)];
      };
      const iou = (a: number[], c: number[]): number => {
        const h = Math.max(0, Math.min(a[2]!, c[2]!) - Math.max(a[0]!, c[0]!));
        const w = Math.max(0, Math.min(a[3]!, c[3]!) - Math.max(a[1]!, c[1]!));
        const inter = h * w;
        const union = (a[2]! - a[0]!) * (a[3]! - a[1]!) + (c[2]! - c[0]!) * (c[3]! - c[1]!) - inter;
        return inter <= 0 || union <= 0 ? 0 : Math.fround(inter / union);
      };
      const rows: number[] = [];
      for (let bi = 0; bi < B; bi++) {
        for (let ci = 0; ci < C; ci++) {
          const candidates = Array.from({ length: S }, (_, i) => i).filter((i) => s[(bi * C + ci) * S + i]! > scoreMin);
          candidates.sort((i, j) => s[(bi * C + ci) * S + j]! - s[(bi * C + ci) * S + i]! || i - j);
          const kept: number[][] = [];
          for (const i of candidates) {
            if (kept.length >= limit) break;
            const box = corners(bi, i);
            if (kept.every((k) => iou(k, box) <= iouMax)) {
              kept.push(box);
              rows.push(bi, ci, i);
            }
          }
        }
      }
      return ops.tensor(rows, "int64", [rows.length / 3, 3]);
    };
    const args = [boxes, scores, maxOut, iouT, scoreT];
    return args.some((t) => t.isSymbolic) ? (hostCall(select, spec([null, 3], "int64"), ...args) as Tensor) : select(boxes, scores, maxOut, iouT, scoreT);
  },
});
