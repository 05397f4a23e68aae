/** The inverse hyperbolic functions asinh, acosh, atanh (float results, like the other transcendental ops). */
import * as E from "../core/expr.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { callElementwise, defineElementwise, unaryVjp } from "./define-elementwise.js";
import { add, div, mul, sub } from "./binary.js";
import { rsqrt } from "./unary.js";

export const asinhOp = defineElementwise({
  name: "asinh",
  family: "unary",
  inputs: ["x"],
  expr: E.fn("asinh", E.a),
  dtype: "float",
  vjp: unaryVjp((x, _y, dy) => mul(dy, rsqrt(add(mul(x, x), 1)))),
});
export const acoshOp = defineElementwise({
  name: "acosh",
  family: "unary",
  inputs: ["x"],
  expr: E.fn("acosh", E.a),
  dtype: "float",
  vjp: unaryVjp((x, _y, dy) => mul(dy, rsqrt(sub(mul(x, x), 1)))),
});
export const atanhOp = defineElementwise({
  name: "atanh",
  family: "unary",
  inputs: ["x"],
  expr: E.fn("atanh", E.a),
  dtype: "float",
  vjp: unaryVjp((x, _y, dy) => div(dy, sub(1, mul(x, x)))),
});

export const asinh = (x: TensorLike): Tensor => callElementwise(asinhOp, x);
export const acosh = (x: TensorLike): Tensor => callElementwise(acoshOp, x);
export const atanh = (x: TensorLike): Tensor => callElementwise(atanhOp, x);
