/** where(cond, a, b): elementwise select with broadcasting (unknown staging dims broadcast like any other). */
import { promoteTypes } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import * as E from "../core/expr.js";
import { broadcastShapesN } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { cpuElementwiseKernel } from "./define-elementwise.js";
import { toTensor, toTensorsWeak } from "./convert.js";
import { sumTo } from "./reduce.js";

const FORM: E.ElementwiseForm = { expr: E.select(E.a, E.b, E.c) };

export const whereOp = defineOp({
  name: "where",
  family: "compare",
  inputs: ["condition", "x", "y"],
  elementwise: FORM,
  infer(inputs) {
    const [c, a, b] = inputs as [typeof inputs[0], typeof inputs[0], typeof inputs[0]];
    if (c!.dtype !== "bool") throw new DtypeError(`condition must be bool, got ${c!.dtype}`, "where");
    return [{ shape: broadcastShapesN("where", [c!.shape, a!.shape, b!.shape]), dtype: promoteTypes(a!.dtype, b!.dtype) }];
  },
  kernels: { cpu: cpuElementwiseKernel(FORM) },
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
