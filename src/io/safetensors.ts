/**
 * The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of
 * JSON ({ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__": { string: string } },
 * padded with spaces to a multiple of 8), then the tensors' bytes, little-endian, row-major,
 * back to back in offset order. Reading validates everything (no code runs, nothing is
 * trusted): a file that is truncated, has a malformed header, overlapping or out-of-range
 * offsets, or sizes that disagree with shapes is a CheckpointError naming the file and entry.
 */
import { allocStorage, type DType } from "../core/dtype.js";
import { floatToHalfBits, halfBitsToFloat } from "../core/float16.js";
import { Tensor } from "../core/tensor.js";
import { tensor } from "../ops/creation.js";
import { CheckpointError } from "./errors.js";

/** safetensors dtype names for Stagecraft's dtypes. */
const TO_FILE: Record<DType, string> = {
  float16: "F16",
  float32: "F32",
  float64: "F64",
  int8: "I8",
  int16: "I16",
  int32: "I32",
  int64: "I64",
  uint8: "U8",
  uint16: "U16",
  uint32: "U32",
  uint64: "U64",
  bool: "BOOL",
};
/**
 * Bytes per element of each file dtype, and the dtype each is read as: its own, or (BF16, which
 * has none) float32, widened exactly. Maps, not objects: a header's dtype "__proto__" or
 * "toString" must not find an inherited property.
 */
const FILE_DTYPES = new Map<string, { bytes: number; readAs: DType }>([
  ["F64", { bytes: 8, readAs: "float64" }],
  ["F32", { bytes: 4, readAs: "float32" }],
  ["F16", { bytes: 2, readAs: "float16" }],
  ["BF16", { bytes: 2, readAs: "float32" }],
  ["I64", { bytes: 8, readAs: "int64" }],
  ["I32", { bytes: 4, readAs: "int32" }],
  ["I16", { bytes: 2, readAs: "int16" }],
  ["I8", { bytes: 1, readAs: "int8" }],
  ["U64", { bytes: 8, readAs: "uint64" }],
  ["U32", { bytes: 4, readAs: "uint32" }],
  ["U16", { bytes: 2, readAs: "uint16" }],
  ["U8", { bytes: 1, readAs: "uint8" }],
  ["BOOL", { bytes: 1, readAs: "bool" }],
]);

/** Sets an own property (a key "__proto__" included, which plain assignment would not make). */
function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function describeValue(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "an array";
  if (typeof x === "object") return `a ${(x as object).constructor?.name ?? "object"}`;
  return typeof x === "string" ? `the string ${JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x)}` : `${typeof x} ${String(x)}`;
}

/** Header entries are limited so a hostile length cannot make us allocate without bound. */
const MAX_HEADER = 100 * 1024 * 1024;

export interface SafetensorsEntry {
  /** The dtype in the file ("F32", "F16", ...). */
  fileDtype: string;
  /** The Stagecraft dtype it is read as. */
  dtype: DType;
  shape: number[];
  tensor: Tensor;
}

export interface SafetensorsFile {
  tensors: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
}

/** Encodes named tensors (and string metadata) as safetensors bytes. */
export function encodeSafetensors(tensors: ReadonlyMap<string, Tensor>, metadata: Record<string, string> = {}): Uint8Array {
  const op = "encodeSafetensors";
  if (!(tensors instanceof Map)) throw new CheckpointError(`takes a Map from names to tensors, got ${describeValue(tensors)}`, { op });
  checkMetadata(op, metadata);
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  const bodies: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of tensors) {
    if (typeof name !== "string") throw new CheckpointError(`tensor names must be strings, got ${describeValue(name)}`, { op });
    if (name === "__metadata__") throw new CheckpointError(`a tensor may not be named "__metadata__"`, { entry: name, op });
    if (!(t instanceof Tensor)) throw new CheckpointError(`the value of a tensor entry must be a Tensor, got ${describeValue(t)}`, { entry: name, op });
    const bytes = tensorBytes(t);
    setOwn(header, name, { dtype: TO_FILE[t.dtype], shape: t.shape.slice(), data_offsets: [offset, offset + bytes.byteLength] });
    bodies.push(bytes);
    offset += bytes.byteLength;
  }
  let json = JSON.stringify(header);
  const enc = new TextEncoder();
  let headerBytes = enc.encode(json);
  const pad = (8 - (headerBytes.byteLength % 8)) % 8;
  if (pad > 0) {
    json += " ".repeat(pad);
    headerBytes = enc.encode(json);
  }
  const out = new Uint8Array(8 + headerBytes.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.byteLength;
  for (const b of bodies) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out;
}

