/**
 * sc.onnx.load(bytes | path): an ONNX model as a staged function. The graph is interpreted
 * with registry ops inside a trace (interpreter.ts), once per input signature, and runs on
 * the executor like any staged function: it can be differentiated (initializers are
 * Variables, trainable where floating point (BatchNormalization's running statistics excepted:
 * statistics.ts), and so are weights stored as Constant nodes:
 * constant-weights.ts), called inside other staged functions, and exported again.
 *
 * Graph inputs whose values decide shapes (a Reshape's shape given as an input, Slice
 * bounds, ...) are "static": the model reads them when it is traced, so their values are part
 * of the trace key (a new value traces again), and inside another staged function they must
 * be concrete tensors. One-element integer inputs that decide an If (Silero VAD's sample rate)
 * key traces the same way, so only the branch taken is traced; given as a symbolic tensor or a
 * spec, such an input stays a run-time value and the If runs as sc.cond.
 *
 * An eager call that no tape, trace or vmap sees, while every Variable of the model still holds
 * its load-time value, runs on onnxruntime's session of the model's own bytes instead, which
 * folds and fuses the weights as onnxruntime's own session does (native-session.ts; option
 * `nativeSession`, counts in `model.stats`).
 */
import { path, readFileSync, statSync } from "../../core/platform/node.js";
import { Tensor, makeTensor, type TensorLike } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import { isFloat, type DType } from "../../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../../core/errors.js";
import { fmtShape } from "../../core/shape.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { stage, type StagedFunction } from "../../staging/stage.js";
import type { ConcreteFunction } from "../../staging/concrete-function.js";
import { TensorSpec } from "../../staging/signature.js";
import { decode, has, int64, type FunctionProto, type ModelProto, type NodeProto, type TensorProto, type ValueInfoProto } from "../protobuf.js";
import { OnnxError, OnnxModelError, OnnxUnsupportedError } from "../errors.js";
import { dtypeOfElemType } from "../dtypes.js";
import { modelLimits, type ModelLimits } from "./limits.js";
import { readTensorProto, checkedDims, type TensorLimits } from "../tensor-proto.js";
import { ExternalDataReader } from "../external-data.js";
import { Interpreter } from "./interpreter.js";
import { Scope, Slot } from "./scope.js";
import { batchNormStatistics } from "./statistics.js";
import { constantWeights } from "./constant-weights.js";
import { conditionInputNames, isKeyableScalar, staticInputNames } from "./static-inputs.js";
import { NativeSession, type ModelCallStats } from "./native-session.js";
import "./ops/index.js";

/** IR versions read (3: opset_import appeared; 13: the newest in the vendored schema before the unreleased one). */
export const MIN_IR_VERSION = 3;
export const MAX_IR_VERSION = 13;
/** Standard-domain opsets read. */
export const MIN_OPSET = 7;
export const MAX_OPSET = 28;

export interface LoadOptions {
  /** Largest number of elements a tensor of the model may declare (default 2^28). */
  maxElements?: number;
  /** Folder holding external data, when loading from bytes (default: the model file's folder). */
  baseDir?: string;
  /** Name of the staged function (default: the graph's name). */
  name?: string;
  /**
   * Make floating-point initializers trainable Variables, and weights stored as Constant nodes
   * (floating-point tensors of rank >= 1 whose values are not read while tracing) too (default
   * true). BatchNormalization's running mean and variance are never trainable (buffers, as in
   * PyTorch). False: initializers are Variables that are not trainable, Constant nodes constants.
   */
  trainable?: boolean;
  /**
   * Most iterations of any Loop (default 2^24): a trip count known when the model is traced is
   * refused above it; a Loop whose count is decided at run time stops there and raises
   * OnnxLimitError if it would go on (a staged guard, which export leaves out). Infinity: no limit.
   */
  maxLoopIterations?: number;
  /**
   * Most iterations of all Loops together, nested ones multiplied (default 2^26): known trip
   * counts are refused while tracing, run-time ones counted as the model runs (a staged guard).
   */
  maxTotalIterations?: number;
  /** Most bytes of all the values one trace of the model computes (default 2^31; initializers not counted). */
  maxTotalBytes?: number;
  /** Most nodes inlined from model-local functions in one trace (default 2^14: tracing takes about a second per few thousand). */
  maxInlinedNodes?: number;
  /** Most milliseconds a run's Loops may take before OnnxLimitError (default Infinity: no deadline). */
  maxRunMs?: number;
  /**
   * Run eager calls that nothing differentiates, traces or batches, while the model's Variables
   * hold their load-time values, on onnxruntime's session of the model's own bytes (default true,
   * where onnxruntime-node is installed: native-session.ts). False: every call runs on the graph.
   */
  nativeSession?: boolean;
}
const LOAD_OPTIONS = optionKeys<LoadOptions>()("maxElements", "baseDir", "name", "trainable", "maxLoopIterations", "maxTotalIterations", "maxTotalBytes", "maxInlinedNodes", "maxRunMs", "nativeSession");

