/**
 * ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin.
 * Axes come from the attribute (older opsets) or the second input (ReduceSum 13+, the rest 18+);
 * no axes reduces everything unless noop_with_empty_axes. Results keep the input's dtype.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { axisOf } from "./shape.js";

type Reducer = (x: Tensor, axes: number[], keep: boolean) => Tensor;

/** The opset from which each reduction takes its axes as an input. */
const AXES_INPUT_SINCE: Record<string, number> = { ReduceSum: 13 };

function reduction(op: string, f: Reducer, emptyValue: number): void {
  onnxOp(op, {
    constInputs: [1],
    run(n: NodeContext) {
      const x = n.input(0);
      const keep = n.int("keepdims", 1) !== 0;
      const fromInput = n.opset >= (AXES_INPUT_SINCE[op] ?? 18);
      let axes = fromInput ? n.knownInts(1, "axes", null) : n.ints("axes") ?? null;
      if (axes === null || axes.length === 0) {
        if (n.int("noop_with_empty_axes", 0) !== 0) return ops.identity(x);
        axes = [...Array(x.rank).keys()];
      }
      const norm = [...new Set(axes.map((a) => axisOf(n, a, x.rank)))].sort((p, q) => p - q);
      if (norm.some((a) => x.shape[a] === 0)) {
        // An empty group reduces to the op's identity (ONNX: -inf for max, +inf for min, ...).
        const shape = x.shape.map((d, i) => (norm.includes(i) ? 1 : d)).filter((_, i) => keep || !norm.includes(i));
        return ops.full(shape, emptyValue, x.dtype);
      }
      const y = f(x, norm, keep);
      return y.dtype === x.dtype ? y : ops.cast(y, x.dtype);
    },
  });
}

reduction("ReduceSum", (x, a, k) => ops.sum(x, a, k), 0);
reduction("ReduceMean", (x, a, k) => ops.mean(x, a, k), NaN);
reduction("ReduceMax", (x, a, k) => ops.max(x, a, k), -Infinity);
reduction("ReduceMin", (x, a, k) => ops.min(x, a, k), Infinity);
reduction("ReduceProd", (x, a, k) => ops.prod(x, a, k), 1);
reduction("ReduceL1", (x, a, k) => ops.sum(ops.abs(x), a, k), 0);
reduction("ReduceL2", (x, a, k) => ops.sqrt(ops.sum(ops.mul(x, x), a, k)), 0);
reduction("ReduceSumSquare", (x, a, k) => ops.sum(ops.mul(x, x), a, k), 0);
reduction("ReduceLogSum", (x, a, k) => ops.log(ops.sum(x, a, k)), -Infinity);
reduction("ReduceLogSumExp", (x, a, k) => ops.logSumExp(x, a, k), -Infinity);

function argReduction(op: string, f: (x: Tensor, axis: number, keep: boolean) => Tensor): void {
  onnxOp(op, {
    run(n) {
      const x = n.input(0);
      const axis = axisOf(n, n.int("axis", 0), x.rank);
      const keep = n.int("keepdims", 1) !== 0;
      if (n.int("select_last_index", 0) !== 0) {
        // The last occurrence: the first one in the reversed axis, counted back.
        const i = f(ops.flip(x, axis), axis, keep);
        return ops.cast(ops.sub(x.shape[axis]! - 1, i), "int64");
      }
      return ops.cast(f(x, axis, keep), "int64");
    },
  });
}
argReduction("ArgMax", ops.argMax);
argReduction("ArgMin", ops.argMin);
