/**
 * Dtypes, their storage, and the one promotion table.
 *
 * Storage: int64 is held in a Float64Array and is exact for |x| <= 2^53 (documented in
 * docs/dtypes.md); bool is a Uint8Array of 0/1.
 */
import { AllocationError } from "./errors.js";

export type DType = "float32" | "float64" | "int32" | "int64" | "uint8" | "bool";
export type TypedArray = Float32Array | Float64Array | Int32Array | Uint8Array;

export const DTYPES: readonly DType[] = ["float32", "float64", "int32", "int64", "uint8", "bool"];
export const DEFAULT_FLOAT: DType = "float32";

export function isDType(x: unknown): x is DType {
  return typeof x === "string" && (DTYPES as readonly string[]).includes(x);
}

export function isFloat(d: DType): boolean {
  return d === "float32" || d === "float64";
}
export function isInteger(d: DType): boolean {
  return d === "int32" || d === "int64" || d === "uint8";
}

export function storageCtor(d: DType): new (n: number) => TypedArray {
  switch (d) {
    case "float32":
      return Float32Array;
    case "float64":
    case "int64":
      return Float64Array;
    case "int32":
      return Int32Array;
    case "uint8":
    case "bool":
      return Uint8Array;
  }
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
 * Promotion lattice (as JAX without x64 weak-type subtleties):
 *   bool < uint8 < int32 < int64 < float32 < float64
 * The result of a binary op on two tensors is the larger of the two dtypes.
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
const RANK: Record<DType, number> = { bool: 0, uint8: 1, int32: 2, int64: 3, float32: 4, float64: 5 };

export function promoteTypes(a: DType, b: DType): DType {
  return RANK[a] >= RANK[b] ? a : b;
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