/** A declared input or output: dtype and shape (a dim is a number, a symbolic name, or null). */
export interface OnnxValueInfo {
  name: string;
  dtype: DType | null;
  shape: (number | string | null)[] | null;
  /** "tensor", or "sequence"/"optional" for values this importer treats as such. */
  kind: "tensor" | "sequence" | "optional";
}

/**
 * A value a model takes or returns: a tensor, a sequence (an array, for ONNX sequence values)
 * or null (an empty ONNX optional).
 */
export type ModelValue = Tensor | ModelValue[] | null;
/** What a model input accepts: a tensor or anything sc.tensor takes; arrays of them for sequences; null for an empty optional. */
export type ModelInput = TensorLike | ModelInput[] | null | undefined;

export interface OnnxModel {
  /** Runs the model on its inputs (in the graph's order); one output is returned as it is, several as an array. */
  (...inputs: ModelInput[]): any;
  /** Runs the model on named inputs; returns the outputs by name. */
  run(feeds: Record<string, ModelInput>): Record<string, any>;
  /** The concrete (traced) function for these inputs (tensors, or sc.spec for inputs that set no shapes). */
  concrete(...inputs: (ModelInput | TensorSpec)[]): ConcreteFunction;
  readonly inputs: readonly OnnxValueInfo[];
  readonly outputs: readonly OnnxValueInfo[];
  /** Names of the inputs the model reads at trace time (their values key the trace). */
  readonly staticInputs: readonly string[];
  /** Every initializer as a Variable, by initializer name. */
  readonly initializers: ReadonlyMap<string, Variable>;
  /**
   * The Variables made of Constant nodes holding weights (floating-point tensors of rank >= 1
   * not read while tracing: constant-weights.ts), by the node's output name; empty when
   * `trainable` is false.
   */
  readonly constants: ReadonlyMap<string, Variable>;
  /** The trainable Variables: floating-point initializers, then Constant-node weights, in the model's order. */
  readonly variables: readonly Variable[];
  /** Opset version per domain. */
  readonly opsets: ReadonlyMap<string, number>;
  readonly irVersion: number;
  readonly producer: string;
  /** The decoded ModelProto (for exporters and tools; do not mutate). */
  readonly proto: ModelProto;
  readonly traceCount: number;
  /**
   * How calls ran: on onnxruntime's session of the model's bytes (`native`) or on the graph
   * (`graph`), and why calls no longer may (or never can) take the native session (`nativeOff`).
   */
  readonly stats: Readonly<ModelCallStats>;
  /** The staged function behind the model: (non-static inputs, static inputs' key) -> outputs. */
  readonly staged: StagedFunction<[ModelValue[], string], ModelValue[]>;
}

