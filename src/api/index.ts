/** Stagecraft's public surface. */
export * from "../ops/index.js";
export { Tensor, SymbolicValueError, type TensorLike, type NestedArray } from "../core/tensor.js";
export { Variable, variable } from "../core/variable.js";
export { type DType, DTYPES, promoteTypes } from "../core/dtype.js";
export { StagecraftError, ShapeError, DtypeError, IndexError, ValueError, NumericsError, GradientError } from "../core/errors.js";
export { GradientTape, type GradientTapeOptions } from "../ad/tape.js";
export { grad, valueAndGrad, vjp, customGradient, type GradOptions, type CustomGradientResult } from "../ad/functional.js";
