/**
 * Bitwise operators (`|`, `&`, `^`, `~`, `<<`, `>>`). JS operands: exactly the JavaScript
 * operator. A tensor operand is taken as JavaScript takes a number, through ToInt32 (truncated
 * toward zero, wrapped into 32 bits, NaN and Infinity as 0), and the result is an int32 tensor:
 * `t | 0` truncates a float tensor as it truncates a number (it was a TensorCoercionError in
 * converted code). A shift count is taken modulo 32, as in JavaScript. `>>>`, whose result does
 * not fit int32, stays JavaScript's operator (a tensor there is a TensorCoercionError).
 */
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { ValueError } from "../../core/errors.js";
import { scalarOf } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { floorDiv, mul, sub } from "../../ops/binary.js";
import { abs, floor, isFinite, sign } from "../../ops/unary.js";
import { greaterEqual } from "../../ops/compare.js";
import { where } from "../../ops/where.js";
import { bitShiftLeft, bitShiftRight, bitwiseAnd, bitwiseNot, bitwiseOr, bitwiseXor } from "../../ops/bitwise.js";
import { describeValue, isWeakOperand, markWeak, readIfVariable } from "./state.js";

const TWO_32 = 2 ** 32;
const TWO_31 = 2 ** 31;
/** Dtypes whose values an int32 holds exactly. */
const INT32_EXACT = new Set(["int32", "int16", "int8", "uint16", "uint8", "bool"]);

/** JavaScript's ToInt32 of an operand, as an int32 tensor. */
function toInt32(symbol: string, x: unknown): Tensor {
  if (typeof x === "number" || typeof x === "boolean") return scalarOf(Number(x) | 0, "int32");
  if (!(x instanceof Tensor)) throw new ValueError(`cannot apply ${symbol} to ${describeValue(x)}`, symbol);
  const t = readIfVariable(x) as Tensor;
  if (t.dtype === "int32") return t;
  if (INT32_EXACT.has(t.dtype)) return cast(t, "int32");
  const v = cast(t, "float64");
  const truncated = where(isFinite(v), mul(sign(v), floor(abs(v))), 0);
  const wrapped = sub(truncated, mul(floorDiv(truncated, TWO_32), TWO_32));
  return cast(where(greaterEqual(wrapped, TWO_31), sub(wrapped, TWO_32), wrapped), "int32");
}

/** The result stands for a JS number (weak) when every operand does. */
function result(r: Tensor, operands: unknown[]): Tensor {
  return operands.every(isWeakOperand) ? markWeak(r) : r;
}

function binary(symbol: string, a: unknown, b: unknown, op: (x: TensorLike, y: TensorLike) => Tensor): Tensor {
  return result(op(toInt32(symbol, a), toInt32(symbol, b)), [a, b]);
}

/** A shift count as JavaScript takes it: ToUint32(b) & 31. */
const count = (symbol: string, b: unknown): Tensor => bitwiseAnd(toInt32(symbol, b), 31);

/** `a | b`. */
export function bitOr(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) | (b as any);
  return binary("|", a, b, bitwiseOr);
}

/** `a & b`. */
export function bitAnd(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) & (b as any);
  return binary("&", a, b, bitwiseAnd);
}

/** `a ^ b`. */
export function bitXor(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) ^ (b as any);
  return binary("^", a, b, bitwiseXor);
}

/** `a << b`. */
export function shl(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) << (b as any);
  return result(bitShiftLeft(toInt32("<<", a), count("<<", b)), [a, b]);
}

/** `a >> b` (the sign kept). */
export function shr(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) >> (b as any);
  return result(bitShiftRight(toInt32(">>", a), count(">>", b)), [a, b]);
}

/** `~a`. */
export function bitNot(a: unknown): unknown {
  if (!(a instanceof Tensor)) return ~(a as any);
  return result(bitwiseNot(toInt32("~", a)), [a]);
}

