/**
 * The explicit wiring of the layers, in one place: what each layer leaves open for a higher one
 * to install. The package entry (index.ts) calls `wire()` once; importing any other module
 * installs nothing.
 *
 * - staging runs graph functions on the executor the configuration asks for (exec/executor.ts:
 *   the compiled executor, or STAGECRAFT_EXECUTOR=interpret's interpreter);
 * - stage() converts functions with AutoGraph first (autograph/api.ts convertForStage);
 * - a host function's gradient (ops/host.ts) is computed by differentiating it with the eager tape.
 */
import type { Tensor } from "../core/tensor.js";
import { setHostDifferentiator, type HostDifferentiator } from "../ops/host.js";
import { vjp } from "../ad/functional.js";
import { configuredExecutor } from "../exec/executor.js";
import { setDefaultExecutor } from "../staging/concrete-function.js";
import { setStageConverter } from "../staging/stage.js";
import { convertForStage } from "../autograph/api.js";

/**
 * The gradient function of a host function: at run time, the host function is differentiated
 * eagerly with a tape (inputs, then one cotangent per output -> one gradient per input).
 */
const differentiateWithTape: HostDifferentiator = (fn, n) => (...xs) => {
  const [, back] = vjp((...ins: Tensor[]) => {
    const r = fn(...ins);
    return Array.isArray(r) ? r : [r];
  }, ...xs.slice(0, n));
  return back(xs.slice(n)) as Tensor[];
};

let wired = false;

/** Installs the executor, the AutoGraph converter and the host-function differentiator (once). */
export function wire(): void {
  if (wired) return;
  wired = true;
  setDefaultExecutor(configuredExecutor());
  setStageConverter((fn) => convertForStage(fn));
  setHostDifferentiator(differentiateWithTape);
}
