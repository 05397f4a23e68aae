/**
 * onnxruntime-node helpers: loading the optional dependency (with an error that says how to
 * add it), sessions from model bytes, and Tensor <-> ort.Tensor conversion. Used as the test
 * oracle and, by the export side, as an engine. The CPU execution provider is the default.
 */
import { createRequire } from "../core/platform/node.js";
import { Tensor } from "../core/tensor.js";
import { allocStorage, type DType } from "../core/dtype.js";
import { floatToHalfBits as floatToHalf, halfBitsToFloat as halfToFloat } from "../core/float16.js";
import { OnnxError, OnnxRuntimeMissingError } from "./errors.js";
import { checkOptions } from "../core/options.js";

// Our public declarations use these small structural types, never onnxruntime-node's own: its
// declarations need DOM types (ImageData, WebGLTexture), which a Node consumer with
// `lib: ["ES2022"]` lacks, and a consumer that skipped optional dependencies has none of them.
// onnxruntime's objects satisfy these types; its module is cast to them where it is loaded.

/** The element types of an onnxruntime tensor Stagecraft converts (onnxruntime's names). */
export type OrtTensorType = "float32" | "float64" | "float16" | "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64" | "bool" | "string";

/** What Stagecraft reads of an onnxruntime tensor (an `ort.Tensor` is one). */
export interface OrtTensor {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: unknown;
}

/** What Stagecraft uses of an onnxruntime inference session (an `ort.InferenceSession` is one). */
export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>, options?: object): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}

/** The options Stagecraft passes when it creates a session. */
export interface OrtSessionCreateOptions {
  executionProviders?: string[];
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
}

/** What Stagecraft uses of the onnxruntime-node module (`loadOnnxRuntime()` returns it). */
export interface OrtModule {
  Tensor: new (type: OrtTensorType, data: ArrayLike<number | bigint | boolean | string> | ArrayBufferView, dims?: readonly number[]) => OrtTensor;
  InferenceSession: {
    create(model: string | Uint8Array, options?: OrtSessionCreateOptions): Promise<OrtSession>;
  };
}

let ort: OrtModule | null = null;

/**
 * The onnxruntime-node module; OnnxRuntimeMissingError (saying how to add it) when it is not
 * installed. (`moduleName` is for tests of that error.)
 */
export function loadOnnxRuntime(moduleName = "onnxruntime-node"): OrtModule {
  if (ort !== null && moduleName === "onnxruntime-node") return ort;
  try {
    const m = createRequire(import.meta.url)(moduleName) as OrtModule;
    if (moduleName !== "onnxruntime-node") return m;
    ort = m;
  } catch (e) {
    throw new OnnxRuntimeMissingError(
      `onnxruntime-node is not installed (it is an optional dependency of stagecraft): add it with \`npm install onnxruntime-node@1.30\` ` +
        `(its install script only downloads GPU providers; the CPU one ships in the package). Cause: ${(e as Error).message.split("\n")[0]}`,
      "onnxruntime",
    );
  }
  return ort;
}

/**
 * Never called: it type-checks (here, not in our declarations) that onnxruntime's objects are
 * what our structural types say, so a change in its API fails our build rather than a run.
 */
function typesFit(o: typeof import("onnxruntime-node")): void {
  const session: OrtSession = null as unknown as import("onnxruntime-node").InferenceSession;
  const tensor: OrtTensor = new o.Tensor("float32", new Float32Array(1), [1]);
  const create: OrtModule["InferenceSession"]["create"] = (model, options) => (typeof model === "string" ? o.InferenceSession.create(model, options) : o.InferenceSession.create(model, options));
  const tensorType: import("onnxruntime-node").Tensor.Type = null as unknown as OrtTensorType;
  void [session, tensor, create, tensorType];
}
void typesFit;

/** Whether onnxruntime-node can be loaded. */
export function hasOnnxRuntime(): boolean {
  try {
    loadOnnxRuntime();
    return true;
  } catch {
    return false;
  }
}

/**
 * An inference session for model bytes or a model file (a file lets onnxruntime read external
 * data beside it); the CPU provider unless others are given.
 */
export async function createSession(model: Uint8Array | string, options: { executionProviders?: string[] } = {}): Promise<OrtSession> {
  checkOptions("onnx.createSession", options, ["executionProviders"]);
  const o = loadOnnxRuntime();
  try {
    // (warnings, such as unused initializers it removes, are not errors: errors only)
    const opts = { executionProviders: options.executionProviders ?? ["cpu"], logSeverityLevel: 3 as const };
    return await (typeof model === "string" ? o.InferenceSession.create(model, opts) : o.InferenceSession.create(model, opts));
  } catch (e) {
    throw new OnnxError(`onnxruntime could not load the model: ${(e as Error).message}`, "onnxruntime");
  }
}

