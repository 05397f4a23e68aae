/**
 * Escapes from the graph: hostCall runs JavaScript at graph run time; print logs at run
 * time; initScope runs code eagerly while tracing. hostCall and print are registry ops
 * (stateful, so never pruned, merged or folded), so every executor and the tape know them.
 */
import { Tensor } from "../core/tensor.js";
import { withEagerContext } from "../core/context.js";
import { DtypeError, ShapeError, ValueError, atNode } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import { applyOp, defineOp, runtimeShapes, type TensorType } from "../ops/registry.js";
import { toTensor } from "../ops/convert.js";
import { vjp } from "../ad/functional.js";
import { zerosLikeTensor } from "../ops/fill.js";
import { TensorSpec } from "./signature.js";

type HostFn = (...xs: Tensor[]) => Tensor | Tensor[];

const hostFunctions = new Map<number, { fn: HostFn; name: string }>();
let nextFnId = 1;

function registerHostFunction(fn: HostFn, name: string): number {
  const id = nextFnId++;
  hostFunctions.set(id, { fn, name });
  return id;
}

interface HostCallAttrs {
  fnId: number;
  name: string;
  outputs: { dtype: TensorType["dtype"]; shape: number[] }[];
}

export const hostCallOp = defineOp<HostCallAttrs>({
  name: "hostCall",
  family: "host",
  inputs: ["inputs"],
  variadic: true,
  stateful: true,
  infer: (_inputs, a) => a.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
  kernels: {
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
    // The gradient of a host call is a host call of the gradient: at run time, the host
    // function is differentiated eagerly with a tape.
    const entry = hostFunctions.get(ctx.attrs.fnId)!;
    const n = ctx.inputs.length;
    const gradFn: HostFn = (...xs) => {
      const [, back] = vjp((...ins: Tensor[]) => {
        const r = entry.fn(...ins);
        return Array.isArray(r) ? r : [r];
      }, ...xs.slice(0, n));
      return back(xs.slice(n)) as Tensor[];
    };
    const filled = cts.map((c, i) => c ?? zerosOf(ctx.outputs[i]!));
    const specs = ctx.inputs.map((x) => new TensorSpec(x.shape, x.dtype));
    return hostCall(gradFn, specs, ...ctx.inputs, ...filled) as Tensor[];
  },
});

function zerosOf(t: Tensor): Tensor {
  return zerosLikeTensor(t);
}

/**
 * hostCall(fn, outputSpecs, ...inputs): runs `fn` on concrete tensors when the graph runs
 * (eagerly: right away). outputSpecs is one sc.spec or an array of them. Differentiable when
 * fn computes with stagecraft ops.
 */
export function hostCall(fn: HostFn, outputSpecs: TensorSpec | TensorSpec[], ...inputs: Tensor[]): Tensor | Tensor[] {
  const specs = Array.isArray(outputSpecs) ? outputSpecs : [outputSpecs];
  for (const s of specs) if (!(s instanceof TensorSpec)) throw new ValueError(`output specs must be sc.spec(shape, dtype), got ${String(s)}`, "hostCall");
  const fnId = registerHostFunction(fn, fn.name || "anonymous");
  const outs = applyOp(hostCallOp, inputs.map((x) => toTensor(x, "hostCall")), {
    fnId,
    name: fn.name || "anonymous",
    outputs: specs.map((s) => ({ dtype: s.dtype, shape: s.shape.slice() })),
  });
  return Array.isArray(outputSpecs) ? outs : outs[0]!;
}

type PrintItem = { text: string } | { input: number };

export const printOp = defineOp<{ items: PrintItem[] }>({
  name: "print",
  family: "host",
  inputs: ["inputs"],
  variadic: true,
  stateful: true,
  infer: () => [],
  kernels: {
    cpu(inputs, a) {
      console.log(...a.items.map((it) => ("text" in it ? it.text : inputs[it.input]!.toString())));
      return [];
    },
  },
});

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
