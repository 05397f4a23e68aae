/**
 * ONNX ops whose output size depends on the input's values: NonZero and Compress. The indices are
 * computed by a host call when the graph runs (sc.hostCall, whose output has an unknown length),
 * so the rest stays staged; Compress then gathers, which keeps it differentiable in its data.
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
