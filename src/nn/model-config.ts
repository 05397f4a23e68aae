/**
 * The layer registry and the JSON config of a model, for saveModel/loadModel (save-model.ts).
 *
 * A layer's config is its constructor arguments (recorded by each built-in constructor,
 * layer-config.ts, or returned by a user class's `getConfig()`), so rebuilding is
 * `new Class(...args)`. In JSON each layer is `{ "class": name, "args": [...] }`; an argument
 * that is a layer (Sequential's) is `{ "$layer": {...} }` and an undefined one `{ "$undefined":
 * true }`. Initializer functions in an options object (keys ending in "Init") are left out:
 * they only choose initial values, which the saved weights replace. A lazily built layer's
 * config gains the size it was built for (Linear's inFeatures, ...), so the rebuilt layer makes
 * its weights at once and loadModel can check them all before the first call.
 *
 * decodeLayer treats the JSON as hostile: exact keys, types and a depth limit, and a class
 * must be registered (ModelConfigError, UnknownLayerError).
 */
import { StagecraftError } from "../core/errors.js";
import { isPlainObject } from "../core/objects.js";
import { Module } from "./module.js";
import { recordedConfig } from "./layer-config.js";
import { Sequential } from "./layers/sequential.js";
import { Linear, Flatten, ReLU, Tanh, Sigmoid, GELU, Softmax, LogSoftmax } from "./layers/linear.js";
import { Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d } from "./layers/conv.js";
import { BatchNorm, LayerNorm, GroupNorm } from "./layers/normalization.js";
import { Dropout } from "./layers/dropout.js";
import { Embedding } from "./layers/embedding.js";
import { LSTMCell, GRUCell, LSTM, GRU } from "./layers/recurrent.js";
import { MultiHeadAttention } from "./layers/attention.js";
import { TransformerEncoderLayer, TransformerDecoderLayer } from "./layers/transformer.js";

/** A model config (model.json) that is malformed: a wrong key or type, or a layer that cannot be saved. */
export class ModelConfigError extends StagecraftError {
  constructor(message: string, op = "loadModel") {
    super(message, op);
  }
}

/** A model config names a class not registered (`sc.nn.registerLayer(name, cls)`). */
export class UnknownLayerError extends ModelConfigError {
  constructor(readonly className: string, where: string) {
    super(`unknown layer class ${JSON.stringify(className)} at ${where}: register it with sc.nn.registerLayer(${JSON.stringify(className)}, ${/^[A-Za-z_$][\w$]*$/.test(className) ? className : "TheClass"}) before loading`);
  }
}

type LayerClass = new (...args: any[]) => Module;

const BUILT_IN: [string, LayerClass][] = [
  ["Sequential", Sequential], ["Linear", Linear], ["Flatten", Flatten], ["ReLU", ReLU], ["Tanh", Tanh], ["Sigmoid", Sigmoid], ["GELU", GELU],
  ["Softmax", Softmax], ["LogSoftmax", LogSoftmax], ["Conv1d", Conv1d], ["Conv2d", Conv2d], ["ConvTranspose2d", ConvTranspose2d],
  ["MaxPool2d", MaxPool2d], ["AvgPool2d", AvgPool2d], ["BatchNorm", BatchNorm], ["LayerNorm", LayerNorm], ["GroupNorm", GroupNorm],
  ["Dropout", Dropout], ["Embedding", Embedding], ["LSTMCell", LSTMCell], ["GRUCell", GRUCell], ["LSTM", LSTM], ["GRU", GRU],
  ["MultiHeadAttention", MultiHeadAttention], ["TransformerEncoderLayer", TransformerEncoderLayer], ["TransformerDecoderLayer", TransformerDecoderLayer],
];
const byName = new Map<string, LayerClass>(BUILT_IN);
const nameOf = new Map<Function, string>(BUILT_IN.map(([n, c]) => [c, n]));

/**
 * Registers a layer class under `name` for loadModel. Its instances give their config by a
 * `getConfig()` method returning their constructor arguments (JSON values and layers), so that
 * `new cls(...getConfig())` rebuilds them; their child layers and weights come back by path.
 */
