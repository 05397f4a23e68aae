/** Reductions over axes with keepDims. */
import { allocStorage, type DType } from "../core/dtype.js";
import { DtypeError } from "../core/errors.js";
import { broadcastReductionAxes, normalizeAxes, shapesEqual, sizeOf, type Shape } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { reduceAxes, type Combine } from "../backends/cpu/reduce.js";
import { applyOp1, defineOp, type OpDef, type TensorType } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { broadcastTo, reshape } from "./shape.js";

export interface ReduceAttrs {
  /** Sorted, normalized axes. */
  axes: number[];
  keepDims: boolean;
}

export type AxisArg = number | number[] | null | undefined;

export function reducedShape(shape: Shape, axes: readonly number[], keepDims: boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (axes.includes(i)) {
      if (keepDims) out.push(1);
    } else out.push(shape[i]!);
  }
  return out;
}

/** Shape of a reduction's output with the reduced axes kept as 1 (to broadcast gradients back). */
export function keptShape(shape: Shape, axes: readonly number[]): number[] {
  return reducedShape(shape, axes, true);
}

export function defineReduction(
  name: string,
  combine: Combine,
  outDtype: (d: DType, op: string) => DType,
  vjp?: OpDef<ReduceAttrs>["vjp"],
): OpDef<ReduceAttrs> {
  return defineOp<ReduceAttrs>({
    name,
    family: "reduce",
    inputs: ["x"],
    infer(inputs, attrs): TensorType[] {
      const x = inputs[0]!;
      return [{ shape: reducedShape(x.shape, attrs.axes, attrs.keepDims), dtype: outDtype(x.dtype, name) }];
    },
    kernel(inputs, attrs, outs) {
      const x = inputs[0]!;
      const o = outs[0]!;
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      reduceAxes(combine, x.concrete(), x.shape, attrs.axes, out, (n) => allocStorage(o.dtype === "bool" ? "bool" : "float64", n));
      return [out];
    },
    ...(vjp ? { vjp } : {}),
  });
}

export function reduceAttrs(op: string, x: Tensor, axis: AxisArg, keepDims: boolean): ReduceAttrs {
  return { axes: normalizeAxes(op, axis, x.rank), keepDims: !!keepDims };
}

const sumDtype = (d: DType): DType => (d === "bool" || d === "uint8" ? "int32" : d);

export const sumOp = defineReduction("sum", "sum", sumDtype, (ctx, cts) => {
  const x = ctx.inputs[0]!;
  const g = reshape(cts[0]!, keptShape(x.shape, ctx.attrs.axes));
  return [broadcastTo(g, x.shape)];
});

export function sum(x: TensorLike, axis?: AxisArg, keepDims = false): Tensor {
  const t = toTensor(x, "sum");
  return applyOp1(sumOp, [t], reduceAttrs("sum", t, axis, keepDims));
}

/** Sums `x` down to `shape` (the inverse of broadcasting; used by gradients). */
export function sumTo(x: Tensor, shape: Shape): Tensor {
  if (shapesEqual(x.shape, shape)) return x;
  const axes = broadcastReductionAxes(shape, x.shape);
  const s = axes.length > 0 ? sum(x, axes, true) : x;
  return shapesEqual(s.shape, shape) ? s : reshape(s, shape);
}

export function checkNumericDtype(op: string, d: DType): void {
  if (d === "bool") throw new DtypeError(`does not accept bool inputs`, op);
}

declare module "../core/tensor.js" {
  interface Tensor {
    sum(axis?: AxisArg, keepDims?: boolean): Tensor;
  }
}
installMethods({ sum });
