/** Conversion of op arguments (tensors, variables, JS numbers and arrays) to tensors. */
import { Tensor, makeTensor, type TensorLike } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { type DType, weakScalarDtype, allocStorage, DEFAULT_FLOAT, promoteTypes } from "../core/dtype.js";
import { ValueError } from "../core/errors.js";
import { STACKED, isStackedSequence } from "../core/tensor-sequence.js";
import { roundToFloat16 } from "../core/float16.js";
import { isTracing } from "../core/context.js";
import { applyOp1 } from "./registry.js";
import { fillOp } from "./fill.js";

/** Per dtype: value -> cached scalar tensor (-0 is kept apart from 0). */
const scalarCache = new Map<DType, Map<number, Tensor>>();
const negativeZero = new Map<DType, Tensor>();

/**
 * A scalar tensor for a JS value: a cached immutable eager tensor, or, while a function is
 * staged, a constant node (so graphs hold their constants rather than capturing them).
 */
export function scalarOf(value: number, dtype: DType): Tensor {
  if (isTracing()) return applyOp1(fillOp, [], { shape: [], dtype, value });
  const isNegZero = value === 0 && 1 / value < 0;
  let byValue = scalarCache.get(dtype);
  if (byValue === undefined) scalarCache.set(dtype, (byValue = new Map()));
  let t = isNegZero ? negativeZero.get(dtype) : byValue.get(value);
  if (t === undefined) {
    const data = allocStorage(dtype, 1);
    data[0] = dtype === "bool" ? (value ? 1 : 0) : dtype === "float16" ? roundToFloat16(value) : value;
    t = new Tensor(data, [], dtype);
    if (isNegZero) negativeZero.set(dtype, t);
    else if (byValue.size < 4096) byValue.set(value, t);
  }
  return t;
}

/** Converts one argument; Variables are read (which lets tapes watch them). */
export function toTensor(x: TensorLike, op: string, dtype?: DType): Tensor {
  if (x instanceof Tensor) return x instanceof Variable ? x.read() : x;
  if (typeof x === "number") return scalarOf(x, dtype ?? DEFAULT_FLOAT);
  if (typeof x === "boolean") return scalarOf(x ? 1 : 0, dtype ?? "bool");
  if (x === null || x === undefined) throw new ValueError(`expected a tensor, got ${x}`, op);
  // (a sequence of tensors an AutoGraph loop built: the tensor its elements make, as an array's)
  if (isStackedSequence(x)) return x[STACKED](dtype);
  return makeTensor(op, x, undefined, dtype);
}

/**
 * Converts the operands of an op where JS numbers are weakly typed: a number takes the
 * dtype of the tensor operands (see promoteTypes / weakScalarDtype in core/dtype.ts).
 */
export function toTensorsWeak(args: readonly TensorLike[], op: string): Tensor[] {
  const out = new Array<Tensor>(args.length);
  let strong: DType | null = null;
  let hasWeak = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (typeof a === "number" || typeof a === "boolean") {
      hasWeak = true;
      continue;
    }
    const t = toTensor(a, op);
    out[i] = t;
    strong = strong === null ? t.dtype : promoteTypes(strong, t.dtype);
  }
  if (hasWeak) {
    for (let i = 0; i < args.length; i++) {
      if (out[i] !== undefined) continue;
      const a = args[i] as number | boolean;
      const d = strong === null ? (typeof a === "boolean" ? "bool" : DEFAULT_FLOAT) : weakScalarDtype(a, strong);
      out[i] = scalarOf(typeof a === "boolean" ? (a ? 1 : 0) : a, d);
    }
  }
  return out;
}
