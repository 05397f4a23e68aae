/**
 * Dropout (Srivastava et al.), seeded. In train mode each element is zeroed with probability
 * `rate` and the rest are scaled by 1 / (1 - rate); in eval mode the input passes through.
 *
 * The mask must be fresh on every call, also when the layer runs inside `sc.stage` (a random
 * op's key is fixed when the graph is traced). So the layer keeps a call counter as a Variable
 * (part of checkpoints), and the mask is a pure function of (seed, counter) drawn by a host call
 * when the graph runs; the staged step increments the counter. The same seed gives the same
 * sequence of masks eagerly and staged.
 * TODO(misc): draw from the random Generator with Variable state once ops/random.ts has it.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { add, div, mul } from "../../ops/binary.js";
import { cast } from "../../ops/cast.js";
import { scalar } from "../../ops/creation.js";
import { stopGradient } from "../../ops/identity.js";
import { key, PRNGKey, uniform } from "../../ops/random.js";
import { less } from "../../ops/compare.js";
import { hostCall } from "../../staging/host.js";
import { spec } from "../../staging/signature.js";
import { constant } from "../init.js";
import { Module } from "../module.js";
import { checkKeys } from "./options.js";

export interface DropoutOptions {
  /** Seed of the mask sequence (default: drawn from the global generator when the layer is made). */
  seed?: number;
}

/** The keep-mask (1 = keep) for call number `counter` of a layer seeded with `seed`. */
function keepMask(shape: number[], dtype: Tensor["dtype"], rate: number, seed: number, counter: number): Tensor {
  const a = key(seed);
  const b = key(counter);
  const k = new PRNGKey((a.k0 ^ b.k0) >>> 0, (a.k1 ^ b.k1) >>> 0);
  return cast(less(uniform(shape, { key: k, dtype: dtype === "float64" ? "float64" : "float32" }), 1 - rate), dtype);
}

export class Dropout extends Module {
  readonly rate: number;
  readonly seed: number;
  /** How many masks the layer has drawn (int32 Variable, not trainable). */
  calls: Variable;

  constructor(rate: number, options: DropoutOptions = {}) {
    super();
    checkKeys("Dropout", options, ["seed"]);
    if (typeof rate !== "number" || !(rate >= 0 && rate < 1)) throw new ValueError(`rate must be in [0, 1), got ${String(rate)}`, "Dropout");
    this.rate = rate;
    this.seed = options.seed ?? Math.floor((uniform([], { dtype: "float64" }).item() as number) * 2 ** 31);
    if (!Number.isInteger(this.seed)) throw new ValueError(`seed must be an integer, got ${this.seed}`, "Dropout");
    this.calls = this.addWeight("calls", [], constant(0), { dtype: "int32", trainable: false });
  }

  forward(x: Tensor): Tensor {
    if (!this.training || this.rate === 0) return x;
    const { rate, seed } = this;
    const counter = this.calls.peek();
    const draw = (xc: Tensor, c: Tensor) => keepMask(xc.shape.slice(), xc.dtype, rate, seed, c.item() as number);
    const mask = hostCall(draw, spec(x.shape.map((d) => (d < 0 ? null : d)), x.dtype), stopGradient(x), counter) as Tensor;
    this.calls.assign(add(counter, scalar(1, "int32")));
    return mul(x, div(stopGradient(mask), 1 - rate));
  }
}
