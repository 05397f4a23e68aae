/**
 * Escapes from the graph: hostCall runs JavaScript at graph run time; print logs at run
 * time; initScope runs code eagerly while tracing. The hostCall and print ops are declared in
 * ops/host.ts (stateful, so never pruned, merged or folded), so every executor and the tape
 * know them; a host function's gradient is made by the differentiator the package entry
 * installs (grad/host-function-gradient.ts: it differentiates the host function with the tape).
 */
import { Tensor } from "../core/tensor.js";
import { withEagerContext } from "../core/context.js";
import { ValueError } from "../core/errors.js";
import { applyOp } from "../ops/registry.js";
import { toTensor } from "../ops/convert.js";
import { hostCallOp, printOp, registerHostFunction, type HostFn, type PrintItem } from "../ops/host.js";
import { TensorSpec } from "./signature.js";

/**
 * hostCall(fn, outputSpecs, ...inputs): runs `fn` on concrete tensors when the graph runs
 * (eagerly: right away). outputSpecs is one sc.spec or an array of them. Differentiable when
 * fn computes with stagecraft ops.
 */
export function hostCall(fn: HostFn, outputSpecs: TensorSpec | TensorSpec[], ...inputs: Tensor[]): Tensor | Tensor[] {
  const specs = Array.isArray(outputSpecs) ? outputSpecs : [outputSpecs];
  for (const s of specs) if (!(s instanceof TensorSpec)) throw new ValueError(`output specs must be sc.spec(shape, dtype), got ${String(s)}`, "hostCall");
  const name = fn.name || "anonymous";
  const outs = applyOp(hostCallOp, inputs.map((x) => toTensor(x, "hostCall")), {
    fnId: registerHostFunction(fn, name),
    name,
    outputs: specs.map((s) => ({ dtype: s.dtype, shape: s.shape.slice() })),
  });
  return Array.isArray(outputSpecs) ? outs : outs[0]!;
}

/** Logs its arguments when the graph runs (eagerly: now). Tensors print with their values. */
export function print(...args: unknown[]): void {
  const inputs: Tensor[] = [];
  const items: PrintItem[] = args.map((a) => {
    if (a instanceof Tensor) {
      inputs.push(toTensor(a, "print"));
      return { input: inputs.length - 1 };
    }
    return { text: typeof a === "string" ? a : String(a) };
  });
  applyOp(printOp, inputs, { items });
}

/** Runs `fn` eagerly even while a function is being staged (for creating variables once). */
export function initScope<T>(fn: () => T): T {
  return withEagerContext(fn);
}
