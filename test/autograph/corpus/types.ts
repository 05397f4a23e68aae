/**
 * The AutoGraph conformance corpus: small programs run natively and converted (issue 4,
 * "Proof of semantic preservation"). Each program is a self-contained function; its free
 * variables (helpers, classes, `sc`) are passed in `scope`, because conversion at run time
 * works from the function's source and cannot see closures.
 */
import type { DType } from "../../../src/api/index.js";

/** Which modes a program runs in. Every program runs natively vs converted with JS values. */
export interface TensorModes {
  /** Run converted with eager tensor inputs (default true). */
  eager?: boolean;
  /** Run staged: sc.stage(autograph(fn)) with the same tensor inputs (default true). */
  staged?: boolean;
  /** Indices of the arguments wrapped into tensors (default: every number / number[] argument). */
  wrap?: number[];
  /** Dtype per wrapped argument index (default float64; booleans become bool). */
  dtypes?: Record<number, DType>;
}

export interface CorpusProgram {
  name: string;
  /** Constructs this program exercises (counted in the summary). */
  covers: string[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  fn: (...args: any[]) => unknown;
  /** Argument lists; each runs natively and converted (inputs are deep-copied per run). */
  inputs: unknown[][];
  scope?: Record<string, unknown>;
  /** Present when the program computes on numbers: also run with eager tensors and staged. */
  tensor?: TensorModes;
  /** Compare exception types only (the engine's own messages, e.g. "x is not a function", may name generated code). */
  exceptionTypeOnly?: boolean;
}

/** Sugar for writing the corpus: p(name, covers, fn, inputs, options). */
export function p(
  name: string,
  covers: string[],
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  fn: (...args: any[]) => unknown,
  inputs: unknown[][],
  options: { scope?: Record<string, unknown>; tensor?: TensorModes | true; exceptionTypeOnly?: boolean } = {},
): CorpusProgram {
  const prog: CorpusProgram = { name, covers, fn, inputs };
  if (options.scope) prog.scope = options.scope;
  if (options.tensor) prog.tensor = options.tensor === true ? {} : options.tensor;
  if (options.exceptionTypeOnly) prog.exceptionTypeOnly = true;
  return prog;
}
