/**
 * The onnxruntime engine: `sc.stage(fn, { engine: "onnxruntime" })` runs each of the function's
 * graphs as its exported ONNX model in an onnxruntime-node session, synchronously (the native
 * binding's run, as sync-session.ts loads it). Every call feeds the graph's arguments, and
 * assigns the variables it writes from the model's extra outputs. What it captures (variables it
 * only reads, captured tensors) is baked into a session specialized on those values while they
 * stay the same, and fed to a general session while they change (GraphState below).
 */
import type { Tensor } from "../core/tensor.js";
import { sizeOf } from "../core/shape.js";
import type { Variable } from "../core/variable.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import { exportGraphForEngine, type ExportedModel } from "./export/export.js";
import { syncRuntime } from "./sync-session.js";
import { fromOrtResult, toOrtTensor } from "./ort.js";
import { OnnxError, OnnxRuntimeMissingError } from "./errors.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import { config } from "../core/config.js";
import { configuredThreads } from "../backends/cpu/wasm-runtime.js";
import { engineNames, setEngine, type Executor } from "../staging/concrete-function.js";

type Session = InstanceType<NonNullable<ReturnType<typeof syncRuntime>>["Session"]>;
type OrtTensorCtor = NonNullable<ReturnType<typeof syncRuntime>>["Tensor"];

/** One exported model in its session, with what a call needs ready (names, fetches, feeds). */
interface Compiled {
  model: ExportedModel;
  session: Session;
  T: OrtTensorCtor;
  fetches: Record<string, null>;
  /** The feeds object, refilled at every call (runs are synchronous and never nest). */
  feeds: Record<string, object>;
  /**
   * Per feed (the model's inputs, then its variable inputs): a small tensor fed at an earlier
   * call and the onnxruntime tensor made for it, reused while that (immutable) tensor is fed
   * again (the same input, a variable's unchanged value); null before one is kept (see fed).
   */
  fedTensors: (Tensor | null)[];
  fedOrt: object[];
  /** Baked capture inputs and variables, each with the tensor its initializer holds. */
  bakedInputs: [index: number, value: Tensor][];
  bakedVariables: [variable: Variable, value: Tensor][];
}

/**
 * Per graph: a session specialized on the captures' current values (initializers, which
 * onnxruntime prepacks and constant-folds, as for a hand-built model), used while every one of
 * them is the very tensor it was built with; and a general session that feeds them (built when
 * they first change: training). Tensors are immutable and assigning a variable replaces its
 * value, so "the same tensor" means "the same values": the specialized session never gives a
 * stale answer. The specialized session is freed when its values change (its copy of the
 * weights is of no use any more); after the captures have stayed the same for `2 << rebakes`
 * calls in a row (training stopped), it is rebuilt on their new values.
 */
interface GraphState {
  /** Capture inputs that may be baked (indices; not the values of variables the graph assigns). */
  bakeableInputs: number[];
  /** Variables read through readVariable nodes that the graph never assigns. */
  bakeableVariables: Variable[];
  specialized: Compiled | null;
  general: Compiled | null;
  /** The bakeable values at the previous call, and for how many calls in a row they have not changed. */
  last: Tensor[];
  unchanged: number;
  rebakes: number;
}

/** Whether a graph's state has no captured values to bake: then its general session serves every call (made at once). */
function nothingToBake(st: GraphState): boolean {
  return st.bakeableInputs.length === 0 && st.bakeableVariables.length === 0;
}

/** (specialized sessions are rebuilt at most this many times per graph) */
const MAX_REBAKES = 8;

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

/**
 * Whether a graph (its regions and callees too) has a float64 value. onnxruntime's extended
 * optimizations write float64 constants as float32 attributes (MatMulScaleFusion: a MatMul then a
 * Mul by a scalar becomes FusedMatMul, whose alpha is a float: x.matmul(y).mul(0.1) off by ~1e-8
 * relative in double): sessions of such graphs are optimized at the basic level only (constant
 * folding, redundant nodes), which keeps float64 exact.
 */