const ORT_TYPE: Partial<Record<DType, string>> = {
  float32: "float32",
  float64: "float64",
  float16: "float16",
  int8: "int8",
  int16: "int16",
  int32: "int32",
  int64: "int64",
  uint8: "uint8",
  uint16: "uint16",
  uint32: "uint32",
  uint64: "uint64",
  bool: "bool",
};

/** Our tensor as an ort.Tensor (int64/uint64 as BigInt64Array, float16 as its bits). */
export function toOrtTensor(t: Tensor): OrtTensor {
  const o = loadOnnxRuntime();
  const data = t.dataSync();
  const dims = [...t.shape];
  switch (t.dtype) {
    case "int64":
      return new o.Tensor("int64", BigInt64Array.from(data, (v) => BigInt(v)), dims);
    case "uint64":
      return new o.Tensor("uint64", BigUint64Array.from(data, (v) => BigInt(v)), dims);
    case "float16": {
      const bits = new Uint16Array(data.length);
      for (let i = 0; i < data.length; i++) bits[i] = floatToHalf(data[i]!);
      return new o.Tensor("float16", bits, dims);
    }
    case "bool":
      return new o.Tensor("bool", Uint8Array.from(data), dims);
    default:
      return new o.Tensor(ORT_TYPE[t.dtype] as "float32", data as Float32Array, dims);
  }
}

/** Our dtype of each onnxruntime tensor type, with the array class our storage of it uses. */
const FROM_ORT = new Map(Object.entries(ORT_TYPE).map(([d, o]) => [o, { dtype: d as DType, storage: allocStorage(d as DType, 0).constructor }]));

/**
 * An ort.Tensor as our tensor. Its data array is adopted where our tensors use that array type;
 * its dims are copied (a caller's ort.Tensor may share its dims array with others).
 */
export function fromOrtTensor(t: OrtTensor): Tensor {
  return fromOrt(t, [...t.dims]);
}

/**
 * A result onnxruntime's binding returned (run's outputs) as our tensor, adopting its dims array
 * too: the binding made it for this result, and nothing else holds it once the result is wrapped.
 */
export function fromOrtResult(t: OrtTensor): Tensor {
  // (the common cases without reading the type's name, a new string at every run: the binding
  // returns float32, float64 and int32 data, and only those, in these arrays, which our tensors use)
  const c = (t.data as object).constructor;
  if (c === Float32Array) return new Tensor(t.data as Float32Array, t.dims as number[], "float32");
  if (c === Float64Array) return new Tensor(t.data as Float64Array, t.dims as number[], "float64");
  if (c === Int32Array) return new Tensor(t.data as Int32Array, t.dims as number[], "int32");
  return fromOrt(t, t.dims as number[]);
}

function fromOrt(t: OrtTensor, dims: readonly number[]): Tensor {
  const known = FROM_ORT.get(t.type);
  if (known === undefined) throw new OnnxError(`onnxruntime returned a ${t.type} tensor, which Stagecraft has no dtype for`, "onnxruntime");
  const { dtype, storage } = known;
  const src = t.data as ArrayLike<number | bigint>;
  // (storage of the very array type our tensors use is adopted: onnxruntime made it for this result)
  if (dtype !== "float16" && dtype !== "bool" && src.constructor === storage) return new Tensor(src as Float32Array, dims, dtype);
  const out = allocStorage(dtype, src.length);
  if (dtype === "float16") for (let i = 0; i < src.length; i++) out[i] = halfToFloat(Number(src[i]));
  else for (let i = 0; i < src.length; i++) out[i] = Number(src[i]);
  return new Tensor(out, dims, dtype);
}

/** Runs a session on named inputs; returns the outputs by name as our tensors. */
export async function runSession(session: OrtSession, feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const ortFeeds: Record<string, OrtTensor> = {};
  for (const [k, v] of Object.entries(feeds)) ortFeeds[k] = toOrtTensor(v);
  let out: Record<string, OrtTensor>;
  try {
    out = await session.run(ortFeeds);
  } catch (e) {
    throw new OnnxError(`onnxruntime could not run the model: ${(e as Error).message}`, "onnxruntime");
  }
  const result: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(out)) result[k] = fromOrtResult(v);
  return result;
}

/** One-shot: runs model bytes (or a model file) in onnxruntime. */
export async function runOnnxRuntime(model: Uint8Array | string, feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const s = await createSession(model);
  try {
    return await runSession(s, feeds);
  } finally {
    await s.release();
  }
}

