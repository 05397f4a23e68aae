/**
 * Built-in functions that would convert a tensor to a JavaScript number, met by converted code
 * as callees or as values (`isNaN(t)`, `Number(t)`, `xs.map(Math.abs)`, `xs.forEach(console.log)`):
 * each has a stand-in that computes on tensors (elementwise) and otherwise is the built-in
 * itself. `Math.*` stand-ins are in math.ts, `console.log`'s is `print` (logging.ts).
 *
 *   Number(t)          t itself (bool becomes int32), as `+t` in converted code
 *   Boolean(t)         t != 0 (elementwise truth, as `!!t`)
 *   isNaN(t)           elementwise isNaN          Number.isNaN(t)     the same
 *   isFinite(t)        elementwise isFinite       Number.isFinite(t)  the same
 *   Number.isInteger(t)  finite and equal to its floor
 */
import { Tensor } from "../../core/tensor.js";
import { DEFAULT_FLOAT, isFloat, type DType } from "../../core/dtype.js";
import { scalar as scalarOp, tensor as tensorOp, fullLike as fullLikeOp } from "../../ops/creation.js";
import { broadcastTo } from "../../ops/shape.js";
import { add } from "../../ops/binary.js";
import { zerosLike } from "../../ops/creation.js";
import { cast } from "../../ops/cast.js";
import { equal, logicalAnd, notEqual } from "../../ops/compare.js";
import { floor, isFinite as isFiniteOp, isNaN as isNaNOp } from "../../ops/unary.js";
import { full } from "../../ops/fill.js";
import { isWeak, markWeak, readIfVariable } from "./state.js";
import { math } from "./math.js";
import { print } from "./logging.js";

type Fn = (...args: any[]) => any;

function numeric(x: Tensor): Tensor {
  const t = readIfVariable(x) as Tensor;
  return t.dtype === "bool" ? cast(t, "int32") : t;
}

function allTrue(t: Tensor): Tensor {
  return full([...t.shape], 1, "bool");
}

const tensorForms: [Fn, string, (x: Tensor) => Tensor][] = [
  [Number, "Number", (x) => (isWeak(x) ? markWeak(numeric(x)) : numeric(x))],
  [Boolean, "Boolean", (x) => notEqual(numeric(x), 0)],
  [isNaN, "isNaN", (x) => isNaNOp(numeric(x))],
  [Number.isNaN, "isNaN", (x) => isNaNOp(numeric(x))],
  [isFinite, "isFinite", (x) => isFiniteOp(numeric(x))],
  [Number.isFinite, "isFinite", (x) => isFiniteOp(numeric(x))],
  [
    Number.isInteger,
    "isInteger",
    (x) => {
      const t = numeric(x);
      return isFloat(t.dtype) ? logicalAnd(isFiniteOp(t), equal(floor(t), t)) : allTrue(t);
    },
  ],
];

function dispatching(name: string, native: Fn, form: (x: Tensor) => Tensor): Fn {
  const f = (...args: unknown[]): unknown => (args[0] instanceof Tensor ? form(args[0]) : native(...args));
  Object.defineProperty(f, "name", { value: name });
  return f;
}

/**
 * Stagecraft's creation functions given a weak tensor (a JS number a staged loop carried) where
 * they take a number make what they make of the number: `sc.scalar(i)` for a loop counter `i`
 * is a float32 scalar holding it, as eagerly (it was a ValueError: "takes a number").
 */
const weakNumberForms: [Fn, string, (v: Tensor, args: unknown[]) => Tensor | undefined][] = [
  [scalarOp as Fn, "scalar", (v, a) => cast(v, (a[1] as DType | undefined) ?? DEFAULT_FLOAT)],
  [tensorOp as Fn, "tensor", (v, a) => (a[2] === undefined ? cast(v, (a[1] as DType | undefined) ?? DEFAULT_FLOAT) : undefined)],
  [full as Fn, "full", (v, a) => broadcastTo(cast(v, (a[2] as DType | undefined) ?? DEFAULT_FLOAT), a[0] as number[])],
  [
    fullLikeOp as Fn,
    "fullLike",
    (v, a) => {
      const x = a[0] as Tensor;
      const d = (a[2] as DType | undefined) ?? (x instanceof Tensor ? x.dtype : DEFAULT_FLOAT);
      return add(zerosLike(x, d), cast(v, d));
    },
  ],
];

function takingWeakNumbers(name: string, native: Fn, index: number, form: (v: Tensor, args: unknown[]) => Tensor | undefined): Fn {
  const f = (...args: unknown[]): unknown => {
    const v = args[index];
    const made = isWeak(v) && (v as Tensor).rank === 0 ? form(v as Tensor, args) : undefined;
    return made ?? native(...args);
  };
  Object.defineProperty(f, "name", { value: name });
  return f;
}

/** Built-in function -> its tensor-aware stand-in (for ag.callee / ag.callMethod and callbacks). */
export const builtinStandIns: ReadonlyMap<Fn, Fn> = (() => {
  const m = new Map<Fn, Fn>();
  for (const [native, name, form] of tensorForms) m.set(native, dispatching(name, native, form));
  for (const [native, name, form] of weakNumberForms) m.set(native, takingWeakNumbers(name, native, name === "scalar" || name === "tensor" ? 0 : 1, form));
  for (const k of Object.getOwnPropertyNames(Math)) {
    const v = (Math as unknown as Record<string, unknown>)[k];
    if (typeof v === "function" && typeof math[k] === "function") m.set(v as Fn, math[k] as Fn);
  }
  // eslint-disable-next-line no-console
  m.set(console.log, print);
  return m;
})();
