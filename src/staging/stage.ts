/**
 * stage(fn): a callable that traces `fn` into a graph the first time it meets an input
 * signature and runs the cached concrete function afterwards. The jobs are in files of their
 * own: the cache by signature (trace-cache.ts), tracing one signature (trace.ts), and recursive
 * calls and stack overflows (recursion.ts); this file puts them together and dispatches a call:
 * from staged code (a call node), from eager code under a tape (the call's gradient rule), or
 * plainly (the executor runs the graph).
 */
import { currentHandler, isTracing, recorders, withCallbackConversion } from "../core/context.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { config } from "../core/config.js";
import { deterministicEnvError } from "../core/determinism.js";
import { TraceContext, StagingError } from "./trace-context.js";
import { engineNames, installedOnnxExporter, type ConcreteFunction } from "./concrete-function.js";
import { CallDepthExceeded, RecursionDepthError, ValueError } from "../core/errors.js";
import type { Signature } from "./signature.js";
import { DEFAULT_MAX_TRACES, TraceCache } from "./trace-cache.js";
import { collectStateReads, noteStateReads } from "../core/tracked-state.js";
import { openTrace, runOnPlaceholders, setResult } from "./trace.js";
import { isStackOverflow, Recursion } from "./recursion.js";
import { callFromTrace } from "./call.js";
import { recordCall } from "./recording.js";
import { containsSpec, specArguments } from "./signature.js";

export interface StageOptions {
  /** Per positional argument: sc.spec(shape, dtype) (null dims = any size), or nested structures of specs. */
  inputSignature?: unknown[];
  /** After a retrace caused by new shapes, trace once more with the differing dims generalized. */
  reduceRetracing?: boolean;
  /** Name of the graph (default: the function's name). */
  name?: string;
  /**
   * The output types of a recursive function (a spec, or a structure of specs), used for its
   * recursive calls while it is traced. Without it the first tensor argument's type is
   * assumed, and the function is traced once more with the types it actually returned.
   */
  outputSignature?: unknown;
  /**
   * The most concrete functions (traces) kept, default 64: beyond it the least recently used is
   * evicted with what its executor prepared, and traced again if it is met again.
   */
  maxTraces?: number;
  /** Convert the function with AutoGraph first (default true). */
  autograph?: boolean;
  /**
   * What runs the function's graphs when it is called from eager code: an installed engine by
   * name: "auto" (our executor, then per graph, once it is warm, the faster of ours and the graph
   * cut into onnxruntime segments, by measurement), "stagecraft" (our executor), "onnxruntime"
   * (its exported ONNX model in an onnxruntime-node session). Its gradients run on the same
   * engine. Without it: the process-wide default, which the environment variable
   * STAGECRAFT_ENGINE names (read once, when Stagecraft loads); unset, "auto" where
   * onnxruntime-node is installed, else our executor. `sc.config.setDeterministic(true)` keeps
   * "auto" on our executor (results bit-identical to eager code).
   */
  engine?: string;
}

const STAGE_OPTIONS = optionKeys<StageOptions>()("inputSignature", "reduceRetracing", "name", "outputSignature", "autograph", "engine", "maxTraces");

export interface StagedFunction<A extends unknown[], R> {
  (...args: A): R;
  /** How many times the function has been traced. */
  readonly traceCount: number;
  /** How many concrete functions (traces) its cache holds now: at most `maxTraces`. */
  readonly liveTraces: number;
  /** The concrete function for these arguments (tracing if needed). */
  concrete(...args: A): ConcreteFunction;
  /** The function traced for these specs (sc.spec, null dims symbolic) or example tensors, as an ONNX model's bytes. */
  toOnnx(...specs: unknown[]): Uint8Array;
  readonly stagedName: string;
}

/**
 * Converts a function's source before it is staged (AutoGraph): installed by the package
 * entry (api/wiring.ts), so staging has no static dependency on the transform.
 */
export type StageConverter = (fn: (...args: any[]) => any) => { fn: (...args: any[]) => any; note?: string };
let stageConverter: StageConverter | null = null;

/** @internal */
export function setStageConverter(c: StageConverter): void {
  stageConverter = c;
}

function installedEngineList(): string {
  return engineNames().map((n) => JSON.stringify(n)).join(", ") || "none";
}

/**
 * STAGECRAFT_ENGINE's choice, read once: a name, null for our executor ("stagecraft"), or
 * undefined when it is unset (then the built-in default below).
 */
