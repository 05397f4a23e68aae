/**
 * The onnxruntime engine: `sc.stage(fn, { engine: "onnxruntime" })` runs each of the function's
 * graphs as its exported ONNX model in an onnxruntime-node session, synchronously (the native
 * binding's run, as sync-session.ts loads it). A graph is exported and its session made once;
 * every call feeds the graph's inputs and the current values of the variables it reads, and
 * assigns the variables it writes from the model's extra outputs. Variables a graph only reads
 * start as initializers of its session (see `current` below).
 */
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import { exportGraphForEngine, type ExportedModel } from "./export/export.js";
import { syncRuntime } from "./sync-session.js";
import { fromOrtTensor, toOrtTensor } from "./ort.js";
import { OnnxError, OnnxRuntimeMissingError } from "./errors.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import { engineNames, setEngine } from "../staging/concrete-function.js";

type Session = InstanceType<NonNullable<ReturnType<typeof syncRuntime>>["Session"]>;

interface Compiled {
  model: ExportedModel;
  session: Session;
  fetches: Record<string, null>;
  /** Variables whose values are initializers of this session, with the values it holds. */
  baked: Map<Variable, Tensor>;
}

/** Per graph: its session, and how often a baked variable changed (twice: never bake again). */
interface GraphState {
  compiled: Compiled;
  changes: number;
}

export interface EngineOptions {
  /** onnxruntime execution providers (default ["cpu"]). */
  executionProviders?: string[];
  /** Threads of one operator (default: onnxruntime's choice). */
  intraOpNumThreads?: number;
}

const ENGINE_OPTIONS = optionKeys<EngineOptions>()("executionProviders", "intraOpNumThreads");

/**
 * Installs an onnxruntime engine under a new name with its own session options, so that
 * `sc.stage(fn, { engine: name })` runs on those execution providers (for example
 * `installEngine("ort-cuda", { executionProviders: ["cuda", "cpu"] })` where onnxruntime-node's
 * CUDA provider is installed). The built-in "onnxruntime" engine uses the CPU provider.
 */
export function installEngine(name: string, options: EngineOptions = {}): void {
  const api = "onnx.installEngine";
  if (typeof name !== "string" || name.length === 0) throw new ValueError(`the engine's name must be a non-empty string, got ${JSON.stringify(name)}`, api);
  if (engineNames().includes(name)) throw new ValueError(`an engine named "${name}" is already installed (installed: ${engineNames().join(", ")})`, api);
  checkOptions(api, options, ENGINE_OPTIONS);
  const eps = options.executionProviders;
  if (eps !== undefined && (!Array.isArray(eps) || eps.length === 0 || eps.some((e) => typeof e !== "string"))) {
    throw new ValueError(`options.executionProviders must be a non-empty array of provider names, got ${JSON.stringify(eps)}`, api);
  }
  const threads = options.intraOpNumThreads;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new ValueError(`options.intraOpNumThreads must be a positive integer, got ${String(threads)}`, api);
  }
  setEngine(name, onnxruntimeExecutor({ ...options }));
}

/** How many models the engine has loaded and run (for tests and benchmarks). */
export const engineStats = { sessions: 0, runs: 0 };

/** An executor (graph, inputs, library) -> outputs that runs graphs in onnxruntime. */
export function onnxruntimeExecutor(options: EngineOptions = {}): (graph: Graph, inputs: Tensor[], library: FunctionLibrary) => Tensor[] {
  const states = new WeakMap<Graph, GraphState>();
  const compile = (graph: Graph, library: FunctionLibrary, bake: boolean): Compiled => {
    const rt = syncRuntime();
    if (rt === null) {
      throw new OnnxRuntimeMissingError(
        `the onnxruntime engine needs onnxruntime-node, which is not installed (it is an optional dependency of stagecraft): add it with \`npm install onnxruntime-node@1.30\``,
        "onnxruntime",
      );
    }
    let model = exportGraphForEngine(graph, library);
    const baked = new Map<Variable, Tensor>();
    if (bake) {
      // Variables the graph reads and never assigns are initializers holding their current
      // values (onnxruntime then prepacks weights, as for a hand-built model); a call that
      // finds one changed rebuilds the session (twice: they are inputs from then on).
      const assigned = new Set(model.updatedVariables.map((u) => u.variable));
      for (const v of model.variableInputs) if (!assigned.has(v.variable)) baked.set(v.variable, v.variable.storedValue);
      if (baked.size > 0) model = exportGraphForEngine(graph, library, new Set(baked.keys()));
    }
    const session = new rt.Session();
    try {
      session.loadModel(model.bytes.buffer, model.bytes.byteOffset, model.bytes.byteLength, {
        executionProviders: options.executionProviders ?? ["cpu"],
        graphOptimizationLevel: "all",
        executionMode: "sequential",
        logSeverityLevel: 3,
        // (threads that spin after a run take the cores the caller and other sessions need next)
        extra: { session: { intra_op: { allow_spinning: "0" } } },
        ...(options.intraOpNumThreads !== undefined ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
      });
    } catch (e) {
      throw new OnnxError(`onnxruntime could not load the exported model of ${graph.name}: ${(e as Error).message}`, "onnxruntime");
    }
    engineStats.sessions++;
    const fetches: Record<string, null> = {};
    for (const n of model.outputNames) fetches[n] = null;
    for (const u of model.updatedVariables) fetches[u.output] = null;
    return { model, session, fetches, baked };
  };
  const current = (graph: Graph, library: FunctionLibrary): Compiled => {
    let st = states.get(graph);
    if (st === undefined) {
      states.set(graph, (st = { compiled: compile(graph, library, true), changes: 0 }));
      return st.compiled;
    }
    for (const [v, value] of st.compiled.baked) {
      if (v.storedValue !== value) {
        st.changes++;
        st.compiled = compile(graph, library, st.changes < 2);
        break;
      }
    }
    return st.compiled;
  };
  return (graph, inputs, library) => {
    const { model, session, fetches } = current(graph, library);
    const feeds: Record<string, object> = {};
    model.inputNames.forEach((n, i) => (feeds[n] = toOrtTensor(inputs[i]!)));
    for (const v of model.variableInputs) feeds[v.input] = toOrtTensor(v.variable.storedValue);
    engineStats.runs++;
    let out: Record<string, unknown>;
    try {
      out = session.run(feeds, fetches, {}) as Record<string, unknown>;
    } catch (e) {
      throw new OnnxError(`onnxruntime failed running ${graph.name}: ${(e as Error).message}`, "onnxruntime");
    }
    const get = (n: string) => fromOrtTensor(out[n] as Parameters<typeof fromOrtTensor>[0]);
    for (const u of model.updatedVariables) u.variable.setStoredValue(get(u.output));
    return model.outputNames.map(get);
  };
}
