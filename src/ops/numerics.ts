/** checkNumerics: fail loudly on NaN or Inf instead of letting them spread. */
import { isFloat } from "../core/dtype.js";
import { NumericsError } from "../core/errors.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { fmtShape } from "../core/shape.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";

/**
 * Returns `x` unchanged if every element is finite; otherwise throws a NumericsError that
 * says how many NaN/Inf values there are, where the first one is, and `message`.
 */
export function checkNumerics(x: TensorLike, message = ""): Tensor {
  const t = toTensor(x, "checkNumerics");
  if (!isFloat(t.dtype)) return t;
  const data = t.dataSync();
  let nan = 0,
    inf = 0,
    first = -1;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (v !== v) nan++;
    else if (v === Infinity || v === -Infinity) inf++;
    else continue;
    if (first < 0) first = i;
  }
  if (first >= 0) {
    const idx: number[] = [];
    let r = first;
    for (let d = t.shape.length - 1; d >= 0; d--) {
      idx.unshift(r % t.shape[d]!);
      r = Math.floor(r / t.shape[d]!);
    }
    throw new NumericsError(
      `${message ? message + ": " : ""}tensor of shape ${fmtShape(t.shape)} (${t.dtype}) has ${nan} NaN and ${inf} Inf values; first at [${idx.join(", ")}] = ${data[first]}`,
      "checkNumerics",
    );
  }
  return t;
}

declare module "../core/tensor.js" {
  interface Tensor {
    checkNumerics(message?: string): Tensor;
  }
}
installMethods({ checkNumerics });