const engineFromEnvironment: string | null | undefined =
  config.engine === undefined || config.engine === "" ? undefined : config.engine === "stagecraft" ? null : config.engine;

/** The default engine's name where STAGECRAFT_ENGINE is unset (the package entry sets it: "auto" where onnxruntime-node is installed). */
let builtInEngine: string | null = null;

/** The process-wide default engine's name (null: our executor; undefined: the built-in default). */
let defaultEngineName: string | null | undefined = engineFromEnvironment;

/**
 * @internal Sets the built-in default engine: the engine of functions whose options name none
 * while neither STAGECRAFT_ENGINE nor setDefaultEngine names one (api/wiring.ts: "auto" where
 * onnxruntime-node is installed, our executor elsewhere).
 */
export function setBuiltInEngine(name: string | null): void {
  builtInEngine = name;
}

/**
 * The engine a staged function runs on when its options name none (null: the default executor).
 * Checked when a function is staged (the engines are installed by then).
 */
function defaultEngine(): string | null {
  const name = defaultEngineName;
  // (no engine installed at all: staging without the package entry, which has no executor either
  // and says so when a function is called: "import Stagecraft through its package entry")
  if (engineNames().length === 0) return null;
  // (the built-in default is never an error: where its engine is not installed, ours)
  if (name === undefined) return builtInEngine !== null && engineNames().includes(builtInEngine) ? builtInEngine : null;
  if (name === null) return null;
  if (!engineNames().includes(name)) {
    throw new ValueError(`the environment variable STAGECRAFT_ENGINE is ${JSON.stringify(name)}, but the installed engines are ${installedEngineList()}`, "stage");
  }
  return name;
}

/** @internal The engine functions staged now without one get ("stagecraft": ours), before the determinism switch (benchmarks print it). */
export function currentDefaultEngine(): string {
  return defaultEngine() ?? "stagecraft";
}

/**
 * @internal Sets the default engine of functions staged from now on (benchmarks, tests: the
 * program-wide choice is STAGECRAFT_ENGINE); "stagecraft" or null is our executor, undefined the
 * built-in default (setBuiltInEngine). Returns the previous one (to restore it with).
 */
export function setDefaultEngine(name: string | null | undefined): string | null | undefined {
  if (name !== null && name !== undefined && name !== "stagecraft" && !engineNames().includes(name)) {
    throw new ValueError(`setDefaultEngine: ${JSON.stringify(name)} is not an installed engine (installed: ${installedEngineList()})`, "setDefaultEngine");
  }
  const before = defaultEngineName;
  defaultEngineName = name === "stagecraft" ? null : name;
  return before;
}

