/**
 * Dropout (Srivastava et al.), seeded. In train mode each element is zeroed with probability
 * `rate` and the rest are scaled by 1 / (1 - rate); in eval mode the input passes through.
 *
 * The mask must be fresh on every call, also when the layer runs inside `sc.stage`: the layer
 * draws it from its own random Generator, whose state is a Variable the graph advances on each
 * call (and which checkpoints save, as `randomState`). The same seed gives the same sequence of
 * masks eagerly and staged.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { dropout, Generator } from "../../ops/random.js";
import { checkOptions, optionKeys } from "../../core/options.js";
import { Module } from "../module.js";
import { recordConfig } from "../layer-config.js";

export interface DropoutOptions {
  /** Seed of the mask sequence (default: a seed from the operating system). */
  seed?: number;
}

export class Dropout extends Module {
  readonly rate: number;
  /** The generator of the masks (its state is `randomState`). */
  readonly generator: Generator;
  /** The generator's state (int32 Variable, not trainable): tracked, so checkpoints keep the mask sequence. */
  readonly randomState: Variable;

  constructor(rate: number, options: DropoutOptions = {}) {
    super();
    recordConfig(this, Dropout, [rate, options]);
    checkOptions("Dropout", options, optionKeys<DropoutOptions>()("seed"));
    if (typeof rate !== "number" || !(rate >= 0 && rate < 1)) throw new ValueError(`rate must be in [0, 1), got ${String(rate)}`, "Dropout");
    this.rate = rate;
    this.generator = new Generator(options.seed === undefined ? { name: "dropout" } : { seed: options.seed, name: "dropout" });
    this.randomState = this.generator.state;
  }

  forward(x: Tensor): Tensor {
    if (!this.training || this.rate === 0) return x;
    return dropout(x, this.rate, { generator: this.generator })[0];
  }
}
