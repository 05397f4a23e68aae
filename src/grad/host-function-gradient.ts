/**
 * The gradient of a host function (sc.hostCall): the hostCall op's VJP is a host call of the
 * gradient function this makes, which at run time differentiates the host function eagerly
 * with a tape (inputs, then one cotangent per output -> one gradient per input).
 */
import type { Tensor } from "../core/tensor.js";
import type { HostDifferentiator } from "../ops/host.js";
import { vjp } from "./functional.js";

export const differentiateHostFunction: HostDifferentiator = (fn, n) => (...xs) => {
  const [, back] = vjp((...ins: Tensor[]) => {
    const r = fn(...ins);
    return Array.isArray(r) ? r : [r];
  }, ...xs.slice(0, n));
  return back(xs.slice(n)) as Tensor[];
};