export function registerLayer(name: string, cls: LayerClass): void {
  if (typeof name !== "string" || !/^[A-Za-z_$][\w$.-]*$/.test(name)) throw new ModelConfigError(`name must be an identifier-like string, got ${JSON.stringify(name)}`, "registerLayer");
  if (typeof cls !== "function" || !(cls.prototype instanceof Module)) throw new ModelConfigError(`${name}: takes a subclass of sc.nn.Module`, "registerLayer");
  const had = byName.get(name);
  if (had !== undefined && had !== cls) throw new ModelConfigError(`the name ${JSON.stringify(name)} is already registered to another class`, "registerLayer");
  const other = nameOf.get(cls);
  if (other !== undefined && other !== name) throw new ModelConfigError(`${cls.name} is already registered as ${JSON.stringify(other)}`, "registerLayer");
  byName.set(name, cls);
  nameOf.set(cls, name);
}

/** The size a lazily built layer was built for, put into its config (see the file comment). */
const BUILT_SIZES: Record<string, (m: any, args: unknown[]) => void> = {
  Linear: (m, a) => withOption(a, 1, "inFeatures", m.inFeatures),
  Conv1d: (m, a) => withOption(a, 2, "inChannels", m.inChannels),
  Conv2d: (m, a) => withOption(a, 2, "inChannels", m.inChannels),
  ConvTranspose2d: (m, a) => withOption(a, 2, "inChannels", m.inChannels),
  BatchNorm: (m, a) => withOption(a, 0, "numFeatures", m.numFeatures),
  LayerNorm: (m, a) => {
    if (a[0] === undefined && m.normalizedShape !== undefined) a[0] = [...m.normalizedShape];
  },
  LSTMCell: (m, a) => withOption(a, 1, "inputSize", m.inputSize),
  GRUCell: (m, a) => withOption(a, 1, "inputSize", m.inputSize),
  LSTM: (m, a) => withOption(a, 1, "inputSize", m.cell.inputSize),
  GRU: (m, a) => withOption(a, 1, "inputSize", m.cell.inputSize),
};

function withOption(args: unknown[], i: number, key: string, value: unknown): void {
  if (value === undefined) return;
  const o = (args[i] ?? {}) as Record<string, unknown>;
  if (o[key] === undefined) args[i] = { ...o, [key]: value };
}

export type LayerJson = { class: string; args: unknown[] };

/** The JSON config of `m` (a registered layer); `where` names it in errors. */
export function encodeLayer(m: Module, where = "model", seen = new Map<Module, string>()): LayerJson {
  // A layer reached twice would load as two layers with one saved set of weights: refused here.
  const first = seen.get(m);
  if (first !== undefined) throw new ModelConfigError(`${where} is the same layer as ${first}: a model config cannot share a layer between two places`, "saveModel");
  seen.set(m, where);
  const name = nameOf.get(m.constructor);
  if (name === undefined) throw new ModelConfigError(`${where} is a ${m.constructor.name}, which is not registered: call sc.nn.registerLayer(${JSON.stringify(m.constructor.name)}, ${m.constructor.name}) (and give it a getConfig() returning its constructor arguments)`, "saveModel");
  let args: unknown[];
  const own = (m as { getConfig?: unknown }).getConfig;
  if (typeof own === "function") {
    const got = own.call(m);
    if (!Array.isArray(got)) throw new ModelConfigError(`${where} (${name}): getConfig() must return the constructor's arguments as an array, got ${typeof got}`, "saveModel");
    args = [...got];
  } else {
    const rec = recordedConfig(m);
    if (rec === undefined || rec.cls !== m.constructor) throw new ModelConfigError(`${where} (${name}) has no config: give the class a getConfig() method returning its constructor arguments`, "saveModel");
    args = [...rec.args];
    BUILT_SIZES[name]?.(m, args);
  }
  while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
  return { class: name, args: args.map((a, i) => encodeValue(a, `${where}.args[${i}]`, seen)) };
}

