/** Binary elementwise ops with NumPy broadcasting; gradients are summed back to each input's shape. */
import * as E from "../core/expr.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { installMethods } from "./methods.js";
import { callElementwise, defineElementwise, type DtypeRule } from "./define-elementwise.js";
import type { OpDef } from "./registry.js";
import { sumTo } from "./reduce.js";
import { cast } from "./cast.js";
import { greaterEqual, less, greater, logicalAnd, logicalNot, logicalOr } from "./compare.js";
import { floor, isNaN, log, neg, square } from "./unary.js";
import { where } from "./where.js";
import { zerosLikeTensor } from "./fill.js";

type Grads = [Tensor | null, Tensor | null];
type BinaryRule = (a: Tensor, b: Tensor, y: Tensor, dy: Tensor) => Grads;

const { a, b } = E;

function binary(name: string, expr: E.Expr, dtype: DtypeRule, rule?: BinaryRule, commutative = false): OpDef {
  return defineElementwise({
    name,
    family: "binary",
    inputs: ["a", "b"],
    expr,
    commutative,
    dtype,
    ...(rule
      ? {
          vjp: (ctx, cts) => {
            const [a, b] = ctx.inputs as [Tensor, Tensor];
            const [ga, gb] = rule(a, b, ctx.outputs[0]!, cts[0]!);
            return [ga && sumTo(ga, a), gb && sumTo(gb, b)];
          },
        }
      : {}),
  });
}

export const addOp = binary("add", E.add(a, b), "same", (_a, _b, _y, dy) => [dy, dy], true);
export const subOp = binary("sub", E.sub(a, b), "same", (_a, _b, _y, dy) => [dy, neg(dy)]);
export const mulOp = binary("mul", E.mul(a, b), "same", (a, b, _y, dy) => [mul(dy, b), mul(dy, a)], true);
export const divOp = binary("div", E.div(a, b), "float", (_a, b, y, dy) => {
  const ga = div(dy, b);
  return [ga, neg(mul(ga, y))];
});
// (zero almost everywhere: zero gradients of each input's shape, connected; see unary.ts "zero")
export const floorDivOp = binary("floorDiv", E.floor(E.div(a, b)), "numeric", (a, b) => [zerosLikeTensor(a), zerosLikeTensor(b)]);
export const modOp = binary("mod", E.sub(a, E.mul(E.floor(E.div(a, b)), b)), "numeric", (a, b, _y, dy) => [dy, neg(mul(dy, floor(div(a, b))))]);
export const powOp = binary("pow", E.fn("pow", a, b), "same", (a, b, y, dy) => {
  const ga = mul(dy, mul(b, pow(a, sub(b, 1))));
  // d/db a^b = a^b log a, defined for a > 0; 0 elsewhere (as JAX/TF do for a == 0).
  const positive = greater(a, 0);
  const safeA = where(positive, a, 1);
  const gb = where(positive, mul(dy, mul(y, log(safeA))), 0);
  return [ga, gb];
});
// NaN when either operand is NaN (neither comparison holds), and a for equal operands (-0 vs +0 as written)
// (gradients: to the operand the result came from; a NaN result from the NaN operand, a's if both)
export const maximumOp = binary("maximum", E.select(E.lt(a, b), b, E.select(E.ge(a, b), a, NaN)), "same", (a, b, _y, dy) => {
  const takeA = cast(logicalOr(greaterEqual(a, b), isNaN(a)), dy.dtype);
  return [mul(dy, takeA), sub(dy, mul(dy, takeA))];
});
export const minimumOp = binary("minimum", E.select(E.gt(a, b), b, E.select(E.le(a, b), a, NaN)), "same", (a, b, _y, dy) => {
  const takeB = cast(logicalOr(less(b, a), logicalAnd(isNaN(b), logicalNot(isNaN(a)))), dy.dtype);
  return [sub(dy, mul(dy, takeB)), mul(dy, takeB)];
});
export const atan2Op = binary("atan2", E.fn("atan2", a, b), "float", (a, b, _y, dy) => {
  const denom = add(square(a), square(b));
  return [div(mul(dy, b), denom), neg(div(mul(dy, a), denom))];
});
export const squaredDifferenceOp = binary("squaredDifference", E.mul(E.sub(a, b), E.sub(a, b)), "same", (a, b, _y, dy) => {
  const g = mul(mul(sub(a, b), 2), dy);
  return [g, neg(g)];
});

export const add = (a: TensorLike, b: TensorLike): Tensor => callElementwise(addOp, a, b);
export const sub = (a: TensorLike, b: TensorLike): Tensor => callElementwise(subOp, a, b);
export const mul = (a: TensorLike, b: TensorLike): Tensor => callElementwise(mulOp, a, b);
export const div = (a: TensorLike, b: TensorLike): Tensor => callElementwise(divOp, a, b);
export const floorDiv = (a: TensorLike, b: TensorLike): Tensor => callElementwise(floorDivOp, a, b);
export const mod = (a: TensorLike, b: TensorLike): Tensor => callElementwise(modOp, a, b);
export const pow = (a: TensorLike, b: TensorLike): Tensor => callElementwise(powOp, a, b);
export const maximum = (a: TensorLike, b: TensorLike): Tensor => callElementwise(maximumOp, a, b);
export const minimum = (a: TensorLike, b: TensorLike): Tensor => callElementwise(minimumOp, a, b);
export const atan2 = (a: TensorLike, b: TensorLike): Tensor => callElementwise(atan2Op, a, b);
export const squaredDifference = (a: TensorLike, b: TensorLike): Tensor => callElementwise(squaredDifferenceOp, a, b);

declare module "../core/tensor.js" {
  interface Tensor {
    add(b: TensorLike): Tensor;
    sub(b: TensorLike): Tensor;
    mul(b: TensorLike): Tensor;
    div(b: TensorLike): Tensor;
    floorDiv(b: TensorLike): Tensor;
    mod(b: TensorLike): Tensor;
    pow(b: TensorLike): Tensor;
    maximum(b: TensorLike): Tensor;
    minimum(b: TensorLike): Tensor;
    atan2(b: TensorLike): Tensor;
    squaredDifference(b: TensorLike): Tensor;
  }
}
installMethods({ add, sub, mul, div, floorDiv, mod, pow, maximum, minimum, atan2, squaredDifference });
