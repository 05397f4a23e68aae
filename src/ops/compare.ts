/** Comparisons and logical ops: bool results, not differentiable. */
import * as E from "../core/expr.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { installMethods } from "./methods.js";
import { callElementwise, defineElementwise } from "./define-elementwise.js";

const { a, b } = E;

function compare(name: string, expr: E.Expr, dtype: "bool" | "logical" = "bool", inputs = ["a", "b"], commutative = false) {
  return defineElementwise({ name, family: "compare", inputs, expr, dtype, commutative });
}

const symmetric = true;
export const equalOp = compare("equal", E.eq(a, b), "bool", ["a", "b"], symmetric);
export const notEqualOp = compare("notEqual", E.ne(a, b), "bool", ["a", "b"], symmetric);
export const lessOp = compare("less", E.lt(a, b));
export const lessEqualOp = compare("lessEqual", E.le(a, b));
export const greaterOp = compare("greater", E.gt(a, b));
export const greaterEqualOp = compare("greaterEqual", E.ge(a, b));
export const logicalAndOp = compare("logicalAnd", E.and(a, b), "logical", ["a", "b"], symmetric);
export const logicalOrOp = compare("logicalOr", E.or(a, b), "logical", ["a", "b"], symmetric);
export const logicalXorOp = compare("logicalXor", E.ne(a, b), "logical", ["a", "b"], symmetric);
export const logicalNotOp = compare("logicalNot", E.not(a), "logical", ["x"]);

export const equal = (a: TensorLike, b: TensorLike): Tensor => callElementwise(equalOp, a, b);
export const notEqual = (a: TensorLike, b: TensorLike): Tensor => callElementwise(notEqualOp, a, b);
export const less = (a: TensorLike, b: TensorLike): Tensor => callElementwise(lessOp, a, b);
export const lessEqual = (a: TensorLike, b: TensorLike): Tensor => callElementwise(lessEqualOp, a, b);
export const greater = (a: TensorLike, b: TensorLike): Tensor => callElementwise(greaterOp, a, b);
export const greaterEqual = (a: TensorLike, b: TensorLike): Tensor => callElementwise(greaterEqualOp, a, b);
export const logicalAnd = (a: TensorLike, b: TensorLike): Tensor => callElementwise(logicalAndOp, a, b);
export const logicalOr = (a: TensorLike, b: TensorLike): Tensor => callElementwise(logicalOrOp, a, b);
export const logicalXor = (a: TensorLike, b: TensorLike): Tensor => callElementwise(logicalXorOp, a, b);
export const logicalNot = (x: TensorLike): Tensor => callElementwise(logicalNotOp, x);

declare module "../core/tensor.js" {
  interface Tensor {
    equal(b: TensorLike): Tensor;
    notEqual(b: TensorLike): Tensor;
    less(b: TensorLike): Tensor;
    lessEqual(b: TensorLike): Tensor;
    greater(b: TensorLike): Tensor;
    greaterEqual(b: TensorLike): Tensor;
    logicalAnd(b: TensorLike): Tensor;
    logicalOr(b: TensorLike): Tensor;
    logicalXor(b: TensorLike): Tensor;
    logicalNot(): Tensor;
  }
}
installMethods({ equal, notEqual, less, lessEqual, greater, greaterEqual, logicalAnd, logicalOr, logicalXor, logicalNot });
