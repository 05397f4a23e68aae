/**
 * Sequences of tensors held as one stacked tensor: what AutoGraph makes of an array a staged
 * loop or conditional appends to (its length is known only when the graph runs, so it cannot be
 * a JS array). The ops that take an array of tensors (stack, concat) take such a sequence as the
 * array of its elements, the ops that take a tensor-like take it as the tensor its elements make
 * (as they take an array of numbers), and a staged function returning one returns that tensor.
 * The protocol lives here so that ops and staging recognise sequences without importing AutoGraph.
 */
import type { Tensor } from "./tensor.js";
import type { DType } from "./dtype.js";

/** The method a sequence answers with its elements stacked along a new leading axis. */
export const STACKED: unique symbol = Symbol("stagecraft.stackedSequence");

export interface StackedSequence {
  /**
   * The elements stacked (shape [length, ...element shape]) in the dtype an array of them would
   * make: as given, or `dtype`. With `nonEmptyFor` (the op's name) an empty sequence is that
   * op's ValueError, raised when the graph runs if the length is known only then.
   */
  [STACKED](dtype?: DType, nonEmptyFor?: string): Tensor;
}

export function isStackedSequence(x: unknown): x is StackedSequence {
  return x !== null && typeof x === "object" && typeof (x as Partial<StackedSequence>)[STACKED] === "function";
}
