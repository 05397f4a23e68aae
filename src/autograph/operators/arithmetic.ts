/**
 * Arithmetic and comparison operators. JS operands: exactly the JavaScript operator. When a
 * tensor is involved (the other operand a tensor, number, boolean or nested array of numbers),
 * the registry op with NumPy broadcasting and weakly typed JS numbers; `%` keeps JavaScript's
 * sign convention (the result has the sign of the dividend). `===`/`!==`/`==`/`!=` between a
 * tensor and a non-numeric value (null, undefined, a string, an object) keep JavaScript's
 * answer; other operators refuse such mixes with a clear error rather than produce NaN.
 */
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { ValueError } from "../../core/errors.js";
import { scalarOf, toTensorsWeak } from "../../ops/convert.js";
import { add as addOp, div as divOp, mod as floorModOp, mul as mulOp, pow as powOp, sub as subOp } from "../../ops/binary.js";
import { equal, greater, greaterEqual, less, lessEqual, logicalAnd, notEqual } from "../../ops/compare.js";
import { neg as negOp } from "../../ops/unary.js";
import { cast } from "../../ops/cast.js";
import { where } from "../../ops/where.js";
import { describeValue, isWeak, isWeakOperand, markWeak, readIfVariable, weakOperands } from "./state.js";
import { isFloat, type DType } from "../../core/dtype.js";

/** Operands a tensor op accepts next to a tensor. */
function numericOperand(x: unknown): boolean {
  return x instanceof Tensor || typeof x === "number" || typeof x === "boolean" || Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
}

function refuse(symbol: string, a: unknown, b: unknown): never {
  throw new ValueError(`cannot apply ${symbol} to ${describeValue(a)} and ${describeValue(b)}`, symbol);
}

/** Whether a JS number (or the weak tensor standing for one) is an integer as far as its dtype tells. */
function integral(x: unknown): boolean {
  if (x instanceof Tensor) return !isFloat(x.dtype);
  if (typeof x === "boolean") return true;
  return Number.isInteger(x) && Math.abs(x as number) < 2 ** 31;
}

/** Operators whose result on two integers is an integer in JavaScript. */
const INTEGER_CLOSED = new Set(["+", "-", "*", "%", "<", "<=", ">", ">="]);

/**
 * Two JS numbers, at least one carried as a weak tensor (a loop counter, a number a staged
 * branch gave): computed as JavaScript computes them, in float64 unless both are integers and
 * the operator keeps integers (int32 then). `j * 0.1` is not rounded to float32.
 */
function asJsNumbers(symbol: string, a: unknown, b: unknown): [Tensor, Tensor] {
  const d: DType = integral(a) && integral(b) && INTEGER_CLOSED.has(symbol) ? "int32" : "float64";
  const conv = (x: unknown): Tensor => {
    if (x instanceof Tensor) {
      const t = readIfVariable(x) as Tensor;
      return t.dtype === d ? t : cast(t, d);
    }
    return scalarOf(Number(x), d);
  };
  return [conv(a), conv(b)];
}

function tensorBinary(symbol: string, a: unknown, b: unknown, op: (x: TensorLike, y: TensorLike) => Tensor, weakResult = true): Tensor {
  if (!numericOperand(a) || !numericOperand(b)) refuse(symbol, a, b);
  if (isWeakOperand(a) && isWeakOperand(b)) {
    // Arithmetic on numbers that became tensors (and JS numbers) still stands for a JS number.
    const [x, y] = asJsNumbers(symbol, a, b);
    const r = op(x, y);
    return weakResult ? markWeak(r) : r;
  }
  const [x, y] = weakOperands([a, b]);
  return op(x as TensorLike, y as TensorLike);
}

/** Bool tensors take part in arithmetic as 0/1 integers (as JS booleans do). */
function numericTensor(t: Tensor): Tensor {
  return t.dtype === "bool" ? cast(t, "int32") : t;
}

/** `a + b`. */
export function add(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) + (b as any);
  // A string and a tensor concatenate the printed tensor (JavaScript's `+` on a tensor is an error).
  if (typeof a === "string" || typeof b === "string") return String(a) + String(b);
  return tensorBinary("+", a, b, addOp);
}

