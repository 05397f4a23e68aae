/** clip: limits values to [min, max] (an elementwise op of three operands). */
import { broadcastShapesN } from "../../core/shape.js";
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { dtypeRange, isFloat, promoteTypes, type DType } from "../../core/dtype.js";
import { applyOp1, defineOp, type TensorType } from "../registry.js";
import { scalarOf, toTensor, toTensorsWeak } from "../convert.js";
import { installMethods } from "../methods.js";
import { sumTo } from "../reduce.js";
import { where } from "../where.js";
import { greater, less, logicalOr } from "../compare.js";
import * as E from "../../core/expr.js";
import { cpuElementwiseKernel } from "../define-elementwise.js";


const { a, b, c } = E;
/** NumPy order: max(x, lo) then min(., hi); NaN in x propagates. */
const FORM: E.ElementwiseForm = { expr: E.select(E.lt(a, b), E.select(E.gt(b, c), c, b), E.select(E.gt(a, c), c, a)) };

export const clipOp = defineOp({
  name: "clip",
  family: "shape",
  inputs: ["x", "min", "max"],
  elementwise: FORM,
  infer(inputs) {
    const [x, lo, hi] = inputs as [TensorType, TensorType, TensorType];
    return [{ shape: broadcastShapesN("clip", [x.shape, lo.shape, hi.shape]), dtype: promoteTypes(promoteTypes(x.dtype, lo.dtype), hi.dtype) }];
  },
  kernels: { cpu: cpuElementwiseKernel(FORM) },
  vjp(ctx, cts) {
    const [x, lo, hi] = ctx.inputs as [Tensor, Tensor, Tensor];
    const dy = cts[0]!;
    const below = less(x, lo);
    const above = greater(x, hi);
    const crossed = greater(lo, hi);
    // x passes where lo <= x <= hi (or x is NaN); below lo the value is lo unless lo > hi.
    const dx = where(logicalOr(below, above), 0, dy);
    const dlo = isFloat(lo.dtype) ? sumTo(where(below, where(crossed, 0, dy), 0), lo) : null;
    const dhi = isFloat(hi.dtype) ? sumTo(where(below, where(crossed, dy, 0), where(above, dy, 0)), hi) : null;
    return [sumTo(dx, x), dlo, dhi];
  },
});

function lowest(d: DType): number {
  return dtypeRange(d)[0];
}
function highest(d: DType): number {
  return dtypeRange(d)[1];
}

/**
 * Limits values to [min, max] (either may be null: unbounded), broadcasting all three; JS numbers
 * are weakly typed. Gradient flows to x where min <= x <= max, and to min/max where they bind.
 */
export function clip(x: TensorLike, min: TensorLike | null | undefined, max?: TensorLike | null): Tensor {
  const hasLo = min !== null && min !== undefined;
  const hasHi = max !== null && max !== undefined;
  if (!hasLo && !hasHi) return toTensor(x, "clip");
  const args: TensorLike[] = [x];
  if (hasLo) args.push(min);
  if (hasHi) args.push(max);
  const ts = toTensorsWeak(args, "clip");
  let d = ts[0]!.dtype;
  for (const t of ts) d = promoteTypes(d, t.dtype);
  const xt = ts[0]!;
  const lo = hasLo ? ts[1]! : scalarOf(lowest(d), d);
  const hi = hasHi ? ts[hasLo ? 2 : 1]! : scalarOf(highest(d), d);
  return applyOp1(clipOp, [xt, lo, hi], {});
}

declare module "../../core/tensor.js" {
  interface Tensor {
    clip(min: TensorLike | null | undefined, max?: TensorLike | null): Tensor;
  }
}
installMethods({ clip });
