/**
 * Executors: what runs a graph function's graph on concrete inputs. The compiled executor
 * (exec/compiled/) specializes a graph per concrete input signature into generated code; the
 * reference interpreter (interpreter.ts) walks it node by node. The package entry (api/) installs
 * the default one (config: STAGECRAFT_EXECUTOR) into staging.
 */
import { config } from "../core/config.js";
import { isTracing, withEagerContext } from "../core/context.js";
import type { Tensor } from "../core/tensor.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import { runGraphWith } from "./compiled/cache.js";
import { interpret } from "./interpreter.js";

export type Executor = (graph: Graph, inputs: Tensor[], library: FunctionLibrary) => Tensor[];

/**
 * Calls of a graph signature interpreted before it is compiled (`STAGECRAFT_COMPILE_AFTER`,
 * default 1: the first call interprets, the second compiles). Tracing already costs more than
 * an interpreted run, so functions called once never pay for compilation.
 */
export const DEFAULT_COMPILE_AFTER = config.compileAfter;

/** An executor that compiles a graph signature once it has run `compileAfter` times. */
export function createCompiledExecutor(compileAfter = DEFAULT_COMPILE_AFTER): Executor {
  const run = runGraphWith(compileAfter);
  return (graph, inputs, library) => {
    if (isTracing()) return withEagerContext(() => run(graph, inputs, { library }));
    return run(graph, inputs, { library });
  };
}

/** The compiled executor (the default one unless STAGECRAFT_EXECUTOR=interpret). */
export const compiledExecutor: Executor = createCompiledExecutor();

/** The reference interpreter as an Executor (for comparisons and debugging). */
export const interpretExecutor: Executor = (graph, inputs, library) => interpret(graph, inputs, { library });

/** The executor the configuration asks for (core/config.ts). */
export function configuredExecutor(): Executor {
  return config.executor === "interpret" ? interpretExecutor : compiledExecutor;
}