export function stage<A extends unknown[], R>(original: (...args: A) => R, options: StageOptions = {}): StagedFunction<A, R> {
  checkOptions("stage", options, STAGE_OPTIONS);
  const name = options.name ?? (original.name || "staged");
  let converted: ((...args: A) => R) | null = null;
  // Conversion happens on first use (the converter may not be installed at definition time).
  const fn = (...args: A): R => {
    if (converted === null) {
      if (stageConverter && options.autograph !== false) {
        const r = stageConverter(original);
        if (r.note) console.warn(r.note);
        converted = r.fn as (...args: A) => R;
      } else converted = original;
    }
    const run = converted;
    return withCallbackConversion(options.autograph !== false, () => run(...args));
  };
  const maxTraces = options.maxTraces ?? DEFAULT_MAX_TRACES;
  if (!((Number.isInteger(maxTraces) && maxTraces >= 1) || maxTraces === Infinity)) {
    throw new ValueError(`options.maxTraces must be a positive integer or Infinity, got ${String(maxTraces)}`, "stage");
  }
  const recursion = new Recursion(name, options.outputSignature);
  const cache = new TraceCache(name, options.inputSignature, options.reduceRetracing === true, maxTraces, (key) => recursion.forget(key));
  let traceCount = 0;

  // (made once: a call allocates nothing to look its signature up)
  const pending = (key: string) => recursion.pending(key);
  const envError = deterministicEnvError();
  if (envError !== null) throw envError;
  const engine = options.engine ?? defaultEngine();
  if (engine !== null && !engineNames().includes(engine)) {
    throw new ValueError(`options.engine is ${JSON.stringify(engine)}, but the installed engines are ${installedEngineList()}`, "stage");
  }
  const trace = (args: readonly unknown[], sig: Signature) => {
    // (the modules' modes and flags the trace reads: the function is valid while they hold)
    const { result: cf, reads } = collectStateReads(() =>
      recursion.trace(
        sig,
        () => openTrace(name, traceCount++ === 0),
        (ctx) => runOnPlaceholders(ctx, fn, args, sig),
        setResult,
      ),
    );
    cf.stateReads = reads;
    cf.engine = engine;
    return cf;
  };
  const lookup = (args: readonly unknown[]) => cache.lookup(args, pending, trace, traceCount);

  function call(args: A): R {
    const h = currentHandler();
    // Under a value transformation (vmap) the function runs inline, converted as staged: the
    // transformation sees each op (and its control flow), and a trace below it records them.
    if (h.controlFlow) return fn(...args);
    const found = lookup(args);
    if ("pending" in found) return recursion.call(found.pending, found.sig.tensors) as R;
    const { cf, sig } = found;
    // (a trace calling it computes with the state its trace read, cached or just traced)
    if (cf.stateReads.length > 0) noteStateReads(cf.stateReads);
    if (h instanceof TraceContext) return callFromTrace(cf, sig.tensors) as R;
    // Called eagerly while tapes record: one tape entry, by the call's gradient rule.
    if (recorders.length > 0) return cf.structureOutputs(recordCall({ ctx: null, fn: cf, args: sig.tensors })) as R;
    return cf.structureOutputs(cf.callFlat(sig.tensors)) as R;
  }

  const staged = ((...args: A): R => {
    try {
      // The common call, from eager code with no tape recording, with the last call's argument
      // types (tensors' dtypes, shapes and devices, JS values; no Variable or other object: see
      // TraceCache.lastHit): the concrete function `lookup` would find, without its wrappers.
      if (!isTracing() && recorders.length === 0) {
        const inputs = cache.lastHit(args);
        if (inputs !== null) {
          return cache.lastFunction.callPrepared(inputs) as R;
        }
      }
      return call(args);
    } catch (e) {
      if (e instanceof CallDepthExceeded) throw recursion.callDepthError(e);
      // (inline under vmap, a recursion whose base case is a batched cond runs both branches: no end)
      if (isStackOverflow(e) && currentHandler().controlFlow) {
        throw new RecursionDepthError(
          `staged function "${name}" ran out of JavaScript stack on batched values (under vmap): a cond whose predicate differs per example runs both branches, ` +
            `so a recursion that ends on such a cond never ends; write it as a loop (sc.whileLoop, or a while loop in converted code), which vmap batches`,
          name,
        );
      }
      throw isStackOverflow(e) ? recursion.overflowError(e as RangeError, () => cache.peek(args)) : e;
    }
  }) as StagedFunction<A, R>;
  Object.defineProperty(staged, "traceCount", { get: () => traceCount });
  Object.defineProperty(staged, "liveTraces", { get: () => cache.size });
  Object.defineProperty(staged, "stagedName", { value: name });
  (staged as { concrete: unknown }).concrete = (...args: A): ConcreteFunction => {
    // (tracing a function of parameters with none would hand its first op `undefined`, and the
    // user would read that op's complaint, "neg: expected a tensor", instead of what is missing)
    if (args.length === 0 && original.length > 0 && options.inputSignature === undefined) {
      throw new StagingError(
        `"${name}" takes ${original.length} argument${original.length === 1 ? "" : "s"} and has no inputSignature: give concrete() (or onnx.exportFunction / toOnnx) ` +
          `the arguments' specs or example values, e.g. onnx.exportFunction(f, sc.spec([null, 3]))`,
        "stage.concrete",
      );
    }
    // (no arguments and a signature: the signature's specs are the arguments)
    if (args.length === 0 && options.inputSignature !== undefined) args = options.inputSignature as A;
    // sc.spec(...) leaves trace for the spec (null dims unknown) instead of a tensor's shape
    const specs = containsSpec(args) ? args : undefined;
    const found = specs === undefined ? lookup(args) : cache.lookup(specArguments(args), pending, trace, traceCount, specs);
    if ("pending" in found) throw new StagingError(`concrete() of "${name}" was asked for while that signature is being traced`);
    return found.cf;
  };
  (staged as { toOnnx: unknown }).toOnnx = (...specs: unknown[]): Uint8Array => installedOnnxExporter()(staged.concrete(...(specs as A)), specs);
  return staged;
}
