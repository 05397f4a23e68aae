/**
 * Reinterpreting tensor bytes: each element written little-endian in its dtype's layout
 * (int64/uint64 as 64-bit integers, float16 as its half bits, bool as one byte) and read back
 * as another dtype of the same width.
 */
import { allocStorage, type DType, type TypedArray } from "../../core/dtype.js";
import { floatToHalfBits, halfBitsToFloat } from "../../core/float16.js";

/** Bytes per element of each dtype's value layout (not its storage: float16 is 2). */
export const VALUE_BYTES: Record<DType, number> = { float16: 2, float32: 4, float64: 8, int8: 1, int16: 2, int32: 4, int64: 8, uint8: 1, uint16: 2, uint32: 4, uint64: 8, bool: 1 };

export function bitcastInto(src: TypedArray, from: DType, to: DType): TypedArray {
  const n = src.length;
  const view = new DataView(new ArrayBuffer(n * VALUE_BYTES[from]));
  for (let i = 0; i < n; i++) {
    const x = src[i]!;
    switch (from) {
      case "float16": view.setUint16(2 * i, floatToHalfBits(x), true); break;
      case "float32": view.setFloat32(4 * i, x, true); break;
      case "float64": view.setFloat64(8 * i, x, true); break;
      case "int8": view.setInt8(i, x); break;
      case "int16": view.setInt16(2 * i, x, true); break;
      case "int32": view.setInt32(4 * i, x, true); break;
      case "int64": view.setBigInt64(8 * i, BigInt(x), true); break;
      case "uint16": view.setUint16(2 * i, x, true); break;
      case "uint32": view.setUint32(4 * i, x, true); break;
      case "uint64": view.setBigUint64(8 * i, BigInt(x), true); break;
      default: view.setUint8(i, x);
    }
  }
  const out = allocStorage(to, n);
  for (let i = 0; i < n; i++) {
    switch (to) {
      case "float16": out[i] = halfBitsToFloat(view.getUint16(2 * i, true)); break;
      case "float32": out[i] = view.getFloat32(4 * i, true); break;
      case "float64": out[i] = view.getFloat64(8 * i, true); break;
      case "int8": out[i] = view.getInt8(i); break;
      case "int16": out[i] = view.getInt16(2 * i, true); break;
      case "int32": out[i] = view.getInt32(4 * i, true); break;
      case "int64": out[i] = Number(view.getBigInt64(8 * i, true)); break;
      case "uint16": out[i] = view.getUint16(2 * i, true); break;
      case "uint32": out[i] = view.getUint32(4 * i, true); break;
      case "uint64": out[i] = Number(view.getBigUint64(8 * i, true)); break;
      case "bool": out[i] = view.getUint8(i) !== 0 ? 1 : 0; break;
      default: out[i] = view.getUint8(i);
    }
  }
  return out;
}
