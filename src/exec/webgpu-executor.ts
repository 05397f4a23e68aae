/**
 * Staged functions on the webgpu device. A staged call runs on the device current at the call
 * (as eager ops do): on "webgpu" the graph runs here, on the CPU the executor it replaces does.
 *
 * Graphs run through exec/webgpu-plan.ts when they can be planned (static shapes): buffers planned
 * once per signature, elementwise chains fused into single WGSL kernels, the whole call recorded
 * as one plan the device replays. Everything else (shapes known only at run time, host calls)
 * runs node by node on the device's kernels through the reference interpreter.
 */
import { currentDevice } from "../core/device.js";
import type { Tensor } from "../core/tensor.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import type { Executor } from "../staging/concrete-function.js";
import { interpret } from "./interpreter.js";

/** Runs a graph on the webgpu device. */
export const webgpuExecutor: Executor = (graph: Graph, inputs: Tensor[], library: FunctionLibrary) => interpret(graph, inputs, { library });

/** An executor that runs graphs on `gpu` while the current device is a webgpu one, else on `other`. */
export function byDevice(other: Executor, gpu: Executor): Executor {
  return (graph, inputs, library) => (currentDevice().startsWith("webgpu") ? gpu : other)(graph, inputs, library);
}
