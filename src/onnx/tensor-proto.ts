/**
 * TensorProto <-> Tensor. Reading checks everything before allocating: the element type has
 * a dtype, the dims are non-negative integers whose product is within `limits.maxElements`,
 * and the data (raw bytes, a typed field, or external data) holds exactly that many
 * elements. Writing always uses raw_data (little-endian), as ONNX's own helpers do.
 */
import { Tensor } from "../core/tensor.js";
import { allocStorage, type DType, type TypedArray } from "../core/dtype.js";
import { halfBitsToFloat, floatToHalfBits } from "../core/float16.js";
import { OnnxLimitError, OnnxModelError, OnnxUnsupportedError } from "./errors.js";
import { has, int64, utf8, type Int64, type TensorProto } from "./protobuf.js";
import { dtypeOfElemType, elemTypeName, elemTypeOfDtype, ElemType } from "./dtypes.js";
import type { ExternalDataReader } from "./external-data.js";

export interface TensorLimits {
  /** Largest number of elements one tensor may declare (default 2^28). */
  maxElements: number;
}

export const DEFAULT_LIMITS: TensorLimits = { maxElements: 2 ** 28 };

/** Bytes per element in raw_data, by element type. */
const RAW_BYTES: Record<number, number> = {
  [ElemType.FLOAT]: 4,
  [ElemType.DOUBLE]: 8,
  [ElemType.FLOAT16]: 2,
  [ElemType.INT8]: 1,
  [ElemType.INT16]: 2,
  [ElemType.INT32]: 4,
  [ElemType.INT64]: 8,
  [ElemType.UINT8]: 1,
  [ElemType.UINT16]: 2,
  [ElemType.UINT32]: 4,
  [ElemType.UINT64]: 8,
  [ElemType.BOOL]: 1,
};

/** Checked dims of a TensorProto (or of a declared shape): non-negative, product within the limit. */
export function checkedDims(dims: readonly Int64[], what: string, limits: TensorLimits): number[] {
  const out = dims.map((d) => int64(d, `a dimension of ${what}`));
  let size = 1;
  for (const d of out) {
    if (d < 0) throw new OnnxModelError(`${what} has a negative dimension ${d} (dims [${out.join(", ")}])`, "onnx.load");
    size *= d;
  }
  if (size > limits.maxElements) {
    throw new OnnxLimitError(
      `${what} declares ${size.toExponential(3)} elements (dims [${out.join(", ")}]), more than the limit of ${limits.maxElements}; ` +
        `raise it with the maxElements load option if the model is real`,
      "onnx.load",
    );
  }
  return out;
}

/** Reads a TensorProto as a concrete tensor. */
export function readTensorProto(p: TensorProto, what = "tensor", limits: TensorLimits = DEFAULT_LIMITS, external: ExternalDataReader | null = null): Tensor {
  const name = p.name ? `tensor ${JSON.stringify(p.name)}` : what;
  if (has(p, "segment")) throw new OnnxUnsupportedError(`${name} is a segment of a larger tensor, which this importer does not read`, "onnx.load");
  const elem = p.data_type;
  if (elem === ElemType.UNDEFINED) throw new OnnxModelError(`${name} has no data_type`, "onnx.load");
  const dtype = dtypeOfElemType(elem, name);
  const shape = checkedDims(p.dims, name, limits);
  const size = shape.reduce((a, b) => a * b, 1);
  const count = (n: number, field: string): void => {
    if (n !== size) throw new OnnxModelError(`${name} has shape [${shape.join(", ")}] (${size} elements) but its ${field} holds ${n}`, "onnx.load");
  };
  let data: TypedArray;
  if (p.data_location === 1) {
    if (external === null) throw new OnnxModelError(`${name} keeps its data in an external file, but the model was not loaded from a path`, "onnx.load");
    const bytes = external.read(p, name, size * RAW_BYTES[elem]!);
    data = fromRaw(bytes, elem, dtype, size);
  } else if (has(p, "raw_data")) {
    const perElement = RAW_BYTES[elem]!;
    if (p.raw_data.length !== size * perElement) {
      throw new OnnxModelError(`${name} has shape [${shape.join(", ")}] (${size} ${elemTypeName(elem)} elements, ${size * perElement} bytes) but raw_data holds ${p.raw_data.length} bytes`, "onnx.load");
    }
    data = fromRaw(p.raw_data, elem, dtype, size);
  } else {
    data = fromFields(p, elem, dtype, size, count);
  }
  return new Tensor(data, shape, dtype);
}

