/**
 * Det of [..., n, n]: Gaussian elimination with partial pivoting written with registry ops
 * (argMax picks each column's pivot row, a gather swaps it up, the rows below are reduced), the
 * determinant being the product of the pivots with the swaps' sign. n steps of whole-batch ops,
 * differentiable away from pivot ties (its gradient is det * A^-T, through the elimination).
 */
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";

onnxOp("Det", {
  run(n) {
    const x = n.input(0);
    if (x.rank < 2 || x.shape[x.rank - 1] !== x.shape[x.rank - 2]) throw n.fail(`needs square matrices [..., n, n], got shape [${x.shape.join(", ")}]`);
    if (x.dtype !== "float32" && x.dtype !== "float64" && x.dtype !== "float16") throw n.fail(`takes float matrices, got ${x.dtype}`);
    const dtype = x.dtype === "float16" ? "float32" : x.dtype;
    const size = x.shape[x.rank - 1]!;
    const batch = x.shape.slice(0, -2) as number[];
    const B = batch.reduce((p, q) => p * q, 1);
    let a = ops.reshape(x.dtype === dtype ? x : ops.cast(x, dtype), [B, size, size]);
    let det = ops.full([B], 1, dtype);
    const rows = ops.reshape(ops.arange(0, size, 1, "int32"), [1, size]);
    for (let k = 0; k < size; k++) {
      // Pivot: the row at or below k with the largest |a[r, k]|, swapped into row k.
      const column = ops.squeeze(ops.slice(a, [0, k, k], [B, size, k + 1]), 2); // [B, size - k]
      const pivotRow = ops.reshape(ops.add(ops.cast(ops.argMax(ops.abs(column), 1), "int32"), k), [B, 1]);
      const order = ops.where(ops.equal(rows, k), pivotRow, ops.where(ops.equal(rows, pivotRow), ops.full([1, size], k, "int32"), rows)); // [B, size]
      a = ops.gatherElements(a, ops.broadcastTo(ops.expandDims(order, 2), [B, size, size]), 1);
      const swapped = ops.notEqual(ops.reshape(pivotRow, [B]), k);
      const pivotRowValues = ops.slice(a, [0, k, 0], [B, k + 1, size]); // [B, 1, size]
      const pivot = ops.reshape(ops.slice(pivotRowValues, [0, 0, k], [B, 1, k + 1]), [B]);
      det = ops.mul(ops.mul(det, pivot), ops.where(swapped, ops.scalar(-1, dtype), ops.scalar(1, dtype)));
      if (k === size - 1) break;
      // Rows below k lose factor * pivot row; a zero pivot (a singular matrix) divides by one instead.
      const safe = ops.where(ops.equal(pivot, 0), ops.scalar(1, dtype), pivot);
      const below = ops.tensor(Array.from({ length: size }, (_, r) => (r > k ? 1 : 0)), dtype, [1, size, 1]);
      const factors = ops.mul(ops.div(ops.slice(a, [0, 0, k], [B, size, k + 1]), ops.reshape(safe, [B, 1, 1])), below); // [B, size, 1]
      a = ops.sub(a, ops.mul(factors, pivotRowValues));
    }
    const y = ops.reshape(det, batch);
    return y.dtype === x.dtype ? y : ops.cast(y, x.dtype);
  },
});
