/**
 * Bitwise ops on integer tensors: bitwiseAnd, bitwiseOr, bitwiseXor, bitwiseNot, and the shifts
 * bitShiftLeft / bitShiftRight (a shift by the type's width or more gives 0; right shifts of
 * signed types keep the sign). Operands of 8 to 32 bits use JavaScript's 32-bit operators (the
 * typed-array store keeps the type's bits); int64 and uint64 (exact to 2^53) go through BigInt.
 * Not differentiable (integer results).
 */
import { isInteger, isUnsigned, promoteTypes, type DType } from "../core/dtype.js";
import { DtypeError, ValueError } from "../core/errors.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { callElementwiseWithAttrs, defineElementwise } from "./define-elementwise.js";
import { toTensorsWeak } from "./convert.js";

/** `$wide` is 1 for the 64-bit types, `$unsigned` 1 for the unsigned ones (set from the dtype; infer checks them). */
interface BitAttrs {
  wide: number;
  unsigned: number;
}

const big = (expr: string): string => `Number($unsigned ? BigInt.asUintN(64, ${expr}) : BigInt.asIntN(64, ${expr}))`;

function bitwise(name: string, narrow: string, wide: string, inputs: string[]) {
  const def = defineElementwise({ name, family: "bitwise", inputs, expr: `($wide ? ${big(wide)} : ${narrow})`, dtype: "numeric" });
  // Integer operands only, and attributes that match their dtype (graphs from other front ends
  // are checked too: the attributes choose the arithmetic).
  const infer = def.infer;
  (def as { infer: typeof infer }).infer = (inputs, attrs) => {
    const types = infer(inputs, attrs);
    const want = attrsOf(name, inputs.map((t) => t.dtype));
    const a = attrs as Partial<BitAttrs> | undefined;
    if (a?.wide !== want.wide || a?.unsigned !== want.unsigned) {
      throw new ValueError(`attributes ${JSON.stringify(a)} do not match the dtype ${inputs[0]!.dtype} (expected ${JSON.stringify(want)})`, name);
    }
    return types;
  };
  return def;
}

export const bitwiseAndOp = bitwise("bitwiseAnd", "(a & b)", "(BigInt(a) & BigInt(b))", ["a", "b"]);
export const bitwiseOrOp = bitwise("bitwiseOr", "(a | b)", "(BigInt(a) | BigInt(b))", ["a", "b"]);
export const bitwiseXorOp = bitwise("bitwiseXor", "(a ^ b)", "(BigInt(a) ^ BigInt(b))", ["a", "b"]);
export const bitwiseNotOp = bitwise("bitwiseNot", "(~a)", "(~BigInt(a))", ["x"]);
export const bitShiftLeftOp = bitwise("bitShiftLeft", "(b >= 32 || b < 0 ? 0 : a << b)", "(b >= 64 || b < 0 ? 0n : BigInt(a) << BigInt(b))", ["a", "b"]);
export const bitShiftRightOp = bitwise(
  "bitShiftRight",
  "(b < 0 ? 0 : $unsigned ? (b >= 32 ? 0 : a >>> b) : a >> Math.min(b, 31))",
  "(b < 0 ? 0n : BigInt(a) >> BigInt(Math.min(b, 63)))",
  ["a", "b"],
);

/** The attributes for operands of these dtypes (the promoted one decides); integers only. */
function attrsOf(op: string, dtypes: DType[]): BitAttrs {
  if (!dtypes.every(isInteger)) throw new DtypeError(`needs integer operands, got ${dtypes.join(", ")}`, op);
  const d = dtypes.reduce(promoteTypes);
  return { wide: d === "int64" || d === "uint64" ? 1 : 0, unsigned: isUnsigned(d) ? 1 : 0 };
}

function apply(def: typeof bitwiseAndOp, op: string, args: TensorLike[]): Tensor {
  const ts = toTensorsWeak(args, op);
  return callElementwiseWithAttrs(def, attrsOf(op, ts.map((t) => t.dtype)) as unknown as Record<string, number>, ...ts);
}

export const bitwiseAnd = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseAndOp, "bitwiseAnd", [a, b]);
export const bitwiseOr = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseOrOp, "bitwiseOr", [a, b]);
export const bitwiseXor = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseXorOp, "bitwiseXor", [a, b]);
export const bitwiseNot = (x: TensorLike): Tensor => apply(bitwiseNotOp, "bitwiseNot", [x]);
/** a << b (0 when b is the type's width or more). */
export const bitShiftLeft = (a: TensorLike, b: TensorLike): Tensor => apply(bitShiftLeftOp, "bitShiftLeft", [a, b]);
/** a >> b: logical for unsigned types, arithmetic (sign-keeping) for signed ones. */
export const bitShiftRight = (a: TensorLike, b: TensorLike): Tensor => apply(bitShiftRightOp, "bitShiftRight", [a, b]);
