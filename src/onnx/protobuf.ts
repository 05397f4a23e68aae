/**
 * The protobuf layer: protobufjs (light build) with the official ONNX schema (proto/*.proto,
 * compiled into proto/schema.ts). Decoding and encoding go through protobufjs only; this file
 * adds TypeScript shapes for the messages, int64 conversion, and typed errors for bytes that
 * are not a message.
 *
 * Decoded messages are protobufjs message objects: a field the bytes did not set reads its
 * default (0, "", empty list) from the prototype, and `has(msg, "field")` tells whether it was
 * set (proto2 presence). int64 fields decode as Long objects (see `int64`).
 */
import type protobuf from "protobufjs/light.js";
import { loadProtobuf } from "./protobufjs.js";
import { ONNX_SCHEMA } from "./proto/schema.js";
import { OnnxDecodeError, OnnxLimitError } from "./errors.js";

// (protobufjs and the schema load at the first message type asked for: protobufjs.ts)
let root: protobuf.Root | undefined;
const types = new Map<string, protobuf.Type>();
function type(name: string): protobuf.Type {
  let t = types.get(name);
  if (t === undefined) {
    root ??= loadProtobuf().Root.fromJSON(ONNX_SCHEMA);
    types.set(name, (t = root.lookupType(`onnx.${name}`)));
  }
  return t;
}

const MESSAGE_NAMES = [
  "ModelProto",
  "GraphProto",
  "NodeProto",
  "TensorProto",
  "AttributeProto",
  "ValueInfoProto",
  "TypeProto",
  "SequenceProto",
  "OptionalProto",
  "MapProto",
  "FunctionProto",
] as const;
export type MessageName = (typeof MESSAGE_NAMES)[number];

/** protobufjs message types of the ONNX schema, by message name (each a getter: the schema loads at the first one read). */
export const Messages = Object.defineProperties(
  {},
  Object.fromEntries(MESSAGE_NAMES.map((name) => [name, { get: () => type(name), enumerable: true }])),
) as { readonly [K in MessageName]: protobuf.Type };

/** A decoded int64 field: a Long (protobufjs with the long package), or a number when built by hand. */
export type Int64 = number | protobuf.Long;

export interface StringStringEntryProto {
  key: string;
  value: string;
}
export interface OperatorSetIdProto {
  domain: string;
  version: Int64;
}
export interface TensorShapeProtoDimension {
  dim_value?: Int64;
  dim_param?: string;
  denotation?: string;
}
export interface TensorShapeProto {
  dim: TensorShapeProtoDimension[];
}
export interface TypeProto {
  tensor_type?: { elem_type: number; shape?: TensorShapeProto };
  sequence_type?: { elem_type?: TypeProto };
  optional_type?: { elem_type?: TypeProto };
  map_type?: { key_type: number; value_type?: TypeProto };
  sparse_tensor_type?: { elem_type: number; shape?: TensorShapeProto };
  opaque_type?: { domain: string; name: string };
  denotation?: string;
}
export interface ValueInfoProto {
  name: string;
  type?: TypeProto;
  doc_string?: string;
}
export interface TensorProto {
  dims: Int64[];
  data_type: number;
  segment?: { begin: Int64; end: Int64 };
  float_data: number[];
  int32_data: number[];
  string_data: Uint8Array[];
  int64_data: Int64[];
  name: string;
  doc_string?: string;
  raw_data: Uint8Array;
  external_data: StringStringEntryProto[];
  data_location: number;
  double_data: number[];
  uint64_data: Int64[];
}
export interface SparseTensorProto {
  values?: TensorProto;
  indices?: TensorProto;
  dims: Int64[];
}
export interface AttributeProto {
  name: string;
  ref_attr_name: string;
  doc_string?: string;
  type: number;
  f: number;
  i: Int64;
  s: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  sparse_tensor?: SparseTensorProto;
  tp?: TypeProto;
  floats: number[];
  ints: Int64[];
  strings: Uint8Array[];
  tensors: TensorProto[];
  graphs: GraphProto[];
  sparse_tensors: SparseTensorProto[];
  type_protos: TypeProto[];
}
export interface NodeProto {
  input: string[];
  output: string[];
  name: string;
  op_type: string;
  domain: string;
  overload?: string;
  attribute: AttributeProto[];
  doc_string?: string;
}
export interface GraphProto {
  node: NodeProto[];
  name: string;
  initializer: TensorProto[];
  sparse_initializer: SparseTensorProto[];
  doc_string?: string;
  input: ValueInfoProto[];
  output: ValueInfoProto[];
  value_info: ValueInfoProto[];
}
export interface FunctionProto {
  name: string;
  input: string[];
  output: string[];
  attribute: string[];
  attribute_proto: AttributeProto[];
  node: NodeProto[];
  opset_import: OperatorSetIdProto[];
  domain: string;
  overload?: string;
}
export interface ModelProto {
  ir_version: Int64;
  opset_import: OperatorSetIdProto[];
  producer_name: string;
  producer_version: string;
  domain: string;
  model_version: Int64;
  doc_string: string;
  graph?: GraphProto;
  metadata_props: StringStringEntryProto[];
  functions: FunctionProto[];
}
export interface SequenceProto {
  name: string;
  elem_type: number;
  tensor_values: TensorProto[];
  sparse_tensor_values: SparseTensorProto[];
  sequence_values: SequenceProto[];
  map_values: unknown[];
  optional_values: OptionalProto[];
}
export interface OptionalProto {
  name: string;
  elem_type: number;
  tensor_value?: TensorProto;
  sparse_tensor_value?: SparseTensorProto;
  sequence_value?: SequenceProto;
  optional_value?: OptionalProto;
}