/** Metadata must be a plain object of strings (safetensors' `__metadata__`). */
export function checkMetadata(op: string, metadata: unknown): asserts metadata is Record<string, string> {
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata) || Object.getPrototypeOf(metadata) !== Object.prototype && Object.getPrototypeOf(metadata) !== null) {
    throw new CheckpointError(`metadata must be an object of strings, got ${describeValue(metadata)}`, { op });
  }
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== "string") throw new CheckpointError(`metadata ${JSON.stringify(k)} must be a string, got ${describeValue(v)}`, { op });
  }
}

/** A tensor's elements as little-endian bytes in its file dtype. */
function tensorBytes(t: Tensor): Uint8Array {
  const data = t.dataSync();
  const n = data.length;
  const item = FILE_DTYPES.get(TO_FILE[t.dtype])!.bytes;
  const out = new Uint8Array(n * item);
  const view = new DataView(out.buffer);
  for (let i = 0; i < n; i++) {
    const v = data[i]!;
    switch (t.dtype) {
      case "float16":
        view.setUint16(i * 2, floatToHalfBits(v), true);
        break;
      case "float32":
        view.setFloat32(i * 4, v, true);
        break;
      case "float64":
        view.setFloat64(i * 8, v, true);
        break;
      case "int8":
        view.setInt8(i, v);
        break;
      case "int16":
        view.setInt16(i * 2, v, true);
        break;
      case "uint16":
        view.setUint16(i * 2, v, true);
        break;
      case "int32":
        view.setInt32(i * 4, v, true);
        break;
      case "uint32":
        view.setUint32(i * 4, v, true);
        break;
      case "int64":
        view.setBigInt64(i * 8, BigInt(v), true);
        break;
      case "uint64":
        view.setBigUint64(i * 8, BigInt(v), true);
        break;
      default:
        out[i] = v;
    }
  }
  return out;
}