function hasFloat64(graph: Graph, library: FunctionLibrary, seen = new Set<Graph>()): boolean {
  if (seen.has(graph)) return false;
  seen.add(graph);
  if (graph.inputs.some((v) => v.type.dtype === "float64")) return true;
  for (const n of graph.nodes) {
    if (n.outputs.some((v) => v.type.dtype === "float64")) return true;
    if (n.regions.some((r) => hasFloat64(r, library, seen))) return true;
    const callee = n.attrs.callee;
    if (typeof callee === "string" && library.functions.has(callee) && hasFloat64(library.get(callee), library, seen)) return true;
  }
  return false;
}

/**
 * The session's intra-op threads: the option, else STAGECRAFT_THREADS where it is set (the
 * project's one thread setting covers the engine's kernels as it covers ours: with it at 1 the
 * auto plan's sessions run on one core too), else onnxruntime's default (one per core).
 */
function intraOpThreads(options: EngineOptions): { intraOpNumThreads?: number } {
  if (options.intraOpNumThreads !== undefined) return { intraOpNumThreads: options.intraOpNumThreads };
  return config.threads !== undefined && config.threads !== "" ? { intraOpNumThreads: configuredThreads() } : {};
}

/** An executor (graph, inputs, library, numArgInputs) -> outputs that runs graphs in onnxruntime. */
export function onnxruntimeExecutor(options: EngineOptions = {}): Executor {
  checkOptions("onnx.onnxruntimeExecutor", options, ENGINE_OPTIONS);
  const states = new WeakMap<Graph, GraphState>();
  const compile = (graph: Graph, library: FunctionLibrary, model: ExportedModel, bakedInputs: [number, Tensor][], bakedVariables: [Variable, Tensor][]): Compiled => {
    const rt = runtime();
    const session = new rt.Session();
    try {
      session.loadModel(model.bytes.buffer, model.bytes.byteOffset, model.bytes.byteLength, {
        executionProviders: options.executionProviders ?? ["cpu"],
        graphOptimizationLevel: hasFloat64(graph, library) ? "basic" : "all",
        executionMode: "sequential",
        // (fatal only: a failed run's message comes back in the error we throw, or the plan reruns
        // the segment on ours; at the error level onnxruntime also printed it to stderr)
        logSeverityLevel: 4,
        // (threads that spin after a run take the cores the caller and other sessions need next)
        extra: { session: { intra_op: { allow_spinning: "0" } } },
        ...intraOpThreads(options),
      });
    } catch (e) {
      throw new OnnxError(`onnxruntime could not load the exported model of ${graph.name}: ${(e as Error).message}`, "onnxruntime");
    }
    engineStats.sessions++;
    const fetches: Record<string, null> = {};
    for (const n of model.outputNames) fetches[n] = null;
    for (const u of model.updatedVariables) fetches[u.output] = null;
    const feeds: Record<string, object> = {};
    const numFeeds = model.inputNames.length + model.variableInputs.length;
    for (const n of model.inputNames) feeds[n] = NO_FEED;
    for (const v of model.variableInputs) feeds[v.input] = NO_FEED;
    const fedTensors = new Array<Tensor | null>(numFeeds).fill(null);
    return { model, session, T: rt.Tensor, fetches, feeds, fedTensors, fedOrt: new Array<object>(numFeeds).fill(NO_FEED), bakedInputs, bakedVariables };
  };
  /** The session specialized on the bakeable values `current` (the general one's export shows what they are). */
  const specialize = (graph: Graph, library: FunctionLibrary, st: GraphState, current: Tensor[]): Compiled => {
    const n = st.bakeableInputs.length;
    const bakedInputs = st.bakeableInputs.map((i, k): [number, Tensor] => [i, current[k]!]);
    const bakedVariables = st.bakeableVariables.map((v, k): [Variable, Tensor] => [v, current[n + k]!]);
    // (the export reads a baked variable's value from the variable: it is current[n + k] now)
    const model = exportGraphForEngine(graph, library, { inputs: new Map(bakedInputs), variables: new Set(st.bakeableVariables) });
    st.specialized?.session.dispose();
    return (st.specialized = compile(graph, library, model, bakedInputs, bakedVariables));
  };
  const stateOf = (graph: Graph, library: FunctionLibrary, inputs: Tensor[], numArgInputs: number): GraphState => {
    let st = states.get(graph);
    if (st !== undefined) return st;
    // The general model first: it says which variables the graph reads and which it assigns.
    const model = exportGraphForEngine(graph, library);
    const assigned = new Set(model.updatedVariables.map((u) => u.variable));
    const assignedValues = new Set([...assigned].map((v) => v.storedValue));
    const bakeableInputs: number[] = [];
    // (a capture holding the value of a variable the graph assigns changes at every call)
    for (let i = numArgInputs; i < inputs.length; i++) if (!assignedValues.has(inputs[i]!)) bakeableInputs.push(i);
    const bakeableVariables = model.variableInputs.map((v) => v.variable).filter((v) => !assigned.has(v));
    st = { bakeableInputs, bakeableVariables, specialized: null, general: null, last: [], unchanged: 0, rebakes: 0 };
    if (nothingToBake(st)) st.general = compile(graph, library, model, [], []);
    states.set(graph, st);
    return st;
  };
  /** The session for this call: the specialized one while its baked values are the current ones. */
  const sessionFor = (st: GraphState, graph: Graph, library: FunctionLibrary, inputs: Tensor[]): Compiled => {
    const sp = st.specialized;
    if (sp !== null && bakedAreCurrent(sp, inputs)) return sp;
    if (nothingToBake(st)) return st.general!;
    const current = [...st.bakeableInputs.map((i) => inputs[i]!), ...st.bakeableVariables.map((v) => v.storedValue)];
    const same = st.last.length === current.length && current.every((t, k) => t === st.last[k]);
    st.unchanged = same ? st.unchanged + 1 : 0;
    st.last = current;
    if (sp === null && st.general === null) return specialize(graph, library, st, current);
    if (st.unchanged >= 2 << st.rebakes && st.rebakes < MAX_REBAKES) {
      st.rebakes++;
      return specialize(graph, library, st, current);
    }
    // (the specialized session's values are gone: its copy of them is freed)
    if (sp !== null) {
      sp.session.dispose();
      st.specialized = null;
    }
    return (st.general ??= compile(graph, library, exportGraphForEngine(graph, library), [], []));
  };
  const execute: Executor = (graph, inputs, library, numArgInputs = inputs.length) =>
    run(sessionFor(stateOf(graph, library, inputs, numArgInputs), graph, library, inputs), graph, inputs);
  // A concrete function's prepared run. A graph without captures is looked up now: when it has
  // nothing to bake, its one session serves every call and the run holds it; else the run holds
  // the graph's state from its first call on.
  execute.prepare = (graph, library, numArgInputs) => {
    if (numArgInputs === graph.inputs.length) {
      const st = stateOf(graph, library, [], numArgInputs);
      const plain = nothingToBake(st) ? st.general! : null;
      if (plain !== null) return (inputs) => run(plain, graph, inputs);
    }
    let st: GraphState | null = null;
    return (inputs) => run(sessionFor((st ??= stateOf(graph, library, inputs, numArgInputs)), graph, library, inputs), graph, inputs);
  };
  return execute;
}

