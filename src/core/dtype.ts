/**
 * Dtypes, their storage, and the one promotion table.
 *
 * Storage (documented in docs/dtypes.md): int64 and uint64 are held in a Float64Array and are
 * exact for |x| <= 2^53; float16 is held in a Float32Array whose every value is a float16
 * number (kernels compute in float32/float64 and round their results, ops/registry.ts); bool
 * is a Uint8Array of 0/1; the other integer widths use their own typed arrays.
 */
import { AllocationError } from "./errors.js";

export type DType = "float16" | "float32" | "float64" | "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64" | "bool";
export type TypedArray = Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;

export const DTYPES: readonly DType[] = ["float32", "float64", "int32", "int64", "uint8", "bool", "float16", "int8", "int16", "uint16", "uint32", "uint64"];
export const DEFAULT_FLOAT: DType = "float32";

export function isDType(x: unknown): x is DType {
  return typeof x === "string" && (DTYPES as readonly string[]).includes(x);
}

export function isFloat(d: DType): boolean {
  return d === "float32" || d === "float64" || d === "float16";
}
export function isInteger(d: DType): boolean {
  return d !== "bool" && !isFloat(d);
}
export function isUnsigned(d: DType): boolean {
  return d === "uint8" || d === "uint16" || d === "uint32" || d === "uint64" || d === "bool";
}

export function storageCtor(d: DType): new (n: number) => TypedArray {
  switch (d) {
    case "float32":
    case "float16":
      return Float32Array;
    case "float64":
    case "int64":
    case "uint64":
      return Float64Array;
    case "int32":
      return Int32Array;
    case "int16":
      return Int16Array;
    case "int8":
      return Int8Array;
    case "uint32":
      return Uint32Array;
    case "uint16":
      return Uint16Array;
    case "uint8":
    case "bool":
      return Uint8Array;
  }
}

/** Bytes per element of a dtype's storage (float16: 4, its Float32Array). */
export function storageBytes(d: DType): number {
  return (storageCtor(d) as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
}

/** Bits of an integer dtype's values (int64/uint64: 64, though stored exactly only to 2^53). */
const INT_BITS: Partial<Record<DType, number>> = { int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8, uint16: 16, uint32: 32, uint64: 64, bool: 1 };

/** Smallest and largest values of a dtype (int64/uint64: the exactly stored range, +-2^53). */
export function dtypeRange(d: DType): [number, number] {
  if (isFloat(d)) return [-Infinity, Infinity];
  if (d === "bool") return [0, 1];
  if (d === "int64") return [-(2 ** 53), 2 ** 53];
  if (d === "uint64") return [0, 2 ** 53];
  const bits = INT_BITS[d]!;
  return isUnsigned(d) ? [0, 2 ** bits - 1] : [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1];
}

/**
 * Storage for `size` elements. Ops check their outputs' sizes before their kernels run
 * (shape.ts checkAllocation); an allocation the engine still refuses (out of memory) is an
 * AllocationError here (the eager handler and runOp, ops/registry.ts, name the op).
 */
export function allocStorage(d: DType, size: number): TypedArray {
  try {
    return new (storageCtor(d))(size);
  } catch (e) {
    if (e instanceof RangeError) throw new AllocationError(`${size} ${d} elements could not be allocated (${e.message})`);
    throw e;
  }
}

/**
 * Promotion (as JAX without x64 weak-type subtleties). Along the original chain
 *   bool < uint8 < int32 < int64 < float32 < float64
 * the result of a binary op on two tensors is the larger of the two dtypes (table below).
 * The other widths (ONNX's) follow NumPy: integers of one signedness give the wider; an
 * unsigned and a signed one give the narrowest signed type holding both (uint64 with a signed
 * type: int64); an integer meeting a float gives the float; float16 < float32 < float64.
 * JS numbers are weakly typed: they take the tensor operand's dtype, except that a
 * non-integer number meeting an integer or bool tensor gives float32.
 *
 *            bool    uint8   int32   int64   float32 float64
 *   bool     bool    uint8   int32   int64   float32 float64
 *   uint8    uint8   uint8   int32   int64   float32 float64
 *   int32    int32   int32   int32   int64   float32 float64
 *   int64    int64   int64   int64   int64   float32 float64
 *   float32  float32 float32 float32 float32 float32 float64
 *   float64  float64 float64 float64 float64 float64 float64
 */
const FLOAT_RANK: Partial<Record<DType, number>> = { float16: 1, float32: 2, float64: 3 };

export function promoteTypes(a: DType, b: DType): DType {
  if (a === b) return a;
  if (a === "bool") return b;
  if (b === "bool") return a;
  const fa = FLOAT_RANK[a];
  const fb = FLOAT_RANK[b];
  if (fa !== undefined || fb !== undefined) return (fa ?? 0) >= (fb ?? 0) ? a : b;
  const ba = INT_BITS[a]!;
  const bb = INT_BITS[b]!;
  const ua = isUnsigned(a);
  const ub = isUnsigned(b);
  if (ua === ub) return ba >= bb ? a : b;
  const [u, sBits, sType] = ua ? [ba, bb, b] : [bb, ba, a];
  if (sBits > u) return sType;
  return u >= 32 ? "int64" : u === 16 ? "int32" : "int16";
}

/** Dtype a weakly typed JS number takes when it meets a tensor of dtype `other`. */
export function weakScalarDtype(value: number | boolean, other: DType): DType {
  if (typeof value === "boolean" || isFloat(other)) return other;
  if (Number.isInteger(value)) return other === "bool" ? "int32" : other;
  return DEFAULT_FLOAT;
}

/** Dtype inferred for a JS value given to tensor() without an explicit dtype. */
export function inferDtypeOfValue(v: unknown): DType {
  if (typeof v === "boolean") return "bool";
  return DEFAULT_FLOAT;
}
