/** Embedding: a lookup table of vectors indexed by integer ids. */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { DtypeError } from "../../core/errors.js";
import { gather } from "../../ops/shape.js";
import { normal } from "../init.js";
import { Module } from "../module.js";
import { positiveInt, checkLayerOptions } from "./options.js";
import type { Initializer } from "../init.js";
import type { DType } from "../../core/dtype.js";
import { recordConfig } from "../layer-config.js";

export interface EmbeddingOptions {
  dtype?: DType;
  seed?: number;
  /** Default N(0, 1), as PyTorch. */
  init?: Initializer;
}

/** ids [...] (int32/int64) -> vectors [..., dim]; the table `weight` is [count, dim]. */
export class Embedding extends Module {
  readonly count: number;
  readonly dim: number;
  weight: Variable;

  constructor(count: number, dim: number, options: EmbeddingOptions = {}) {
    super();
    recordConfig(this, Embedding, [count, dim, options]);
    checkLayerOptions("Embedding", options, ["dtype", "seed", "init"]);
    this.count = positiveInt("Embedding", "count", count);
    this.dim = positiveInt("Embedding", "dim", dim);
    const init = options.init ?? normal({ stddev: 1, ...(options.seed === undefined ? {} : { seed: options.seed }) });
    this.weight = this.addWeight("weight", [count, dim], init, { dtype: options.dtype });
  }

  forward(ids: Tensor): Tensor {
    if (ids.dtype !== "int32" && ids.dtype !== "int64") throw new DtypeError(`ids must be int32 or int64, got ${ids.dtype}`, "Embedding");
    return gather(this.weight, ids, 0);
  }
}