/** Loads an ONNX model from bytes or a file path. */
export function load(source: Uint8Array | string, options: LoadOptions = {}): OnnxModel {
  checkOptions("onnx.load", options, LOAD_OPTIONS);
  if (options.nativeSession !== undefined && typeof options.nativeSession !== "boolean") {
    throw new ValueError(`options.nativeSession must be true or false, got ${JSON.stringify(options.nativeSession) ?? String(options.nativeSession)}`, "onnx.load");
  }
  const modelLimitValues = modelLimits(options);
  let bytes: Uint8Array;
  let baseDir = options.baseDir ?? null;
  let what = "the model bytes";
  if (typeof source === "string") {
    what = `ONNX file ${source}`;
    try {
      if (!statSync(source).isFile()) throw new Error("not a regular file");
      bytes = readFileSync(source);
    } catch (e) {
      throw new OnnxError(`cannot read ${source}: ${(e as Error).message}`, "onnx.load");
    }
    baseDir ??= path.dirname(path.resolve(source));
  } else if (source instanceof Uint8Array) {
    bytes = source;
  } else {
    throw new ValueError(`onnx.load takes the model's bytes (a Uint8Array) or a file path, got ${source === null ? "null" : typeof source}`, "onnx.load");
  }
  const proto = decode("ModelProto", bytes, what);
  const limits: TensorLimits = { maxElements: modelLimitValues.maxElements };
  const external = baseDir !== null ? new ExternalDataReader(baseDir) : null;
  try {
    return buildModel(proto, bytes, limits, external, options, modelLimitValues);
  } finally {
    external?.close();
  }
}

