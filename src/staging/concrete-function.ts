/**
 * A concrete function: one traced graph for one input signature, with its captures, its
 * function library, and how to rebuild the caller's output structure. Calling it runs the
 * graph on an executor (compiled once per concrete input shapes).
 */
import type { Tensor } from "../core/tensor.js";
import type { FunctionLibrary, Graph } from "../graph/ir.js";
import type { Capture } from "./trace-context.js";
import { printGraph } from "../graph/printer.js";
import { toSExpr } from "../graph/sexpr.js";
import { mapStructure, type Structure } from "../core/structure.js";
import { StagingError } from "./trace-context.js";
import { isRemoteDevice, scopedDevice } from "../core/device.js";
import { changedRead, stateEpoch, type StateRead } from "../core/tracked-state.js";

/** A tensor output of the function, by index into the graph's outputs. */
export class OutputLeaf {
  constructor(readonly index: number) {}
}
/** A JS value the function returned (fixed at trace time). */
export class ConstantLeaf {
  constructor(readonly value: unknown) {}
}

/** Output structure: tensor leaves become OutputLeaf, JS values ConstantLeaf. */
export type OutputTemplate = Structure<OutputLeaf | ConstantLeaf>;

/**
 * Runs a graph on its inputs. `numArgInputs`, where the caller knows it, says how many inputs are
 * the caller's arguments: the rest are captures (captured tensors and variables' current values,
 * which are immutable tensors: an engine may specialize on them while they stay the same).
 *
 * An executor may also `prepare` the runs of one graph: a concrete function asks once per
 * installation and its eager calls then run the prepared function, which keeps what the
 * executor would look up at every call (an engine's session and feeds) in its closure.
 */
export type Executor = ((graph: Graph, inputs: Tensor[], library: FunctionLibrary, numArgInputs?: number) => Tensor[]) & {
  prepare?: (graph: Graph, library: FunctionLibrary, numArgInputs: number) => PreparedRun;
};

/** One graph's runs as an executor prepared them: the graph's inputs to its outputs. */
export type PreparedRun = (inputs: Tensor[]) => Tensor[];

/** A function graph plus the library holding everything it calls. */
export interface FunctionBundle {
  graph: Graph;
  library: FunctionLibrary;
}

/** What runs graph functions: the package entry installs it (api/wiring.ts); staging knows no executor. */
let defaultExecutor: Executor | null = null;

/**
 * Runs a concrete function on a remote worker's device as one call (src/remote/eager.ts installs
 * it): used for an eager call placed there (a remote device scope, or an argument living there).
 */
export type RemoteCaller = (fn: ConcreteFunction, args: Tensor[], device: string) => Tensor[];
let remoteCaller: RemoteCaller | null = null;
export function setRemoteCaller(c: RemoteCaller): void {
  remoteCaller = c;
}

/** The remote device an eager call on `args` (the first `n`) runs on, or null. */
function remoteDeviceOf(args: Tensor[], n: number): string | null {
  const scoped = scopedDevice();
  if (scoped !== null) return isRemoteDevice(scoped) ? scoped : null;
  for (let i = 0; i < n; i++) if (isRemoteDevice(args[i]!.device)) return args[i]!.device;
  return null;
}

/** Bumped whenever an executor or engine is installed: concrete functions resolve theirs again. */
let installations = 0;

/** @internal Installs the executor staged functions run on. */
export function setDefaultExecutor(e: Executor): void {
  defaultExecutor = e;
  installations++;
}

/** Writes a concrete function as ONNX model bytes (installed by the package entry: src/onnx exports). */
export type OnnxExporter = (fn: ConcreteFunction, specs: unknown[]) => Uint8Array;
let onnxExporter: OnnxExporter | null = null;

/** @internal Installs what toOnnx() calls. */
export function setOnnxExporter(e: OnnxExporter): void {
  onnxExporter = e;
}

