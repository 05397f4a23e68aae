/**
 * `&&`, `||`, `??`, `!` with JavaScript's lazy semantics. The right operand is a thunk and is
 * evaluated only when JavaScript would evaluate it. On tensors: scalar conditions short-circuit
 * (eagerly on the concrete value, staged as a cond), results are bool tensors; non-scalar
 * tensors are combined elementwise (logicalAnd / logicalOr, both operands evaluated).
 */
import { Tensor } from "../../core/tensor.js";
import { ShapeError } from "../../core/errors.js";
import { fmtShape } from "../../core/shape.js";
import { isFloat } from "../../core/dtype.js";
import { toTensor } from "../../ops/convert.js";
import { equal, logicalAnd, logicalNot, logicalOr, notEqual } from "../../ops/compare.js";
import { AutoGraphError, at, isTensorLike, locArg, readIfVariable } from "./state.js";
import { condValues } from "./cond.js";

/** JavaScript truthiness of each element as a bool tensor (NaN and 0 are false). */
export function truthyTensor(t: Tensor): Tensor {
  if (t.dtype === "bool") return t;
  const nonZero = notEqual(t, 0);
  return isFloat(t.dtype) ? logicalAnd(nonZero, equal(t, t)) : nonZero;
}

/** A bool tensor for a tensor-like value (JS values by their truthiness). */
export function toBoolTensor(x: Tensor | number | boolean): Tensor {
  if (x instanceof Tensor) return truthyTensor(readIfVariable(x) as Tensor);
  return toTensor(Boolean(x) && !(typeof x === "number" && Number.isNaN(x)), "logical");
}

/** Whether a tensor can serve as a condition (exactly one element). */
export function isScalarLike(t: Tensor): boolean {
  return t.shape.every((d) => d === 1);
}

/** A tensor condition of `construct` that is not a single element is a ShapeError naming the construct and the source location. */
function checkCondition(t: Tensor, construct: string, loc: string | null | undefined): void {
  if (isScalarLike(t)) return;
  throw new ShapeError(`the condition must be a scalar tensor, got shape ${fmtShape(t.shape)}; reduce it first (sc.all, sc.any)`, construct, locArg(loc));
}

/** Reads a concrete tensor condition of `construct`. */
export function concreteTruth(t: Tensor, construct: string, loc?: string | null): boolean {
  checkCondition(t, construct, loc);
  const v = t.dataSync()[0]!;
  return v !== 0 && v === v;
}

/** A bool scalar predicate for a staged construct, with the same checks. */
export function symbolicPredicate(t: Tensor, construct: string, loc?: string | null): Tensor {
  checkCondition(t, construct, loc);
  return truthyTensor(t);
}

/** `!a`. */
export function not(a: unknown): unknown {
  if (!(a instanceof Tensor)) return !a;
  return logicalNot(truthyTensor(readIfVariable(a) as Tensor));
}

/** `a && b`, with `b` evaluated only when `a` is truthy. */
export function and(a: () => unknown, b: () => unknown): unknown {
  const x = a();
  if (!(x instanceof Tensor)) return x ? b() : x;
  const t = readIfVariable(x) as Tensor;
  if (!isScalarLike(t)) {
    const y = b();
    return isTensorLike(y) ? logicalAnd(truthyTensor(t), toBoolTensor(y)) : y;
  }
  if (!t.isSymbolic) {
    if (!concreteTruth(t, "&&")) return truthyTensor(t);
    const y = b();
    return isTensorLike(y) ? toBoolTensor(y) : y;
  }
  const p = truthyTensor(t);
  return condValues(
    p,
    () => {
      const y = b();
      return isTensorLike(y) ? toBoolTensor(y) : y;
    },
    () => p,
    "&&",
    "the right operand of &&",
  );
}

/** `a || b`, with `b` evaluated only when `a` is falsy. */
export function or(a: () => unknown, b: () => unknown): unknown {
  const x = a();
  if (!(x instanceof Tensor)) return x ? x : b();
  const t = readIfVariable(x) as Tensor;
  if (!isScalarLike(t)) {
    const y = b();
    return isTensorLike(y) ? logicalOr(truthyTensor(t), toBoolTensor(y)) : y;
  }
  if (!t.isSymbolic) {
    if (concreteTruth(t, "||")) return truthyTensor(t);
    const y = b();
    return isTensorLike(y) ? toBoolTensor(y) : y;
  }
  const p = truthyTensor(t);
  return condValues(
    p,
    () => p,
    () => {
      const y = b();
      return isTensorLike(y) ? toBoolTensor(y) : y;
    },
    "||",
    "the right operand of ||",
  );
}

/** `a ?? b`: tensors are never nullish. */
export function nullish(a: () => unknown, b: () => unknown): unknown {
  const x = a();
  return x === null || x === undefined ? b() : x;
}

/**
 * The discriminant of `switch (d)`, which JavaScript compares with `===` against each case: a
 * concrete tensor is read (its single value), as a tensor condition is; a symbolic one cannot
 * be staged (a switch is not converted to staged conditionals: write it as if / else if).
 */
export function switchValue(d: unknown, loc?: string | null): unknown {
  if (!(d instanceof Tensor)) return d;
  const t = readIfVariable(d) as Tensor;
  if (t.isSymbolic) {
    throw new AutoGraphError(
      `switch on a symbolic ${t.dtype}${fmtShape(t.shape)} tensor${at(loc)} cannot be staged: a switch compares its value with === against each case, ` +
        `which needs the value while tracing; write it as if / else if (converted to staged conditionals)`,
      loc,
    );
  }
  if (t.size !== 1) throw new ShapeError(`the value of a switch must be a scalar tensor, got shape ${fmtShape(t.shape)}`, "switch", locArg(loc));
  return t.item();
}
