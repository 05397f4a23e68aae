/**
 * C-style integer division and remainder (ONNX Div on integers, Mod with fmod=1):
 * truncDiv rounds the quotient toward zero; fmod's result has the dividend's sign
 * (JavaScript's `%`). floorDiv and mod (binary.ts) are the floor-rounding (Python) pair.
 */
import * as E from "../core/expr.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { callElementwise, defineElementwise } from "./define-elementwise.js";
import { sumTo } from "./reduce.js";
import { mul } from "./binary.js";
import { neg } from "./unary.js";
import { cast } from "./cast.js";

/** a / b rounded toward zero (piecewise constant: no gradient). */
export const truncDivOp = defineElementwise({ name: "truncDiv", family: "binary", inputs: ["a", "b"], expr: E.fn("trunc", E.div(E.a, E.b)), dtype: "numeric" });

/** a - truncDiv(a, b) * b: the remainder with the dividend's sign. */
export const fmodOp = defineElementwise({
  name: "fmod",
  family: "binary",
  inputs: ["a", "b"],
  expr: E.fn("fmod", E.a, E.b),
  dtype: "numeric",
  vjp: (ctx, cts) => {
    const [a, b] = ctx.inputs as [Tensor, Tensor];
    const dy = cts[0]!;
    // d/da = 1, d/db = -trunc(a / b) (away from the jumps where a / b is an integer)
    const q = cast(truncDiv(a, b), dy.dtype);
    return [sumTo(dy, a), sumTo(neg(mul(dy, q)), b)];
  },
});

export const truncDiv = (a: TensorLike, b: TensorLike): Tensor => callElementwise(truncDivOp, a, b);
export const fmod = (a: TensorLike, b: TensorLike): Tensor => callElementwise(fmodOp, a, b);