/** @internal The installed ONNX exporter. */
export function installedOnnxExporter(): OnnxExporter {
  if (onnxExporter === null) throw new StagingError("no ONNX exporter is installed: import Stagecraft through its package entry (src/api/index.ts), which installs one");
  return onnxExporter;
}

/** Executors other than the default, by name (`stage(fn, { engine })`): installed by the package entry. */
const engines = new Map<string, Executor>();

/** @internal Installs an engine staged functions may ask for by name. */
export function setEngine(name: string, e: Executor): void {
  engines.set(name, e);
  installations++;
}

/** The names of the installed engines. */
export function engineNames(): string[] {
  return [...engines.keys()];
}

function engineExecutor(name: string): Executor {
  const e = engines.get(name);
  if (e === undefined) throw new StagingError(`no engine named "${name}" is installed (installed: ${engineNames().join(", ") || "none"})`);
  return e;
}

/** @internal The installed executor (the WebGPU wiring wraps it to run on the device's executor there). */
export function installedExecutor(): Executor {
  if (defaultExecutor === null) {
    throw new StagingError("no executor is installed to run staged functions: import Stagecraft through its package entry (src/api/index.ts), which installs one");
  }
  return defaultExecutor;
}

/** A capture's value for a call: a variable's current value, or the captured tensor. */
function captureValue(c: Capture): Tensor {
  return c.variable ? c.variable.storedValue : c.tensor;
}

export class ConcreteFunction {
  private engineName: string | null = null;
  /** The executor calls run on, and the installations it was resolved at (-1: not yet). */
  private resolved: Executor | null = null;
  private resolvedAt = -1;
  /** The executor's prepared run of the graph, and an eager call's work around it (callPrepared), made when the executor is resolved. */
  private run: PreparedRun | null = null;
  private eagerCall: ((inputs: Tensor[]) => unknown) | null = null;
  /** The graph output the function returns when it returns one tensor (its output template is that leaf), else -1. */
  private readonly soleOutput: number;
  /**
   * The tracked state (core/tracked-state.ts: modules' modes and trainable flags) its trace read,
   * with the values it was traced with: the graph computes what the function computes only while
   * they still hold (`stateIsCurrent`).
   */
  stateReads: readonly StateRead[] = [];
  /** The state epoch at which stateReads were last found to hold (-1: not yet checked). */
  stateCheckedAt = -1;

  constructor(
    readonly graph: Graph,
    readonly library: FunctionLibrary,
    readonly captures: Capture[],
    readonly outputTemplate: OutputTemplate,
    /** Number of graph inputs that are the caller's tensor arguments (captures follow). */
    readonly numArgInputs: number,
  ) {
    this.soleOutput = outputTemplate instanceof OutputLeaf ? outputTemplate.index : -1;
  }

  /** The engine that runs the graph when the function is called (null: the default executor). */
  get engine(): string | null {
    return this.engineName;
  }
  set engine(name: string | null) {
    this.engineName = name;
    this.resolvedAt = -1;
  }

  get name(): string {
    return this.graph.name;
  }

  /** The executor or engine a call runs on (looked up again after any is installed). */
  executor(): Executor {
    if (this.resolvedAt !== installations) this.resolve();
    return this.resolved!;
  }

  private resolve(): void {
    const executor = this.engineName === null ? installedExecutor() : engineExecutor(this.engineName);
    const { graph, library, numArgInputs, soleOutput } = this;
    const run = (this.run = executor.prepare?.(graph, library, numArgInputs) ?? ((inputs: Tensor[]) => executor(graph, inputs, library, numArgInputs)));
    // (the common call, one tensor returned and nothing captured, is one closure over the run)
    this.eagerCall =
      this.captures.length === 0 && soleOutput >= 0
        ? (inputs) => run(inputs)[soleOutput]
        : (inputs) => {
            this.writeCaptures(inputs, numArgInputs);
            return this.structureOutputs(run(inputs));
          };
    this.resolved = executor;
    this.resolvedAt = installations;
  }

