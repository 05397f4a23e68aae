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
import type { Executor } from "./executor.js";
import { config } from "../core/config.js";
import type { WebGpuBackend } from "../backends/webgpu/backend.js";
import { interpret } from "./interpreter.js";
import { hostScalar, planGraph, type GpuPlan } from "./webgpu-plan.js";

const PLANS = config.webgpuPlan;
/** Input signatures planned per graph before new ones are interpreted (a graph called with ever new shapes). */
const MAX_SIGNATURES = 16;
/** Plans per signature specialized on input values (trip counts) before the unspecialized plan is used. */
const MAX_VALUE_PLANS = 8;

/** The plans of one input signature: specialized on the values of the inputs `dependsOn` lists. */
interface Signature {
  dependsOn: number[];
  plans: Map<string, GpuPlan>;
  /** The plan that uses no input's value (or why there is none), made when first needed. */
  generic?: GpuPlan | string;
}

const cache = new WeakMap<Graph, WeakMap<FunctionLibrary, Map<string, Signature | string>>>();

/** Why the last graphs could not be planned (for tests and diagnostics): graph name -> reason. */
export const unplanned = new Map<string, string>();

/** The values of `inputs` at `dependsOn` as a key, or null when one is not on the host. */
function valueKey(dependsOn: number[], inputs: Tensor[]): string | null {
  let key = "";
  for (const i of dependsOn) {
    const v = hostScalar(inputs[i]!);
    if (v === undefined) return null;
    key += `${v},`;
  }
  return key;
}

function planFor(backend: WebGpuBackend, graph: Graph, library: FunctionLibrary, inputs: Tensor[]): GpuPlan | null {
  let byLib = cache.get(graph);
  if (!byLib) cache.set(graph, (byLib = new WeakMap()));
  let sigs = byLib.get(library);
  if (!sigs) byLib.set(library, (sigs = new Map()));
  const key = inputs.map((t) => `${t.dtype}[${t.shape.join(",")}]`).join(";");
  let sig = sigs.get(key);
  const failed = (why: string) => {
    unplanned.set(graph.name, why);
    return null;
  };
  if (sig === undefined) {
    if (sigs.size >= MAX_SIGNATURES) sigs.set(key, (sig = "too many input signatures"));
    else {
      const r = planGraph(backend, graph, library, inputs, true);
      if (typeof r === "string") sigs.set(key, (sig = r));
      else {
        sigs.set(key, { dependsOn: r.dependsOn, plans: new Map([[valueKey(r.dependsOn, inputs)!, r.plan]]) });
        return r.plan;
      }
    }
  }
  if (typeof sig === "string") return failed(sig);
  const vk = valueKey(sig.dependsOn, inputs);
  if (vk !== null) {
    const p = sig.plans.get(vk);
    if (p) return p;
    if (sig.plans.size < MAX_VALUE_PLANS) {
      const r = planGraph(backend, graph, library, inputs, true);
      if (typeof r !== "string") {
        sig.plans.set(vk, r.plan);
        return r.plan;
      }
    }
  }
  sig.generic ??= ((r) => (typeof r === "string" ? r : r.plan))(planGraph(backend, graph, library, inputs, false));
  return typeof sig.generic === "string" ? failed(sig.generic) : sig.generic;
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
