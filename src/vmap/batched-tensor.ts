/** A value of one vmap level: the whole batch in `value`, its batch axis `dim`. */
import type { OpHandler } from "../core/context.js";
import { Tensor } from "../core/tensor.js";

/** What a batched value knows of its level (vmap/level.ts). */
export interface BatchLevel extends OpHandler {
  /** The handler the level's rules run under: the one current at vmap's call, or, inside a region traced below it, that region. */
  outer: OpHandler;
  readonly size: number;
  /**
   * How many branches or loop bodies that run for every example whatever its predicate (a
   * batched cond's, a masked loop's) are running now: a variable assigned there would be
   * assigned for the examples that did not take that path too.
   */
  everyExample: number;
}

/** A value of one vmap level: `value` holds every example, along axis `dim`. */
export class BatchedTensor extends Tensor {
  constructor(
    readonly value: Tensor,
    readonly dim: number,
    readonly level: BatchLevel,
  ) {
    super(null, value.shape.filter((_, i) => i !== dim), value.dtype, value.device);
  }
}

export const isBatchedAt = (t: unknown, level: BatchLevel): t is BatchedTensor => t instanceof BatchedTensor && t.level === level;