  /**
   * Whether the tracked state its trace read still has the values it was traced with: one
   * integer compare while no tracked state changed since the last check.
   */
  stateIsCurrent(): boolean {
    const epoch = stateEpoch();
    if (this.stateCheckedAt === epoch) return true;
    if (this.stateReads.length > 0 && changedRead(this.stateReads) !== null) return false;
    this.stateCheckedAt = epoch;
    return true;
  }

  /**
   * Drops what the executor prepared for its calls (the closure holding a compiled plan or an
   * engine's session): a trace cache evicting the function calls it. The executors key their
   * plans and sessions weakly by graph, so they go with the graph once nothing holds it; a later
   * call (someone kept the function) prepares them again.
   */
  release(): void {
    this.run = null;
    this.eagerCall = null;
    this.resolved = null;
    this.resolvedAt = -1;
  }

  /** Runs the graph on the caller's tensor arguments (on `executor` where given); returns the flat outputs. */
  callFlat(args: Tensor[], executor?: Executor): Tensor[] {
    if (remoteCaller !== null && executor === undefined) {
      const remote = remoteDeviceOf(args, args.length);
      if (remote !== null) return remoteCaller(this, args, remote);
    }
    if (executor !== undefined) return executor(this.graph, this.inputsFor(args), this.library, this.numArgInputs);
    if (this.resolvedAt !== installations) this.resolve();
    return this.run!(this.inputsFor(args));
  }

  /**
   * @internal An eager call (no trace or tape about it) on `inputs`: the caller's tensor arguments
   * in its first numArgInputs entries, then room for the captures, whose current values are
   * written there. Runs the executor's prepared run; returns the function's output structure.
   */
  callPrepared(inputs: Tensor[]): unknown {
    if (remoteCaller !== null) {
      const remote = remoteDeviceOf(inputs, this.numArgInputs);
      if (remote !== null) return this.structureOutputs(remoteCaller(this, inputs.slice(0, this.numArgInputs), remote));
    }
    if (this.resolvedAt !== installations) this.resolve();
    return this.eagerCall!(inputs);
  }

  /** The graph's inputs for a call: the arguments, then the captures' current values. */
  private inputsFor(args: Tensor[]): Tensor[] {
    const inputs: Tensor[] = new Array(args.length + this.captures.length);
    for (let i = 0; i < args.length; i++) inputs[i] = args[i]!;
    this.writeCaptures(inputs, args.length);
    return inputs;
  }

  private writeCaptures(inputs: Tensor[], n: number): void {
    const captures = this.captures;
    for (let i = 0; i < captures.length; i++) inputs[n + i] = captureValue(captures[i]!);
  }

  /** The current values of the captured inputs (a variable input reads its value now). */
  captureValues(): Tensor[] {
    return this.captures.map(captureValue);
  }

  /** Rebuilds the function's return structure from flat outputs. */
  structureOutputs(flat: Tensor[]): any {
    if (this.soleOutput >= 0) return flat[this.soleOutput];
    return mapStructure(this.outputTemplate, (leaf) => (leaf instanceof OutputLeaf ? flat[leaf.index] : leaf.value));
  }

  /** The function as an ONNX model (the bytes of a ModelProto; sc.onnx.exportModel gives names and options). */
  toOnnx(): Uint8Array {
    return installedOnnxExporter()(this, []);
  }

  /** The graph (and the functions it calls) as readable text. */
  toString(): string {
    const parts = [printGraph(this.graph)];
    for (const g of this.library.functions.values()) if (g !== this.graph) parts.push(printGraph(g));
    return parts.join("\n\n");
  }

  /** The graph and its library as S-expressions (graph/sexpr.ts reads them back). */
  toSExpr(): string {
    return toSExpr(this.graph, this.library);
  }
}