function fromRaw(bytes: Uint8Array, elem: number, dtype: DType, size: number): TypedArray {
  const out = allocStorage(dtype, size);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (elem) {
    case ElemType.FLOAT:
      for (let i = 0; i < size; i++) out[i] = v.getFloat32(4 * i, true);
      break;
    case ElemType.DOUBLE:
      for (let i = 0; i < size; i++) out[i] = v.getFloat64(8 * i, true);
      break;
    case ElemType.FLOAT16:
      for (let i = 0; i < size; i++) out[i] = halfBitsToFloat(v.getUint16(2 * i, true));
      break;
    case ElemType.INT8:
      for (let i = 0; i < size; i++) out[i] = v.getInt8(i);
      break;
    case ElemType.INT16:
      for (let i = 0; i < size; i++) out[i] = v.getInt16(2 * i, true);
      break;
    case ElemType.INT32:
      for (let i = 0; i < size; i++) out[i] = v.getInt32(4 * i, true);
      break;
    case ElemType.INT64:
      for (let i = 0; i < size; i++) out[i] = Number(v.getBigInt64(8 * i, true));
      break;
    case ElemType.UINT8:
      for (let i = 0; i < size; i++) out[i] = v.getUint8(i);
      break;
    case ElemType.UINT16:
      for (let i = 0; i < size; i++) out[i] = v.getUint16(2 * i, true);
      break;
    case ElemType.UINT32:
      for (let i = 0; i < size; i++) out[i] = v.getUint32(4 * i, true);
      break;
    case ElemType.UINT64:
      for (let i = 0; i < size; i++) out[i] = Number(v.getBigUint64(8 * i, true));
      break;
    case ElemType.BOOL:
      for (let i = 0; i < size; i++) out[i] = v.getUint8(i) !== 0 ? 1 : 0;
      break;
    default:
      throw new OnnxUnsupportedError(`raw data of element type ${elemTypeName(elem)} is not read`, "onnx.load");
  }
  return out;
}

function fromFields(p: TensorProto, elem: number, dtype: DType, size: number, count: (n: number, field: string) => void): TypedArray {
  const out = allocStorage(dtype, size);
  switch (elem) {
    case ElemType.FLOAT:
      count(p.float_data.length, "float_data");
      out.set(p.float_data);
      break;
    case ElemType.DOUBLE:
      count(p.double_data.length, "double_data");
      out.set(p.double_data);
      break;
    case ElemType.INT64:
      count(p.int64_data.length, "int64_data");
      for (let i = 0; i < size; i++) out[i] = int64(p.int64_data[i]!, "", true);
      break;
    case ElemType.UINT32:
    case ElemType.UINT64:
      count(p.uint64_data.length, "uint64_data");
      for (let i = 0; i < size; i++) out[i] = int64(p.uint64_data[i]!, "", true);
      break;
    case ElemType.FLOAT16:
      count(p.int32_data.length, "int32_data");
      for (let i = 0; i < size; i++) out[i] = halfBitsToFloat(p.int32_data[i]! & 0xffff);
      break;
    case ElemType.BOOL:
      count(p.int32_data.length, "int32_data");
      for (let i = 0; i < size; i++) out[i] = p.int32_data[i] !== 0 ? 1 : 0;
      break;
    case ElemType.INT8:
    case ElemType.INT16:
    case ElemType.INT32:
    case ElemType.UINT8:
    case ElemType.UINT16:
      count(p.int32_data.length, "int32_data");
      out.set(p.int32_data); // (typed-array stores wrap values outside the type's range, as C casts do)
      break;
    default:
      throw new OnnxUnsupportedError(`tensor data of element type ${elemTypeName(elem)} is not read`, "onnx.load");
  }
  return out;
}

/** A TensorProto (plain object, for protobuf.encode) holding `t`'s values as raw_data. */
export function tensorToProto(t: Tensor, name = ""): Record<string, unknown> {
  const data = t.dataSync();
  const elem = elemTypeOfDtype(t.dtype);
  const per = RAW_BYTES[elem]!;
  const bytes = new Uint8Array(data.length * per);
  const v = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) {
    const x = data[i]!;
    switch (elem) {
      case ElemType.FLOAT:
        v.setFloat32(4 * i, x, true);
        break;
      case ElemType.DOUBLE:
        v.setFloat64(8 * i, x, true);
        break;
      case ElemType.FLOAT16:
        v.setUint16(2 * i, floatToHalfBits(x), true);
        break;
      case ElemType.INT8:
        v.setInt8(i, x);
        break;
      case ElemType.INT16:
        v.setInt16(2 * i, x, true);
        break;
      case ElemType.INT32:
        v.setInt32(4 * i, x, true);
        break;
      case ElemType.INT64:
        v.setBigInt64(8 * i, BigInt(x), true);
        break;
      case ElemType.UINT16:
        v.setUint16(2 * i, x, true);
        break;
      case ElemType.UINT32:
        v.setUint32(4 * i, x, true);
        break;
      case ElemType.UINT64:
        v.setBigUint64(8 * i, BigInt(x), true);
        break;
      default: // uint8, bool
        v.setUint8(i, x);
    }
  }
  return { name, dims: [...t.shape], data_type: elem, raw_data: bytes };
}

/** The strings of a STRING tensor (not a Stagecraft dtype: only attributes and test data use them). */
export function readStringTensor(p: TensorProto): string[] {
  return p.string_data.map(utf8);
}
