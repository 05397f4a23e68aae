/** Multi-head scaled dot-product attention (Vaswani et al.). */
import type { Tensor } from "../../core/tensor.js";
import { DtypeError, ValueError } from "../../core/errors.js";
import { div } from "../../ops/binary.js";
import { matmul } from "../../ops/linalg.js";
import { softmax } from "../../ops/nn.js";
import { concat, expandDims, reshape, slice, split, stack, transpose, unstack } from "../../ops/shape.js";
import { greaterEqual, logicalAnd } from "../../ops/compare.js";
import { cumsum } from "../../ops/reduce.js";
import { onesLikeTensor } from "../../ops/fill.js";
import { where } from "../../ops/where.js";
import { Module } from "../module.js";
import { Linear } from "./linear.js";
import { axisSize, positiveInt, WEIGHT_KEYS, type WeightOptions, checkLayerOptions } from "./options.js";
import { recordConfig } from "../layer-config.js";

export interface AttentionOptions extends WeightOptions {}

/**
 * `call(query, key, value, mask?)`: query [batch, tq, embed], key and value [batch, tk, embed]
 * -> [batch, tq, embed]. Each of `heads` heads attends with softmax(q k^T / sqrt(d)) over its
 * d = embed / heads columns of the projected q, k, v; the heads are concatenated and projected
 * again. `mask` (bool, broadcastable to [batch, heads, tq, tk]) is true where attention is allowed;
 * `keyMask` (bool [batch, tk]) is true at the real keys and false at padding (the opposite sign
 * of PyTorch's key_padding_mask, the same as Keras's masks); `causal` lets query i attend to keys
 * 0..i only. The masks combine (a position must be allowed by each).
 */
export class MultiHeadAttention extends Module {
  readonly embed: number;
  readonly heads: number;
  readonly query: Linear;
  readonly key: Linear;
  readonly value: Linear;
  readonly output: Linear;

  constructor(embed: number, heads: number, options: AttentionOptions = {}) {
    super();
    recordConfig(this, MultiHeadAttention, [embed, heads, options]);
    checkLayerOptions("MultiHeadAttention", options, WEIGHT_KEYS);
    this.embed = positiveInt("MultiHeadAttention", "embed", embed);
    this.heads = positiveInt("MultiHeadAttention", "heads", heads);
    if (embed % heads !== 0) throw new ValueError(`embed (${embed}) must be divisible by heads (${heads})`, "MultiHeadAttention");
    const seeded = (k: number) => ({ ...options, inFeatures: embed, ...(options.seed === undefined ? {} : { seed: options.seed + k }) });
    this.query = new Linear(embed, seeded(0));
    this.key = new Linear(embed, seeded(1));
    this.value = new Linear(embed, seeded(2));
    this.output = new Linear(embed, seeded(3));
  }

  /**
   * [batch, t, embed] -> [batch, heads, t, d]. batch and t may be unknown while staging (-1):
   * with at most one of them unknown a reshape infers it; with both, the heads are split off the
   * embedding axis and stacked (a reshape can infer only one size).
   */
  private splitHeads(x: Tensor): Tensor {
    const [batch, t] = x.shape as [number, number, number];
    if (batch < 0 && t < 0) return stack(split(x, this.heads, -1), 1);
    return transpose(reshape(x, [batch, t, this.heads, this.embed / this.heads]), [0, 2, 1, 3]);
  }

  /** [batch, heads, t, d] -> [batch, t, embed], the inverse of splitHeads. */
  private mergeHeads(x: Tensor): Tensor {
    const [batch, , t] = x.shape as [number, number, number, number];
    if (batch < 0 && t < 0) return concat(unstack(x, 1), -1);
    return reshape(transpose(x, [0, 2, 1, 3]), [batch, t, this.embed]);
  }

  forward(query: Tensor, key: Tensor = query, value: Tensor = key, mask?: Tensor, keyMask?: Tensor, causal = false): Tensor {
    const name = "MultiHeadAttention";
    for (const [what, x] of [["query", query], ["key", key], ["value", value]] as const) {
      if (x.rank !== 3) throw new ValueError(`${what} must be [batch, time, embed], got shape [${x.shape.join(", ")}]`, name);
      axisSize(name, x, 2, "embedding features", this.embed);
    }
    const q = this.splitHeads(this.query.call(query) as Tensor);
    const k = this.splitHeads(this.key.call(key) as Tensor);
    const v = this.splitHeads(this.value.call(value) as Tensor);
    let scores = div(matmul(q, k, { transposeB: true }), Math.sqrt(this.embed / this.heads));
    let allowed: Tensor | undefined;
    if (mask !== undefined && mask !== null) {
      if (mask.dtype !== "bool") throw new DtypeError(`mask must be bool (true = attend), got ${mask.dtype}`, name);
      allowed = mask;
    }
    if (keyMask !== undefined && keyMask !== null) {
      if (keyMask.dtype !== "bool") throw new DtypeError(`keyMask must be bool (true = a real key, false = padding), got ${keyMask.dtype}`, name);
      if (keyMask.rank !== 2) throw new ValueError(`keyMask must be [batch, keyTime], got shape [${keyMask.shape.join(", ")}]`, name);
      // [batch, tk] -> [batch, 1, 1, tk] (expandDims: batch and tk may both be unknown)
      const km = expandDims(expandDims(keyMask, 1), 1);
      allowed = allowed === undefined ? km : logicalAnd(allowed, km);
    }
    if (causal) {
      const c = causalMask(slice(scores, [0, 0, 0, 0], [1, 1, null, null]));
      allowed = allowed === undefined ? c : logicalAnd(allowed, c);
    }
    if (allowed !== undefined) scores = where(allowed, scores, -1e9);
    const attended = matmul(softmax(scores, -1), v);
    return this.output.call(this.mergeHeads(attended));
  }
}

/**
 * The lower-triangular (query index >= key index) bool mask shaped like `like` [..., tq, tk],
 * from running counts along its last two axes (so it works when tq and tk are known only when a
 * staged graph runs, and exports as ONNX CumSum).
 */
export function causalMask(like: Tensor): Tensor {
  const one = onesLikeTensor(like, "int32");
  return greaterEqual(cumsum(one, like.rank - 2), cumsum(one, like.rank - 1));
}
