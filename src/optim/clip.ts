/** Gradient clipping by global norm (Pascanu et al. 2013; TensorFlow's clip_by_global_norm). */
import { ValueError } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import { add, div, maximum, mul } from "../ops/binary.js";
import { cast } from "../ops/cast.js";
import { scalar } from "../ops/creation.js";
import { sum } from "../ops/reduce.js";
import { sqrt, square } from "../ops/unary.js";

/**
 * Scales every gradient by `maxNorm / max(norm, maxNorm)`, where `norm` is the L2 norm of all
 * gradients together (computed in float64). Returns the scaled gradients (nulls kept) and the
 * norm before clipping. Written with ops, so it stages.
 */
export function clipByGlobalNorm(grads: readonly (Tensor | null)[], maxNorm: number): [(Tensor | null)[], Tensor] {
  if (typeof maxNorm !== "number" || !(maxNorm > 0) || !Number.isFinite(maxNorm)) {
    throw new ValueError(`maxNorm must be a finite number > 0, got ${String(maxNorm)}`, "clipByGlobalNorm");
  }
  let total: Tensor = scalar(0, "float64");
  for (const g of grads) if (g) total = add(total, sum(square(cast(g, "float64"))));
  const norm = sqrt(total);
  const scale = div(maxNorm, maximum(norm, maxNorm));
  return [grads.map((g) => (g ? mul(g, cast(scale, g.dtype)) : null)), norm];
}
