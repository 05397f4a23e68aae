/** The static type of a tensor: dtype and shape (unknown dims are -1 while staging). */
import type { DType } from "./dtype.js";

export interface TensorType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}