function buildModel(proto: ModelProto, bytes: Uint8Array, limits: TensorLimits, external: ExternalDataReader | null, options: LoadOptions, modelLimitValues: ModelLimits): OnnxModel {
  const irVersion = int64(proto.ir_version, "ir_version");
  if (!has(proto, "ir_version")) throw new OnnxModelError("the model has no ir_version", "onnx.load");
  if (irVersion < MIN_IR_VERSION || irVersion > MAX_IR_VERSION) {
    throw new OnnxUnsupportedError(`the model's IR version ${irVersion} is not supported (${MIN_IR_VERSION} to ${MAX_IR_VERSION})`, "onnx.load");
  }
  const opsets = new Map<string, number>();
  for (const o of proto.opset_import) {
    const d = o.domain === "ai.onnx" ? "" : o.domain;
    opsets.set(d, int64(o.version, `the opset version of domain ${JSON.stringify(o.domain)}`));
  }
  const std = opsets.get("");
  if (std !== undefined && (std < MIN_OPSET || std > MAX_OPSET)) throw new OnnxUnsupportedError(`opset ${std} of the standard domain is not supported (${MIN_OPSET} to ${MAX_OPSET})`, "onnx.load");
  if (!has(proto, "graph")) throw new OnnxModelError("the model has no graph", "onnx.load");
  const graph = proto.graph!;
  const functions = new Map<string, FunctionProto>();
  for (const f of proto.functions) functions.set(`${f.domain}::${f.name}`, f);

  const readTensor = (p: TensorProto, w: string): Tensor => readTensorProto(p, w, limits, external);
  if (graph.sparse_initializer.length > 0) throw new OnnxUnsupportedError("the model has sparse initializers", "onnx.load");
  const initializers = new Map<string, Variable>();
  const trainable = options.trainable ?? true;
  const statistics = batchNormStatistics(graph);
  for (const init of graph.initializer) {
    if (!init.name) throw new OnnxModelError("an initializer has no name", "onnx.load");
    if (initializers.has(init.name)) throw new OnnxModelError(`initializer ${JSON.stringify(init.name)} is given twice`, "onnx.load");
    const t = readTensor(init, `initializer ${JSON.stringify(init.name)}`);
    initializers.set(init.name, new Variable(t, { name: init.name, trainable: trainable && isFloat(t.dtype) && !statistics.has(init.name) }));
  }
  // Weights written as Constant nodes become Variables too (only when trainable: otherwise
  // they stay the constants they are).
  const constantWeightNodes = trainable ? constantWeights(graph, readTensor, new Set(initializers.keys()), statistics) : new Map<NodeProto, Variable>();
  const constants = new Map([...constantWeightNodes.values()].map((v) => [v.name, v]));
  const inputs = graph.input.filter((v) => !initializers.has(v.name)).map((v) => valueInfo(v, limits));
  const outputs = graph.output.map((v) => valueInfo(v, limits));
  if (outputs.length === 0) throw new OnnxModelError("the model's graph has no outputs", "onnx.load");
  const inputNameSet = new Set(inputs.map((i) => i.name));
  const staticNames = staticInputNames(graph, inputNameSet);
  // One-element integer inputs that decide an If key traces too, so only the branch taken is
  // traced; "soft" static: a symbolic value or a spec (inside another staged function, export)
  // travels as a run-time tensor instead, and the If becomes sc.cond over both branches.
  const conditionNames = conditionInputNames(graph, inputNameSet, new Set(inputs.filter((i) => i.kind === "tensor" && isKeyableScalar(i)).map((i) => i.name)));
  // (only tensor inputs: a sequence or optional travels as it is)
  const staticIndex = inputs.map((i) => i.kind === "tensor" && (staticNames.has(i.name) || conditionNames.has(i.name)));
  const softStatic = inputs.map((i) => i.kind === "tensor" && !staticNames.has(i.name) && conditionNames.has(i.name));
  const name = options.name ?? (graph.name || "onnx_model");

  const interpreter = new Interpreter({ opsets, functions, readTensor, limits: modelLimitValues, constantWeights: constantWeightNodes });
  // A fresh reader per trace: external files are read only while loading (initializers).
  const body = (values: ModelValue[], staticKey: string): ModelValue[] => {
    const statics = decodeStatics(staticKey);
    interpreter.beginTrace();
    const scope = new Scope(null);
    for (const [n, v] of initializers) {
      const foldable = !v.trainable;
      scope.set(n, Slot.lazy(() => v.read(), v.storedValue, foldable));
    }
    let t = 0;
    let s = 0;
    inputs.forEach((info, i) => {
      const c = staticIndex[i] ? statics[s++]! : null;
      if (c !== null) scope.set(info.name, Slot.of(c, c));
      else scope.set(info.name, toSlot(values[t++]!));
    });
    const outs = interpreter.runNodes(
      graph.node,
      scope,
      outputs.map((o) => o.name),
      `graph ${JSON.stringify(graph.name)}`,
      null,
      graph.output,
    );
    return outs.map(fromSlot);
  };
  const staged = stage(body, { autograph: false, name });

  // (`concrete` also takes sc.spec for the inputs that set no shapes, as staged functions do: an
  // imported model is exported again for symbolic dims that way)
  // (`all`, where given, receives every input tensor in the graph's order, static ones too)
  const prepare = (args: (ModelInput | TensorSpec)[], specsAllowed = false, all?: Tensor[]): [ModelValue[], string] => {
    if (args.length !== inputs.length) {
      throw new ValueError(`model ${name} takes ${inputs.length} inputs (${inputs.map((i) => i.name).join(", ")}), got ${args.length}`, "onnx model");
    }
    const tensors: ModelValue[] = [];
    const statics: (Tensor | null)[] = [];
    args.forEach((arg, i) => {
      const info = inputs[i]!;
      if (arg instanceof TensorSpec) {
        if (!specsAllowed || info.kind !== "tensor") {
          throw new ValueError(`input ${JSON.stringify(info.name)} of model ${name}: ${arg.toString()} is a spec, which only concrete() (and so export) takes, for tensor inputs; a call needs a tensor`, "onnx model");
        }
        checkInput(arg, info, name);
        if (softStatic[i]) statics.push(null);
        else if (staticIndex[i]) {
          throw new OnnxUnsupportedError(`input ${JSON.stringify(info.name)} of model ${name} sets shapes or sizes in the model, so it must be a concrete tensor, not ${arg.toString()}`, "onnx model");
        }
        tensors.push(arg as unknown as Tensor); // (staged.concrete takes specs where it takes tensors)
        return;
      }
      const a = arg;
      if (info.kind !== "tensor") {
        tensors.push(inputValue(a, info, name));
        return;
      }
      const t = toInputTensor(a, info);
      checkInput(t, info, name);
      all?.push(t);
      if (softStatic[i] && t.isSymbolic) {
        statics.push(null);
        tensors.push(t);
      } else if (staticIndex[i]) {
        if (t.isSymbolic) {
          throw new OnnxUnsupportedError(
            `input ${JSON.stringify(info.name)} of model ${name} sets shapes or sizes in the model, so it must be a concrete tensor; it is symbolic here (the model is called inside a staged function with a traced value)`,
            "onnx model",
          );
        }
        statics.push(t);
      } else tensors.push(t);
    });
    return [tensors, encodeStatics(statics)];
  };
  const stats: ModelCallStats = { native: 0, graph: 0, nativeOff: "turned off (nativeSession: false)", oneThread: 0 };
  const allVariables = [...initializers.values(), ...constants.values()];
  const native = options.nativeSession === false ? null : new NativeSession(bytes, proto, allVariables, inputs, outputs, stats);
  /** One call: on the native session where it gives the graph's answer, else on the graph. */
  const call = (args: ModelInput[]): ModelValue[] => {
    const all: Tensor[] = [];
    const prepared = prepare(args, false, all);
    if (native !== null && native.usable(all)) {
      const outs = native.run(staged.concrete(...prepared), all);
      if (outs !== null) return outs;
    }
    stats.graph++;
    return staged(...prepared);
  };
  const model = ((...args: ModelInput[]) => {
    const outs = call(args);
    return outs.length === 1 ? outs[0]! : outs;
  }) as OnnxModel;
  const props: Omit<OnnxModel, never> = {
    run(feeds: Record<string, ModelInput>): Record<string, ModelValue> {
      const missing = inputs.filter((i) => !Object.hasOwn(feeds, i.name)).map((i) => i.name);
      if (missing.length > 0) throw new ValueError(`model ${name} is missing inputs ${missing.join(", ")}`, "onnx model");
      const unknown = Object.keys(feeds).filter((k) => !inputs.some((i) => i.name === k));
      if (unknown.length > 0) throw new ValueError(`model ${name} has no inputs named ${unknown.join(", ")} (its inputs: ${inputs.map((i) => i.name).join(", ")})`, "onnx model");
      const outs = call(inputs.map((i) => feeds[i.name]!));
      return Object.fromEntries(outputs.map((o, i) => [o.name, outs[i]!]));
    },
    concrete: (...args: (ModelInput | TensorSpec)[]) => staged.concrete(...prepare(args, true)),
    inputs,
    outputs,
    staticInputs: inputs.filter((_, i) => staticIndex[i]).map((i) => i.name),
    initializers,
    constants,
    variables: [...[...initializers.values()].filter((v) => v.trainable), ...constants.values()],
    opsets,
    irVersion,
    producer: `${proto.producer_name} ${proto.producer_version}`.trim(),
    proto,
    get traceCount() {
      return staged.traceCount;
    },
    stats,
    staged,
  } as unknown as OnnxModel;
  for (const [k, d] of Object.entries(Object.getOwnPropertyDescriptors(props))) Object.defineProperty(model, k, d);
  return model;
}