/** The values of AttributeProto.type. */
export const AttributeType = {
  UNDEFINED: 0,
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
  SPARSE_TENSOR: 11,
  SPARSE_TENSORS: 12,
  TYPE_PROTO: 13,
  TYPE_PROTOS: 14,
} as const;

interface MessageTypes {
  ModelProto: ModelProto;
  GraphProto: GraphProto;
  NodeProto: NodeProto;
  TensorProto: TensorProto;
  AttributeProto: AttributeProto;
  ValueInfoProto: ValueInfoProto;
  TypeProto: TypeProto;
  SequenceProto: SequenceProto;
  OptionalProto: OptionalProto;
  MapProto: unknown;
  FunctionProto: FunctionProto;
}

/**
 * Decodes `bytes` as the message `name`. Bytes that are not such a message (truncated,
 * corrupted, too deeply nested) raise OnnxDecodeError naming `what` (e.g. the file).
 */
export function decode<N extends MessageName>(name: N, bytes: Uint8Array, what = "the bytes"): MessageTypes[N] {
  if (!(bytes instanceof Uint8Array)) throw new OnnxDecodeError(`${what}: expected a Uint8Array of protobuf bytes, got ${describe(bytes)}`, "onnx.decode");
  try {
    return Messages[name].decode(bytes) as unknown as MessageTypes[N];
  } catch (e) {
    const reason = e instanceof RangeError && /call stack/i.test(e.message) ? "it nests messages too deeply" : e instanceof Error ? e.message : String(e);
    throw new OnnxDecodeError(`${what} (${bytes.length} bytes) are not a valid ONNX ${name}: ${reason}`, "onnx.decode");
  }
}

/** Encodes a plain object (numbers where int64 fields are expected are fine) as the message `name`. */
export function encode<N extends MessageName>(name: N, message: unknown): Uint8Array {
  const t = Messages[name];
  const err = t.verify(message as Record<string, unknown>);
  if (err) throw new OnnxDecodeError(`cannot encode an ONNX ${name}: ${err}`, "onnx.encode");
  return t.encode(t.fromObject(message as Record<string, unknown>)).finish();
}

/** Whether a decoded message set `field` (proto2 presence; repeated fields: non-empty). */
export function has(msg: object | undefined | null, field: string): boolean {
  if (msg === undefined || msg === null) return false;
  const v = (msg as Record<string, unknown>)[field];
  if (Array.isArray(v)) return v.length > 0;
  return Object.prototype.hasOwnProperty.call(msg, field);
}

/**
 * An int64 field as a JS number. Values beyond 2^53 are refused with OnnxLimitError naming
 * `what` unless `lossy` (tensor data, whose int64 storage is a float64: see docs/dtypes.md).
 */
export function int64(v: Int64 | undefined | null, what: string, lossy = false): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === "number") return v;
  // (a uint64 field's Long is unsigned)
  const n = (v.unsigned ? v.high >>> 0 : v.high) * 2 ** 32 + (v.low >>> 0);
  if (!lossy && !Number.isSafeInteger(n)) throw new OnnxLimitError(`${what} is ${n}, beyond the 2^53 integers this importer represents exactly`, "onnx.load");
  return n;
}

/** The UTF-8 text of a bytes field (attribute strings, string tensors). */
export function utf8(b: Uint8Array | string): string {
  return typeof b === "string" ? b : new TextDecoder().decode(b);
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (typeof x !== "object") return typeof x;
  return (x as object).constructor?.name ?? "an object";
}
