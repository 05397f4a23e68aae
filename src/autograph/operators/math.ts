/**
 * `Math.*` in converted code (`ag.math.exp(x)`): with a tensor argument the registry op (with
 * JavaScript's conventions where they differ from the registry's: `Math.round` rounds halves
 * up, `Math.max()` of many arguments folds `maximum`); otherwise `Math.*` itself. Constants
 * and the functions without a tensor form are `Math`'s own.
 */
import { Tensor, type TensorLike } from "../../core/tensor.js";
import { ValueError } from "../../core/errors.js";
import { isFloat } from "../../core/dtype.js";
import { toTensor } from "../../ops/convert.js";
import * as U from "../../ops/unary.js";
import { add, atan2, div, maximum, minimum, mul, pow, sub } from "../../ops/binary.js";
import { greaterEqual, less } from "../../ops/compare.js";
import { cast } from "../../ops/cast.js";
import { where } from "../../ops/where.js";
import { isWeakOperand, markWeak, readIfVariable, weakOperands } from "./state.js";

type Fn = (...args: any[]) => any;

function t(x: unknown): Tensor {
  const v = readIfVariable(x as Tensor) as Tensor;
  return v.dtype === "bool" ? cast(v, "int32") : v;
}

/** A tensor argument as an operand (a JS value stays one: weak typing). */
const operand = (x: unknown): TensorLike => (x instanceof Tensor ? t(x) : (x as TensorLike));

function jsRound(x: Tensor): Tensor {
  if (!isFloat(x.dtype)) return x;
  const f = U.floor(x);
  return where(greaterEqual(sub(x, f), 0.5), add(f, 1), f);
}

function trunc(x: Tensor): Tensor {
  if (!isFloat(x.dtype)) return x;
  return where(less(x, 0), U.ceil(x), U.floor(x));
}

function fold(op: (a: TensorLike, b: TensorLike) => Tensor, args: unknown[]): Tensor {
  let acc = args[0] instanceof Tensor ? t(args[0]) : toTensor(args[0] as TensorLike, "Math");
  for (let i = 1; i < args.length; i++) acc = op(acc, operand(args[i]));
  return acc;
}

/** Tensor forms, by Math function name. */
const tensorForms: Record<string, Fn> = {
  abs: (x) => U.abs(t(x)),
  sign: (x) => U.sign(t(x)),
  exp: (x) => U.exp(t(x)),
  expm1: (x) => U.expm1(t(x)),
  log: (x) => U.log(t(x)),
  log1p: (x) => U.log1p(t(x)),
  log2: (x) => div(U.log(t(x)), Math.LN2),
  log10: (x) => div(U.log(t(x)), Math.LN10),
  sqrt: (x) => U.sqrt(t(x)),
  cbrt: (x) => {
    const v = t(x);
    return mul(U.sign(v), pow(U.abs(v), 1 / 3));
  },
  sin: (x) => U.sin(t(x)),
  cos: (x) => U.cos(t(x)),
  tan: (x) => U.tan(t(x)),
  asin: (x) => U.asin(t(x)),
  acos: (x) => U.acos(t(x)),
  atan: (x) => U.atan(t(x)),
  sinh: (x) => U.sinh(t(x)),
  cosh: (x) => U.cosh(t(x)),
  tanh: (x) => U.tanh(t(x)),
  asinh: (x) => {
    const v = t(x);
    return U.log(add(v, U.sqrt(add(U.square(v), 1))));
  },
  acosh: (x) => {
    const v = t(x);
    return U.log(add(v, U.sqrt(sub(U.square(v), 1))));
  },
  atanh: (x) => {
    const v = t(x);
    return mul(U.log(div(add(1, v), sub(1, v))), 0.5);
  },
  floor: (x) => {
    const v = t(x);
    return isFloat(v.dtype) ? U.floor(v) : v;
  },
  ceil: (x) => {
    const v = t(x);
    return isFloat(v.dtype) ? U.ceil(v) : v;
  },
  round: (x) => jsRound(t(x)),
  trunc: (x) => trunc(t(x)),
  fround: (x) => {
    const v = t(x);
    return v.dtype === "float64" ? cast(cast(v, "float32"), "float64") : v;
  },
  atan2: (y, x) => atan2(operand(y), operand(x)),
  pow: (x, y) => pow(operand(x), operand(y)),
  max: (...xs) => fold(maximum, xs),
  min: (...xs) => fold(minimum, xs),
  hypot: (...xs) => U.sqrt(xs.map((x) => U.square(x instanceof Tensor ? t(x) : toTensor(x as TensorLike, "Math.hypot"))).reduce((a, b) => add(a, b))),
};

/** Math functions whose result on integers is an integer (others compute weak integers in float64, as JS does). */
const INTEGER_CLOSED = new Set(["abs", "sign", "max", "min", "floor", "ceil", "round", "trunc"]);

function dispatching(name: string, native: Fn): Fn {
  const tensorForm = tensorForms[name];
  const f = (...args: unknown[]): unknown => {
    for (let i = 0; i < args.length; i++) {
      if (args[i] instanceof Tensor) {
        if (!tensorForm) throw new ValueError(`Math.${name} has no tensor form; it takes JavaScript numbers`, `Math.${name}`);
        if (args.every(isWeakOperand)) {
          // JS numbers carried as weak tensors: computed as JavaScript computes them.
          const asJs = INTEGER_CLOSED.has(name) ? args : args.map((a) => (a instanceof Tensor && a.dtype !== "float64" ? cast(readIfVariable(a) as Tensor, "float64") : a));
          return markWeak(tensorForm(...asJs));
        }
        return tensorForm(...weakOperands(args));
      }
    }
    return native(...args);
  };
  Object.defineProperty(f, "name", { value: name });
  return f;
}

/** `Math` with tensor-aware functions (see the module comment). */
export const math: Record<string, any> = (() => {
  const m: Record<string, any> = {};
  for (const k of Object.getOwnPropertyNames(Math)) {
    const v = (Math as unknown as Record<string, unknown>)[k];
    m[k] = typeof v === "function" ? dispatching(k, v as Fn) : v;
  }
  return Object.freeze(m);
})();
