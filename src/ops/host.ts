/**
 * Host ops: escapes from a graph to JavaScript when it runs. hostCall runs a registered host
 * function on concrete tensors; print logs; assert throws a registered error when its condition
 * is false. All three are stateful (never pruned, merged or folded), so every executor and the
 * tape know them. The user functions that make them are in staging/host.ts (hostCall, print)
 * and autograph/operators/logging.ts (assertions).
 */
import { DtypeError, GradientError, ShapeError, StagecraftError, ValueError, atNode } from "../core/errors.js";
import { withEagerContext } from "../core/context.js";
import { fmtShape } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import type { TensorType } from "../core/tensor-type.js";
import { applyOp, defineOp, runtimeShapes, type OpDef } from "./registry.js";
import { zerosLikeTensor } from "./fill.js";
import { onHost } from "../backends/webgpu/op-kernels/types.js";
import { perExample } from "./batching.js";

export type HostFn = (...xs: Tensor[]) => Tensor | Tensor[];

/**
 * Makes the gradient function of a host function with `numInputs` inputs: given the inputs and
 * one cotangent per output, it returns one gradient per input (staging/host.ts differentiates
 * the function eagerly with a tape).
 */
export type HostDifferentiator = (fn: HostFn, numInputs: number) => HostFn;

interface HostEntry {
  fn: HostFn;
  name: string;
  differentiate: HostDifferentiator | null;
}

const hostFunctions = new Map<number, HostEntry>();
let nextFnId = 1;
let defaultDifferentiator: HostDifferentiator | null = null;

/**
 * Installs how host functions are differentiated by default (the package entry, api/wiring.ts,
 * installs the eager tape's: ops know no tape).
 */
export function setHostDifferentiator(d: HostDifferentiator | null): void {
  defaultDifferentiator = d;
}

/**
 * Registers a host function for hostCall nodes; `differentiate` makes its gradient (default: the
 * installed one; null: not differentiable).
 */
export function registerHostFunction(fn: HostFn, name: string, differentiate: HostDifferentiator | null | undefined = undefined): number {
  const id = nextFnId++;
  hostFunctions.set(id, { fn, name, differentiate: differentiate === undefined ? defaultDifferentiator : differentiate });
  return id;
}

export interface HostCallAttrs {
  fnId: number;
  name: string;
  outputs: { dtype: TensorType["dtype"]; shape: number[] }[];
}

export const hostCallOp: OpDef<HostCallAttrs> = defineOp<HostCallAttrs>({
  name: "hostCall",
  batch: perExample,
  family: "host",
  inputs: ["inputs"],
  variadic: true,
  stateful: true,
  checkAttrs(attrs) {
    if (typeof attrs.fnId !== "number") throw new Error(`attrs.fnId must be a number, got ${JSON.stringify(attrs.fnId)}`);
    const outs = attrs.outputs;
    const ok = Array.isArray(outs) && outs.every((o: unknown) => o !== null && typeof o === "object" && typeof (o as TensorType).dtype === "string" && Array.isArray((o as TensorType).shape));
    if (!ok) throw new Error(`attrs.outputs must be an array of {dtype, shape} output specs, got ${JSON.stringify(outs)}`);
  },
  infer: (_inputs, a) => a.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
  kernels: {
    webgpu: onHost("hostCall"),
    cpu(inputs, a, outs) {
      const entry = hostFunctions.get(a.fnId);
      if (!entry) throw new ValueError(`host function ${a.name} is not registered in this process`, "hostCall");
      // The host function is the user's own code: its errors name their own lines.
      const result = atNode(null, () => withEagerContext(() => entry.fn(...inputs)));
      const list = Array.isArray(result) ? result : [result];
      if (list.length !== outs.length) throw new ValueError(`host function ${a.name} returned ${list.length} tensors, its output specs say ${outs.length}`, "hostCall");
      return list.map((t, i) => {
        const o = outs[i]!;
        if (!(t instanceof Tensor)) throw new ValueError(`host function ${a.name} returned ${typeof t} for output ${i}, expected a tensor`, "hostCall");
        if (t.dtype !== o.dtype) throw new DtypeError(`host function ${a.name} output ${i} is ${t.dtype}, its spec says ${o.dtype}`, "hostCall");
        if (t.rank !== o.shape.length || t.shape.some((d, j) => o.shape[j]! >= 0 && o.shape[j] !== d)) {
          throw new ShapeError(`host function ${a.name} output ${i} has shape ${fmtShape(t.shape)}, its spec says ${fmtShape(o.shape)}`, "hostCall");
        }
        const data = t.dataSync();
        if (o.shape.some((d) => d < 0)) runtimeShapes.set(data, t.shape.slice());
        return data;
      });
    },
  },
  vjp(ctx, cts) {
    // The gradient of a host call is a host call of the gradient function, which runs when the
    // graph runs (and is itself differentiable the same way).
    const entry = hostFunctions.get(ctx.attrs.fnId)!;
    const differentiate = entry.differentiate ?? defaultDifferentiator;
    if (!differentiate) throw new GradientError(`host function ${entry.name} has no gradient: no differentiator is installed (import stagecraft, whose entry installs the tape's)`, "hostCall");
    const gradFn = differentiate(entry.fn, ctx.inputs.length);
    const filled = cts.map((c, i) => c ?? zerosLikeTensor(ctx.outputs[i]!));
    const name = `${entry.name}_grad`;
    return applyOp(hostCallOp, [...ctx.inputs, ...filled], {
      fnId: registerHostFunction(gradFn, name, differentiate),
      name,
      outputs: ctx.inputs.map((x) => ({ dtype: x.dtype, shape: x.shape.slice() })),
    });
  },
});