function encodeValue(v: unknown, where: string, seen: Map<Module, string>): unknown {
  if (v === undefined) return { $undefined: true };
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new ModelConfigError(`${where} is ${v}, which JSON cannot hold`, "saveModel");
    return v;
  }
  if (v instanceof Module) return { $layer: encodeLayer(v, where, seen) };
  if (Array.isArray(v)) return v.map((x, i) => encodeValue(x, `${where}[${i}]`, seen));
  if (isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k.startsWith("$")) throw new ModelConfigError(`${where} has the key ${JSON.stringify(k)}: keys starting with "$" are reserved`, "saveModel");
      if (x === undefined) continue;
      // Initializers only choose initial values, which the saved weights replace.
      if (typeof x === "function" && k.endsWith("Init")) continue;
      out[k] = encodeValue(x, `${where}.${k}`, seen);
    }
    return out;
  }
  throw new ModelConfigError(`${where} is ${typeof v === "function" ? "a function" : `a ${(v as object).constructor?.name ?? typeof v}`}, which a model config cannot hold (JSON values and layers only)`, "saveModel");
}

const MAX_DEPTH = 64;

/** Rebuilds a layer from its (untrusted) JSON config. */
export function decodeLayer(json: unknown, where = "model", depth = 0): Module {
  if (depth > MAX_DEPTH) throw new ModelConfigError(`${where}: layers nested deeper than ${MAX_DEPTH}`);
  if (!isPlainObject(json)) throw new ModelConfigError(`${where} must be an object { class, args }, got ${describe(json)}`);
  exactKeys(json, ["class", "args"], where);
  const { class: name, args } = json as { class: unknown; args: unknown };
  if (typeof name !== "string") throw new ModelConfigError(`${where}.class must be a string, got ${describe(name)}`);
  if (!Array.isArray(args)) throw new ModelConfigError(`${where}.args must be an array, got ${describe(args)}`);
  const cls = byName.get(name); // (a Map: "__proto__" and the like are no keys of it)
  if (cls === undefined) throw new UnknownLayerError(name, where);
  const values = args.map((a, i) => decodeValue(a, `${where}.args[${i}]`, depth));
  return new cls(...values);
}

function decodeValue(v: unknown, where: string, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new ModelConfigError(`${where}: values nested deeper than ${MAX_DEPTH}`);
  if (v === null || typeof v === "string" || typeof v === "boolean" || typeof v === "number") return v;
  if (Array.isArray(v)) return v.map((x, i) => decodeValue(x, `${where}[${i}]`, depth + 1));
  if (!isPlainObject(v)) throw new ModelConfigError(`${where}: unexpected ${describe(v)}`);
  const keys = Object.keys(v);
  if (keys.some((k) => k.startsWith("$"))) {
    if (keys.length === 1 && keys[0] === "$undefined" && (v as Record<string, unknown>).$undefined === true) return undefined;
    if (keys.length === 1 && keys[0] === "$layer") return decodeLayer((v as Record<string, unknown>).$layer, where, depth + 1);
    throw new ModelConfigError(`${where}: unknown key(s) ${keys.filter((k) => k.startsWith("$")).map((k) => JSON.stringify(k)).join(", ")} (a "$" key is { "$layer": {...} } or { "$undefined": true } alone)`);
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = decodeValue((v as Record<string, unknown>)[k], `${where}.${k}`, depth + 1);
  return out;
}

export function exactKeys(o: object, keys: readonly string[], where: string): void {
  const extra = Object.keys(o).filter((k) => !keys.includes(k));
  if (extra.length > 0) throw new ModelConfigError(`${where} has unknown key(s) ${extra.map((k) => JSON.stringify(k)).join(", ")} (expected ${keys.join(", ")})`);
  const missing = keys.filter((k) => !(k in o));
  if (missing.length > 0) throw new ModelConfigError(`${where} is missing ${missing.join(", ")}`);
}

export function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}
