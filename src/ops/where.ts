/** where(cond, a, b): elementwise select with broadcasting (unknown staging dims broadcast like any other). */
import { allocStorage, promoteTypes } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import { broadcastShapesN, sizeOf } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { elementwiseLoop } from "../backends/cpu/elementwise.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor, toTensorsWeak } from "./convert.js";
import { sumTo } from "./reduce.js";

const EXPR = "a ? b : c";

export const whereOp = defineOp({
  name: "where",
  family: "compare",
  inputs: ["condition", "x", "y"],
  elementwise: { expr: EXPR },
  infer(inputs) {
    const [c, a, b] = inputs as [typeof inputs[0], typeof inputs[0], typeof inputs[0]];
    if (c!.dtype !== "bool") throw new DtypeError(`condition must be bool, got ${c!.dtype}`, "where");
    return [{ shape: broadcastShapesN("where", [c!.shape, a!.shape, b!.shape]), dtype: promoteTypes(a!.dtype, b!.dtype) }];
  },
  kernel(inputs, _attrs, outs) {
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    elementwiseLoop(EXPR, 3)(inputs.map((t) => t.concrete()), inputs.map((t) => t.shape), out, o.shape);
    return [out];
  },
  vjp(ctx, cts) {
    const [c, a, b] = ctx.inputs as [Tensor, Tensor, Tensor];
    const dy = cts[0]!;
    // A weakly typed 0 (dy's dtype) broadcasts like zerosLike(dy) would, with no static shape:
    // the same graph works while staging with unknown dims.
    return [null, sumTo(where(c, dy, 0), a), sumTo(where(c, 0, dy), b)];
  },
});

export function where(condition: TensorLike, x: TensorLike, y: TensorLike): Tensor {
  const c = toTensor(condition, "where", "bool");
  const [a, b] = toTensorsWeak([x, y], "where");
  return applyOp1(whereOp, [c, a!, b!], {});
}