/** Runs `c` on the graph's inputs: feeds them (and the variables it reads), assigns the variables it writes, returns its outputs. */
function run(c: Compiled, graph: Graph, inputs: Tensor[]): Tensor[] {
  const { model, feeds } = c;
  // (plain loops, no closures: this is the whole per-call cost besides onnxruntime's run)
  const names = model.inputNames;
  const indices = model.inputIndices;
  const n = names.length;
  for (let k = 0; k < n; k++) feeds[names[k]!] = fed(c, k, inputs[indices[k]!]!);
  const vars = model.variableInputs;
  for (let k = 0; k < vars.length; k++) feeds[vars[k]!.input] = fed(c, n + k, vars[k]!.variable.storedValue);
  engineStats.runs++;
  let out: Record<string, OrtResult>;
  try {
    out = c.session.run(feeds, c.fetches) as Record<string, OrtResult>;
  } catch (e) {
    throw new OnnxError(`onnxruntime failed running ${graph.name}: ${(e as Error).message}`, "onnxruntime");
  } finally {
    // (the feeds object is kept for the next call; the inputs are held by fedTensors alone)
    for (let k = 0; k < n; k++) feeds[names[k]!] = NO_FEED;
    for (let k = 0; k < vars.length; k++) feeds[vars[k]!.input] = NO_FEED;
  }
  const updates = model.updatedVariables;
  for (let k = 0; k < updates.length; k++) updates[k]!.variable.setStoredValue(fromOrtResult(out[updates[k]!.output]!));
  const outNames = model.outputNames;
  if (outNames.length === 1) return [fromOrtResult(out[outNames[0]!]!)];
  const results: Tensor[] = new Array(outNames.length);
  for (let k = 0; k < outNames.length; k++) results[k] = fromOrtResult(out[outNames[k]!]!);
  return results;
}