function valueInfo(v: ValueInfoProto, limits: TensorLimits): OnnxValueInfo {
  if (!v.name) throw new OnnxModelError("a graph input or output has no name", "onnx.load");
  const t = v.type;
  if (t?.sequence_type) return { name: v.name, dtype: null, shape: null, kind: "sequence" };
  if (t?.optional_type) return { name: v.name, dtype: null, shape: null, kind: "optional" };
  const tt = t?.tensor_type;
  if (!tt) return { name: v.name, dtype: null, shape: null, kind: "tensor" };
  const dtype = dtypeOfElemType(tt.elem_type, `input or output ${JSON.stringify(v.name)}`);
  let shape: (number | string | null)[] | null = null;
  if (tt.shape) {
    shape = tt.shape.dim.map((d) => (has(d, "dim_value") ? int64(d.dim_value, `a dimension of ${v.name}`) : d.dim_param ? d.dim_param : null));
    checkedDims(shape.map((d) => (typeof d === "number" ? d : 1)), `input or output ${JSON.stringify(v.name)}`, limits);
  }
  return { name: v.name, dtype, shape, kind: "tensor" };
}

function toInputTensor(a: ModelInput, info: OnnxValueInfo): Tensor {
  if (a instanceof Tensor) return a instanceof Variable ? a.read() : a;
  if (a === null || a === undefined) throw new ValueError(`input ${JSON.stringify(info.name)} needs a tensor, got ${String(a)}`, "onnx model");
  return makeTensor(`input ${info.name}`, a as TensorLike, undefined, info.dtype ?? undefined);
}