/** Decodes safetensors bytes; `path` names the file in errors. */
export function decodeSafetensors(bytes: Uint8Array, path = "<bytes>"): SafetensorsFile {
  if (!(bytes instanceof Uint8Array)) throw new CheckpointError(`takes the file's bytes (a Uint8Array or Buffer), got ${describeValue(bytes)}`, { op: "decodeSafetensors" });
  if (typeof path !== "string") throw new CheckpointError(`the name of the file in errors must be a string, got ${describeValue(path)}`, { op: "decodeSafetensors" });
  const fail = (message: string, entry?: string): never => {
    throw new CheckpointError(message, { path, entry });
  };
  if (bytes.byteLength < 8) fail(`the file is truncated: ${bytes.byteLength} bytes, less than the 8-byte header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n64 = view.getBigUint64(0, true);
  if (n64 > BigInt(Math.min(MAX_HEADER, bytes.byteLength - 8))) {
    fail(n64 > BigInt(MAX_HEADER) ? `the header length ${n64} is not plausible (corrupted file)` : `the file is truncated: the header needs ${n64} bytes, ${bytes.byteLength - 8} follow`);
  }
  const n = Number(n64);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    fail(`the header is not valid JSON (corrupted file): ${(e as Error).message}`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) fail(`the header is not a JSON object (corrupted file)`);
  const dataStart = 8 + n;
  const dataLength = bytes.byteLength - dataStart;
  const metadata: Record<string, string> = {};
  const entries: { name: string; begin: number; end: number; dtype: string; shape: number[] }[] = [];
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) fail(`__metadata__ must be an object of strings`);
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== "string") fail(`__metadata__.${k} must be a string, got ${typeof v}`);
        setOwn(metadata, k, v);
      }
      continue;
    }
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (e === null || typeof e !== "object") fail(`the entry is not an object`, name);
    const fileDtype = typeof e.dtype === "string" ? FILE_DTYPES.get(e.dtype) : undefined;
    if (fileDtype === undefined) return fail(`unsupported dtype ${JSON.stringify(e.dtype)}; known: ${[...FILE_DTYPES.keys()].join(", ")}`, name);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) fail(`shape ${JSON.stringify(e.shape)} is not a list of sizes`, name);
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0) || off[0] > off[1]) {
      fail(`data_offsets ${JSON.stringify(off)} are not [begin, end]`, name);
    }
    const [begin, end] = off as [number, number];
    const shape = e.shape as number[];
    const count = shape.reduce((a, b) => a * b, 1);
    if (count * fileDtype.bytes !== end - begin) {
      fail(`holds ${end - begin} bytes but ${e.dtype}[${shape.join(", ")}] needs ${count * fileDtype.bytes}`, name);
    }
    if (end > dataLength) fail(`the file is truncated: the entry ends at byte ${end} of the data, which has ${dataLength}`, name);
    entries.push({ name, begin, end, dtype: e.dtype as string, shape });
  }
  // The data must be covered exactly, without overlaps or holes (the reference implementation's rule).
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expected = 0;
  for (const e of entries) {
    if (e.begin !== expected) fail(e.begin < expected ? `overlaps the previous entry (corrupted file)` : `leaves a hole before it in the data (corrupted file)`, e.name);
    expected = e.end;
  }
  if (expected !== dataLength) fail(`the data has ${dataLength} bytes but the entries cover ${expected} (corrupted file)`);
  const tensors = new Map<string, SafetensorsEntry>();
  for (const e of entries) {
    const dtype = FILE_DTYPES.get(e.dtype)!.readAs;
    const data = readElements(bytes.subarray(dataStart + e.begin, dataStart + e.end), e.dtype, dtype);
    tensors.set(e.name, { fileDtype: e.dtype, dtype, shape: e.shape, tensor: tensor(data as Float32Array, dtype, e.shape) });
  }
  return { tensors, metadata };
}

function readElements(b: Uint8Array, fileDtype: string, dtype: DType): ArrayLike<number> {
  const item = FILE_DTYPES.get(fileDtype)!.bytes;
  const n = b.byteLength / item;
  const out = allocStorage(dtype, n);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < n; i++) {
    const o = i * item;
    switch (fileDtype) {
      case "F64":
        out[i] = view.getFloat64(o, true);
        break;
      case "F32":
        out[i] = view.getFloat32(o, true);
        break;
      case "F16":
        out[i] = halfBitsToFloat(view.getUint16(o, true));
        break;
      case "BF16":
        out[i] = new Float32Array(new Uint32Array([view.getUint16(o, true) << 16]).buffer)[0]!;
        break;
      case "I64":
        out[i] = Number(view.getBigInt64(o, true));
        break;
      case "I32":
        out[i] = view.getInt32(o, true);
        break;
      case "I16":
        out[i] = view.getInt16(o, true);
        break;
      case "U64":
        out[i] = Number(view.getBigUint64(o, true));
        break;
      case "U32":
        out[i] = view.getUint32(o, true);
        break;
      case "U16":
        out[i] = view.getUint16(o, true);
        break;
      case "I8":
        out[i] = view.getInt8(o);
        break;
      case "BOOL":
        out[i] = b[o]! ? 1 : 0;
        break;
      default:
        out[i] = b[o]!;
    }
  }
  return out;
}
