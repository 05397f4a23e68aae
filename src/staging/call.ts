/**
 * Calls into the function library: a staged function called from staged code (or recursively
 * from itself) becomes a call node naming its graph, which the caller's library then holds.
 */
import type { Tensor } from "../core/tensor.js";
import { currentHandler, recorders } from "../core/context.js";
import type { FunctionLibrary, Graph, ValueType } from "../graph/ir.js";
import { callOp } from "../ops/structural.js";
import { StagingError, TraceContext } from "./trace-context.js";
import type { ConcreteFunction, FunctionBundle } from "./concrete-function.js";
import { recordCall } from "./recording.js";

/**
 * Emits a call of `bundle.graph` in the graph being built; while tapes record, the call's
 * gradient rule emits it (recording.ts). `calleeComplete` is false for a recursive call met
 * while its callee is still being traced.
 */
export function emitCall(bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[], calleeComplete = true): Tensor[] {
  const ctx = currentHandler();
  if (!(ctx instanceof TraceContext)) throw new StagingError("a call node needs a graph under construction", callOp.name);
  if (recorders.length > 0) return recordCall({ ctx, callee: bundle, args, outTypes, calleeComplete });
  return emitPlainCall(ctx, bundle, args, outTypes);
}

/** Emits the call node itself in `ctx` (no gradient rule), with the functions it needs. */
export function emitPlainCall(ctx: TraceContext, bundle: FunctionBundle, args: Tensor[], outTypes: ValueType[]): Tensor[] {
  addFunctions(ctx, bundle.library, bundle.graph);
  return ctx.addStructural(callOp.name, args, { callee: bundle.graph.name }, outTypes);
}

/** Adds `graph` and everything in `library` to the library of the graph `ctx` builds. */
export function addFunctions(ctx: TraceContext, library: FunctionLibrary, graph: Graph): void {
  for (const g of library.functions.values()) ctx.library.add(g);
  ctx.library.add(graph);
}

/** Emits a call node to `cf` in the graph being built; returns the outputs in `cf`'s structure. */
export function callFromTrace(cf: ConcreteFunction, args: Tensor[]): unknown {
  const outs = emitCall({ graph: cf.graph, library: cf.library }, [...args, ...cf.captureValues()], cf.graph.outputs.map((v) => v.type));
  return cf.structureOutputs(outs);
}
