/**
 * Returns lowered by the transform: `return v` inside a converted construct becomes
 * `$retval = ag.ret(v); $ret = true`, and the function ends with `return ag.retval($retval)`
 * (or `ag.retval($retval, $ret, loc)` when control can reach the end of the function).
 *
 * A return value variable that is still undefined is "no return yet": staged control flow
 * fills it with zeros on the paths that have not returned (their flag guarantees the filler is
 * never returned). A returned `undefined` is different: it is RETURNED_UNDEFINED, which staged
 * control flow cannot carry, so a staged `if` whose one branch returns a tensor and the other
 * `return;` is an error rather than zeros. At the end, a return flag that is a symbolic tensor
 * means a staged condition decides between returning and falling off the end (undefined).
 */
import { Tensor } from "../../core/tensor.js";
import { AutoGraphError, RETURNED_UNDEFINED, at } from "./state.js";

export { RETURNED_UNDEFINED };

/** `$retval = ag.ret(v)`. */
export function ret<T>(v: T): T | typeof RETURNED_UNDEFINED {
  return v === undefined ? RETURNED_UNDEFINED : v;
}

/** The final `return` of a function whose returns were lowered. */
export function retval(value: unknown, returned?: unknown, loc?: string | null): unknown {
  if (returned instanceof Tensor && returned.isSymbolic) {
    throw new AutoGraphError(
      `this function returns a value on some paths and reaches its end (returning undefined) on others, depending on a staged tensor condition${at(loc)}; ` +
        `a staged function cannot return undefined on some of its paths: return a value at the end too`,
      loc,
    );
  }
  return value === RETURNED_UNDEFINED || returned === false ? undefined : value;
}