/** A sequence (array) or optional (null, or a value) input. */
function inputValue(a: ModelInput, info: OnnxValueInfo, model: string): ModelValue {
  if (a === null || a === undefined) {
    if (info.kind === "optional") return null;
    throw new ValueError(`input ${JSON.stringify(info.name)} of model ${model} is a sequence: give an array of tensors, got ${String(a)}`, "onnx model");
  }
  if (Array.isArray(a) && (info.kind === "sequence" || a.every((x) => x instanceof Tensor || Array.isArray(x)))) {
    return a.map((x, k) => (Array.isArray(x) ? inputValue(x, { ...info, kind: "sequence" }, model) : toInputTensor(x, { ...info, name: `${info.name}[${k}]` })));
  }
  if (info.kind === "sequence") throw new ValueError(`input ${JSON.stringify(info.name)} of model ${model} is a sequence: give an array of tensors`, "onnx model");
  return toInputTensor(a, info);
}

function toSlot(v: ModelValue): Slot {
  if (v === null) return Slot.none();
  if (Array.isArray(v)) return Slot.sequence(v.map(toSlot));
  return Slot.of(v);
}
function fromSlot(s: Slot): ModelValue {
  if (s.isNone) return null;
  if (s.isSequence) return s.items!.map(fromSlot);
  return s.tensor();
}

/** Checks a call-time input against its declared type (dtype, rank, fixed dims). */
function checkInput(t: { readonly dtype: DType; readonly shape: readonly number[] }, info: OnnxValueInfo, model: string): void {
  if (info.dtype !== null && t.dtype !== info.dtype) {
    throw new DtypeError(`input ${JSON.stringify(info.name)} of model ${model} must be ${info.dtype}, got ${t.dtype}`, "onnx model");
  }
  if (info.shape !== null) {
    const ok = t.shape.length === info.shape.length && info.shape.every((d, i) => typeof d !== "number" || t.shape[i]! < 0 || t.shape[i] === d);
    if (!ok) {
      const declared = `[${info.shape.map((d) => (d === null ? "?" : String(d))).join(", ")}]`;
      throw new ShapeError(`input ${JSON.stringify(info.name)} of model ${model} must have shape ${declared}, got ${fmtShape(t.shape)}`, "onnx model");
    }
  }
}

/**
 * Static input values as one string (the trace key): dtype, shape and values of each; null for
 * a condition input given as a run-time tensor this time (it travels with the other tensors).
 */
function encodeStatics(ts: (Tensor | null)[]): string {
  if (ts.length === 0) return "[]";
  let key = "[";
  for (let i = 0; i < ts.length; i++) key += (i > 0 ? "," : "") + staticPiece(ts[i]!);
  return key + "]";
}

/**
 * One static input's part of the key, as JSON.stringify writes it inside the array; kept per
 * tensor (tensors are immutable), so a call that passes the same tensor again (Silero VAD's
 * sample rate, every call) does not serialize it again: that took ~4% of such a call's time.
 */
const staticPieces = new WeakMap<Tensor, string>();
function staticPiece(t: Tensor | null): string {
  if (t === null) return "null";
  let piece = staticPieces.get(t);
  if (piece === undefined) {
    piece = JSON.stringify([t.dtype, t.shape, Array.from(t.dataSync(), (x) => (Number.isFinite(x) ? x : String(x)))]);
    staticPieces.set(t, piece);
  }
  return piece;
}
function decodeStatics(key: string): (Tensor | null)[] {
  const parsed = JSON.parse(key) as ([DType, number[], (number | string)[]] | null)[];
  return parsed.map((p) => (p === null ? null : makeTensor("onnx static input", p[2].map(Number), p[1], p[0])));
}
