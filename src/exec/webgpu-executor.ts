/**
 * Staged functions on the webgpu device. A staged call runs where its ops would (core/device.ts
 * opDevice: the device scope's, else its inputs'): on "webgpu" the graph runs here, on the CPU the
 * executor it replaces does.
 *
 * Graphs run through exec/webgpu-plan.ts when they can be planned (static shapes, GPU kernels):
 * buffers planned once per signature, elementwise chains fused into single WGSL kernels, the whole
 * call one plan the device replays, loops run by the device. Everything else (shapes known only at
 * run time, host calls, iteration stacks) runs node by node on the device's kernels through the
 * reference interpreter; `STAGECRAFT_WEBGPU_PLAN=0` does that for every graph.
 */
import { device, opDevice } from "../core/device.js";
import { isTracing, withEagerContext } from "../core/context.js";
import type { Tensor } from "../core/tensor.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import type { Executor } from "../staging/concrete-function.js";
import type { WebGpuBackend } from "../backends/webgpu/backend.js";
import { interpret } from "./interpreter.js";
import { planGraph, type GpuPlan } from "./webgpu-plan.js";

const PLANS = process.env.STAGECRAFT_WEBGPU_PLAN !== "0";
/** Signatures planned per graph before new ones are interpreted (a graph called with ever new shapes). */
const MAX_PLANS_PER_GRAPH = 16;

const cache = new WeakMap<Graph, WeakMap<FunctionLibrary, Map<string, GpuPlan | string>>>();

/** Why the last graphs could not be planned (for tests and diagnostics): graph name -> reason. */
export const unplanned = new Map<string, string>();

function planFor(backend: WebGpuBackend, graph: Graph, library: FunctionLibrary, inputs: Tensor[]): GpuPlan | null {
  let byLib = cache.get(graph);
  if (!byLib) cache.set(graph, (byLib = new WeakMap()));
  let plans = byLib.get(library);
  if (!plans) byLib.set(library, (plans = new Map()));
  const key = inputs.map((t) => `${t.dtype}[${t.shape.join(",")}]`).join(";");
  let p = plans.get(key);
  if (p === undefined) {
    p = plans.size >= MAX_PLANS_PER_GRAPH ? "too many input signatures" : planGraph(backend, graph, library, inputs.map((t) => ({ dtype: t.dtype, shape: t.shape })));
    plans.set(key, p);
    if (typeof p === "string") unplanned.set(graph.name, p);
  }
  return typeof p === "string" ? null : p;
}

/** The executor of the webgpu device `backend`. */
export function webgpuExecutor(backend: WebGpuBackend): Executor {
  return (graph: Graph, inputs: Tensor[], library: FunctionLibrary) => {
    const plan = PLANS && !isTracing() ? planFor(backend, graph, library, inputs) : null;
    if (plan) return withEagerContext(() => plan.run(inputs));
    // (in the device's scope: nodes without inputs, fills and constants, run there too)
    return device("webgpu:0", () => interpret(graph, inputs, { library }));
  };
}

/** An executor that runs graphs on `gpu` when their ops would run on a webgpu device (core/device.ts opDevice), else on `other`. */
export function byDevice(other: Executor, gpu: Executor): Executor {
  return (graph, inputs, library) => (opDevice(inputs).startsWith("webgpu") ? gpu : other)(graph, inputs, library);
}
