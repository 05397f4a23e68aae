/**
 * Bitwise ops on integer tensors: bitwiseAnd, bitwiseOr, bitwiseXor, bitwiseNot, and the shifts
 * bitShiftLeft / bitShiftRight (a shift by the type's width or more gives 0; right shifts of
 * signed types keep the sign). Operands of 8 to 32 bits use JavaScript's 32-bit operators (the
 * typed-array store keeps the type's bits); int64 and uint64 (exact to 2^53) go through BigInt,
 * which the expression language of elementwise ops does not have: these ops declare their CPU
 * kernel (a broadcasting loop over JavaScript source) and are not fused. Not differentiable.
 */
import { allocStorage, isInteger, isUnsigned, promoteTypes, type DType } from "../core/dtype.js";
import { DtypeError, ValueError } from "../core/errors.js";
import { broadcastShapesN, sizeOf } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { elementwiseLoop } from "../backends/cpu/elementwise.js";
import { applyOp1, defineOp, type OpDef, type TensorType } from "./registry.js";
import { toTensorsWeak } from "./convert.js";
import { bitwiseGpuEntries } from "../backends/webgpu/op-kernels/elementwise.js";
import { elementwiseBatch } from "./batching.js";

/** `wide` is 1 for the 64-bit types, `unsigned` 1 for the unsigned ones (set from the dtype; infer checks them). */
interface BitAttrs {
  wide: number;
  unsigned: number;
}

/** JavaScript source of one element over operands a (and b): for 8-32-bit types, and through BigInt for 64-bit ones. */
interface BitForm {
  narrow: (a: BitAttrs) => string;
  wide: string;
}

/** The attributes for operands of these dtypes (the promoted one decides); integers only. */
function attrsOf(op: string, dtypes: DType[]): BitAttrs {
  if (!dtypes.every(isInteger)) throw new DtypeError(`needs integer operands, got ${dtypes.join(", ")}`, op);
  const d = dtypes.reduce(promoteTypes);
  return { wide: d === "int64" || d === "uint64" ? 1 : 0, unsigned: isUnsigned(d) ? 1 : 0 };
}

function bitwise(name: string, inputs: string[], form: BitForm, commutative = false): OpDef<BitAttrs> {
  const source = (a: BitAttrs): string => {
    if (!a.wide) return form.narrow(a);
    const asN = a.unsigned ? "BigInt.asUintN" : "BigInt.asIntN";
    return `Number(${asN}(64, ${form.wide}))`;
  };
  return defineOp<BitAttrs>({
    name,
    batch: elementwiseBatch,
    family: "bitwise",
    inputs,
    ...(commutative ? { commutative: true } : {}),
    infer(types: readonly TensorType[], attrs): TensorType[] {
      const want = attrsOf(name, types.map((t) => t.dtype));
      if (attrs?.wide !== want.wide || attrs?.unsigned !== want.unsigned) {
        throw new ValueError(`attributes ${JSON.stringify(attrs)} do not match the dtypes ${types.map((t) => t.dtype).join(", ")} (expected ${JSON.stringify(want)})`, name);
      }
      const shape = types.length === 1 ? types[0]!.shape : broadcastShapesN(name, types.map((t) => t.shape));
      return [{ shape, dtype: types.map((t) => t.dtype).reduce(promoteTypes) }];
    },
    kernels: {
      webgpu: bitwiseGpuEntries[name as keyof typeof bitwiseGpuEntries],
      cpu(ins, attrs, outs) {
        const o = outs[0]!;
        const out = allocStorage(o.dtype, sizeOf(o.shape));
        elementwiseLoop(source(attrs), ins.length)(
          ins.map((t) => t.concrete()),
          ins.map((t) => t.shape),
          out,
          o.shape,
        );
        return [out];
      },
    },
  });
}

export const bitwiseAndOp = bitwise("bitwiseAnd", ["a", "b"], { narrow: () => "(a & b)", wide: "(BigInt(a) & BigInt(b))" }, true);
export const bitwiseOrOp = bitwise("bitwiseOr", ["a", "b"], { narrow: () => "(a | b)", wide: "(BigInt(a) | BigInt(b))" }, true);
export const bitwiseXorOp = bitwise("bitwiseXor", ["a", "b"], { narrow: () => "(a ^ b)", wide: "(BigInt(a) ^ BigInt(b))" }, true);
export const bitwiseNotOp = bitwise("bitwiseNot", ["x"], { narrow: () => "(~a)", wide: "(~BigInt(a))" });
export const bitShiftLeftOp = bitwise("bitShiftLeft", ["a", "b"], { narrow: () => "(b >= 32 || b < 0 ? 0 : a << b)", wide: "(b >= 64 || b < 0 ? 0n : BigInt(a) << BigInt(b))" });
export const bitShiftRightOp = bitwise("bitShiftRight", ["a", "b"], {
  narrow: (x) => (x.unsigned ? "(b < 0 || b >= 32 ? 0 : a >>> b)" : "(b < 0 ? 0 : a >> Math.min(b, 31))"),
  wide: "(b < 0 ? 0n : BigInt(a) >> BigInt(Math.min(b, 63)))",
});

function apply(def: OpDef<BitAttrs>, args: TensorLike[]): Tensor {
  const ts = toTensorsWeak(args, def.name);
  return applyOp1(def, ts, attrsOf(def.name, ts.map((t) => t.dtype)));
}

export const bitwiseAnd = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseAndOp, [a, b]);
export const bitwiseOr = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseOrOp, [a, b]);
export const bitwiseXor = (a: TensorLike, b: TensorLike): Tensor => apply(bitwiseXorOp, [a, b]);
export const bitwiseNot = (x: TensorLike): Tensor => apply(bitwiseNotOp, [x]);
/** a << b (0 when b is the type's width or more). */
export const bitShiftLeft = (a: TensorLike, b: TensorLike): Tensor => apply(bitShiftLeftOp, [a, b]);
/** a >> b: logical for unsigned types, arithmetic (sign-keeping) for signed ones. */
export const bitShiftRight = (a: TensorLike, b: TensorLike): Tensor => apply(bitShiftRightOp, [a, b]);