export type PrintItem = { text: string } | { input: number };

export const printOp = defineOp<{ items: PrintItem[] }>({
  name: "print",
  batch: perExample,
  family: "host",
  inputs: ["inputs"],
  variadic: true,
  stateful: true,
  /** The items: text, or the index of one of the inputs. */
  checkAttrs(attrs, numInputs) {
    const items = attrs.items;
    if (!Array.isArray(items)) throw new Error("attrs.items must be an array of {text} and {input} items");
    items.forEach((it: unknown, i) => {
      const item = it as { text?: unknown; input?: unknown } | null;
      const ok =
        item !== null &&
        typeof item === "object" &&
        (typeof item.text === "string" || (typeof item.input === "number" && Number.isInteger(item.input) && item.input >= 0 && item.input < numInputs));
      if (!ok) throw new Error(`print item ${i} must be {text: string} or {input: k} with k < ${numInputs}, got ${JSON.stringify(it)}`);
    });
  },
  infer: () => [],
  kernels: {
    webgpu: onHost("print"),
    cpu(inputs, a) {
      console.log(...a.items.map((it) => ("text" in it ? it.text : inputs[it.input]!.toString())));
      return [];
    },
  },
});

/** Raised by a staged assertion (sc.assert, or `if (c) throw` on a staged condition) whose error is not registered. */
export class AssertionFailedError extends StagecraftError {}

const assertionErrors = new Map<number, () => unknown>();
let nextAssertionId = 1;

/** Registers the error an assert node throws: `makeError` is called when the condition is false. */
export function registerAssertion(makeError: () => unknown): number {
  const id = nextAssertionId++;
  assertionErrors.set(id, makeError);
  return id;
}

/**
 * Throws the registered error when its input (a bool scalar: "ok") is false. `guard` marks a
 * check that Stagecraft adds to protect the process rather than one the program states (the
 * iteration limit of an imported ONNX Loop): an exported model leaves it out, as its source had none.
 */
export const assertOp = defineOp<{ fnId: number; message: string; guard?: boolean }>({
  name: "assert",
  batch: perExample,
  family: "host",
  inputs: ["ok"],
  stateful: true,
  infer(inputs) {
    const ok = inputs[0]!;
    if (ok.dtype !== "bool" || !ok.shape.every((d) => d === 1)) {
      throw new ShapeError(`the condition must be a bool scalar, got ${ok.dtype}${fmtShape(ok.shape)}`, "assert");
    }
    return [];
  },
  kernels: {
    webgpu: onHost("assert"),
    cpu(inputs, attrs) {
      if (inputs[0]!.dataSync()[0] !== 0) return [];
      const make = assertionErrors.get(attrs.fnId);
      if (!make) throw new AssertionFailedError(attrs.message || "assertion failed", "assert", null);
      throw make();
    },
  },
});