/** `a - b`. */
export function sub(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) - (b as any);
  return tensorBinary("-", a, b, subOp);
}

/** `a * b`. */
export function mul(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) * (b as any);
  return tensorBinary("*", a, b, mulOp);
}

/** `a / b`. */
export function div(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) / (b as any);
  return tensorBinary("/", a, b, divOp);
}

/** JavaScript's remainder: `a - trunc(a / b) * b` (the sign of the dividend). */
function jsRemainder(a: TensorLike, b: TensorLike): Tensor {
  let [x, y] = toTensorsWeak([a, b], "%") as [Tensor, Tensor];
  x = numericTensor(x);
  y = numericTensor(y);
  const r = floorModOp(x, y);
  const fix = logicalAnd(notEqual(r, 0), notEqual(less(x, 0), less(y, 0)));
  return where(fix, subOp(r, y), r);
}

/** `a % b`. */
export function mod(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) % (b as any);
  return tensorBinary("%", a, b, jsRemainder);
}

/** `a ** b`. */
export function pow(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) ** (b as any);
  return tensorBinary("**", a, b, powOp);
}

/** Unary `-a`. */
export function neg(a: unknown): unknown {
  if (!(a instanceof Tensor)) return -(a as any);
  const r = negOp(numericTensor(readIfVariable(a) as Tensor));
  return isWeak(a) ? markWeak(r) : r;
}

/** Unary `+a`: a tensor stays a tensor (bool becomes int32). */
export function pos(a: unknown): unknown {
  if (!(a instanceof Tensor)) return +(a as any);
  const r = numericTensor(readIfVariable(a) as Tensor);
  return isWeak(a) ? markWeak(r) : r;
}

/**
 * `++x` / `--x` (`by` is 1 or -1): a tensor becomes `x + 1` / `x - 1`, as one writes it by
 * hand (one op; the constant is shared with the graph's other 1s); any other value gets
 * JavaScript's own operator on a copy (ToNumeric: numbers, BigInt, objects by valueOf).
 */
export function increment(x: unknown, by: 1 | -1): unknown {
  if (x instanceof Tensor) return by === 1 ? add(x, 1) : sub(x, 1);
  let v = x as any;
  return by === 1 ? ++v : --v;
}

/**
 * The value `x++` evaluates to: a tensor itself (bool as int32, as `+x`: no op otherwise),
 * any other value JavaScript's ToNumeric of it.
 */
export function toNumeric(x: unknown): unknown {
  if (x instanceof Tensor) return pos(x);
  let v = x as any;
  return v++;
}

/** `a < b`. */
export function lt(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) < (b as any);
  return tensorBinary("<", a, b, less, false);
}

/** `a <= b`. */
export function le(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) <= (b as any);
  return tensorBinary("<=", a, b, lessEqual, false);
}

/** `a > b`. */
export function gt(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) > (b as any);
  return tensorBinary(">", a, b, greater, false);
}

/** `a >= b`. */
export function ge(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return (a as any) >= (b as any);
  return tensorBinary(">=", a, b, greaterEqual, false);
}

function equalityOperand(x: unknown): boolean {
  return x instanceof Tensor || typeof x === "number" || typeof x === "boolean";
}

/** `a === b`: elementwise `equal` when a tensor meets a tensor, number or boolean. */
export function eq(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return a === b;
  if (!equalityOperand(a) || !equalityOperand(b)) return a === b;
  return equal(a as TensorLike, b as TensorLike);
}

/** `a !== b`. */
export function ne(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return a !== b;
  if (!equalityOperand(a) || !equalityOperand(b)) return a !== b;
  return notEqual(a as TensorLike, b as TensorLike);
}

/** `a == b`. */
export function looseEq(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return a == b;
  if (!equalityOperand(a) || !equalityOperand(b)) return a == b;
  return equal(a as TensorLike, b as TensorLike);
}

/** `a != b`. */
export function looseNe(a: unknown, b: unknown): unknown {
  if (!(a instanceof Tensor) && !(b instanceof Tensor)) return a != b;
  if (!equalityOperand(a) || !equalityOperand(b)) return a != b;
  return notEqual(a as TensorLike, b as TensorLike);
}