/**
 * The onnxruntime tensor of feed `k` holding tensor `t`: the one made at an earlier call when `t`
 * is the tensor kept then (tensors are immutable: the same tensor, the same values), else a new
 * one. Only small tensors are kept for the next call: keeping one holds its storage alive, which
 * for a large tensor costs memory to save a constructor call (~40 ns) that is nothing beside its run.
 */
function fed(c: Compiled, k: number, t: Tensor): object {
  if (c.fedTensors[k] === t) return c.fedOrt[k]!;
  const o = ortTensor(c.T, t);
  if (sizeOf(t.shape) <= KEEP_FED_ELEMENTS) {
    c.fedTensors[k] = t;
    c.fedOrt[k] = o;
  }
  return o;
}

/** (the largest tensor, in elements, whose onnxruntime tensor is kept for the next call: 16 KiB of float32) */
const KEEP_FED_ELEMENTS = 4096;


type OrtResult = Parameters<typeof fromOrtResult>[0];

const NO_FEED = Object.freeze({});

/** Whether every value baked into `c` is still the current one (the same immutable tensor). */
function bakedAreCurrent(c: Compiled, inputs: Tensor[]): boolean {
  const bi = c.bakedInputs;
  for (let k = 0; k < bi.length; k++) if (inputs[bi[k]![0]] !== bi[k]![1]) return false;
  const bv = c.bakedVariables;
  for (let k = 0; k < bv.length; k++) if (bv[k]![0].storedValue !== bv[k]![1]) return false;
  return true;
}

/** Dtypes whose storage onnxruntime reads as it is (the others convert: toOrtTensor). */
const DIRECT: Partial<Record<string, "float32" | "float64" | "int32" | "int8" | "int16" | "uint8" | "uint16" | "uint32">> = {
  float32: "float32",
  float64: "float64",
  int32: "int32",
  int8: "int8",
  int16: "int16",
  uint8: "uint8",
  uint16: "uint16",
  uint32: "uint32",
};

/** A tensor as onnxruntime's input: its own storage where it can (a SharedArrayBuffer view is copied: the binding refuses those). */
export function ortTensor(T: OrtTensorCtor, t: Tensor): object {
  const type = DIRECT[t.dtype];
  if (type === undefined) return toOrtTensor(t);
  let data = t.dataSync();
  if (data.buffer instanceof SharedArrayBuffer) data = data.slice();
  return new (T as unknown as new (type: string, data: unknown, dims: readonly number[]) => object)(type, data, t.shape);
}

function runtime(): NonNullable<ReturnType<typeof syncRuntime>> {
  const rt = syncRuntime();
  if (rt === null) {
    throw new OnnxRuntimeMissingError(
      `the onnxruntime engine needs onnxruntime-node, which is not installed (it is an optional dependency of stagecraft): add it with \`npm install onnxruntime-node@1.30\``,
      "onnxruntime",
    );
  }
  return rt;
}
