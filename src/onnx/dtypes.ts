/**
 * ONNX element types (TensorProto.DataType) and Stagecraft dtypes, both ways. An element type
 * without a Stagecraft dtype (bfloat16, float8, int4, strings, complex) raises
 * OnnxUnsupportedError naming the type, never a silent conversion.
 */
import { DTYPES, type DType } from "../core/dtype.js";
import { OnnxUnsupportedError } from "./errors.js";

/** TensorProto.DataType values. */
export const ElemType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
  FLOAT8E4M3FN: 17,
  FLOAT8E4M3FNUZ: 18,
  FLOAT8E5M2: 19,
  FLOAT8E5M2FNUZ: 20,
  UINT4: 21,
  INT4: 22,
  FLOAT4E2M1: 23,
  FLOAT8E8M0: 24,
  UINT2: 25,
  INT2: 26,
} as const;

const NAMES = new Map<number, string>(Object.entries(ElemType).map(([k, v]) => [v, k.toLowerCase()]));

/** The ONNX element type of each Stagecraft dtype (every dtype has one). */
const TO_ONNX: Record<string, number> = {
  float32: ElemType.FLOAT,
  float64: ElemType.DOUBLE,
  float16: ElemType.FLOAT16,
  int8: ElemType.INT8,
  int16: ElemType.INT16,
  int32: ElemType.INT32,
  int64: ElemType.INT64,
  uint8: ElemType.UINT8,
  uint16: ElemType.UINT16,
  uint32: ElemType.UINT32,
  uint64: ElemType.UINT64,
  bool: ElemType.BOOL,
};

const FROM_ONNX = new Map<number, DType>();
for (const d of DTYPES) {
  const e = TO_ONNX[d];
  if (e === undefined) throw new Error(`dtype ${d} has no ONNX element type in onnx/dtypes.ts`);
  FROM_ONNX.set(e, d);
}

/** The name ONNX gives an element type ("float", "int64", "bfloat16", ...). */
export function elemTypeName(t: number): string {
  return NAMES.get(t) ?? `element type ${t}`;
}

/** Whether Stagecraft has a dtype for the ONNX element type. */
export function isSupportedElemType(t: number): boolean {
  return FROM_ONNX.has(t);
}

/** The Stagecraft dtype of an ONNX element type; OnnxUnsupportedError when there is none. */
export function dtypeOfElemType(t: number, what: string): DType {
  const d = FROM_ONNX.get(t);
  if (d === undefined) {
    const name = elemTypeName(t);
    const known = NAMES.has(t);
    throw new OnnxUnsupportedError(
      `${what} has ${known ? `element type ${name}` : `an unknown element type ${t}`}, which Stagecraft has no dtype for (supported: ${[...FROM_ONNX.keys()].map(elemTypeName).join(", ")})`,
      "onnx.load",
    );
  }
  return d;
}

/** The ONNX element type of a Stagecraft dtype. */
export function elemTypeOfDtype(d: DType): number {
  return TO_ONNX[d]!;
}
