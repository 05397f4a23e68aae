/**
 * Transformer encoder and decoder layers (Vaswani et al.), with PyTorch's semantics
 * (nn.TransformerEncoderLayer / nn.TransformerDecoderLayer with batch_first=True: inputs are
 * [batch, time, dModel]).
 */
import type { Tensor } from "../../core/tensor.js";
import type { DType } from "../../core/dtype.js";
import { ValueError } from "../../core/errors.js";
import { checkChoice, checkOptions } from "../../core/options.js";
import { add } from "../../ops/binary.js";
import { gelu, relu } from "../../ops/unary.js";
import { Module } from "../module.js";
import { MultiHeadAttention } from "./attention.js";
import { Dropout } from "./dropout.js";
import { Linear } from "./linear.js";
import { LayerNorm } from "./normalization.js";
import { checkLayerOptions, positiveInt } from "./options.js";
import { recordConfig } from "../layer-config.js";

export interface TransformerLayerOptions {
  /** Width of the feed-forward block (default 2048, PyTorch's). */
  dimFeedforward?: number;
  /** Dropout rate after attention, inside and after the feed-forward block (default 0.1, PyTorch's). */
  dropout?: number;
  /** The feed-forward activation: "relu" (default) or "gelu". */
  activation?: "relu" | "gelu";
  /** LayerNorm before each block (pre-norm) rather than after the residual sum (default false, PyTorch's norm_first). */
  normFirst?: boolean;
  /** The LayerNorms' epsilon (default 1e-5). */
  layerNormEps?: number;
  /** Biases in the linear layers (default true). */
  bias?: boolean;
  /** dtype of the weights (default float32). */
  dtype?: DType;
  /** Seed of the initializers and the dropout masks. */
  seed?: number;
}

export interface TransformerDecoderLayerOptions extends TransformerLayerOptions {
  /** Mask the self-attention causally (step i sees steps 0..i; default false: give tgtMask instead). */
  causal?: boolean;
}

const LAYER_KEYS = ["dimFeedforward", "dropout", "activation", "normFirst", "layerNormEps", "bias", "dtype", "seed"];

/** The shared parts: checked options, the feed-forward block, and dropouts. */
abstract class TransformerBlock extends Module {
  readonly dModel: number;
  readonly nHead: number;
  readonly dimFeedforward: number;
  readonly normFirst: boolean;
  readonly activation: "relu" | "gelu";
  readonly linear1: Linear;
  readonly linear2: Linear;
  readonly dropoutFF: Dropout;
  readonly dropoutOut: Dropout;
  protected readonly o: TransformerLayerOptions;

  constructor(layer: string, dModel: number, nHead: number, options: TransformerLayerOptions, keys: string[]) {
    super();
    checkLayerOptions(layer, options, keys);
    this.dModel = positiveInt(layer, "dModel", dModel);
    this.nHead = positiveInt(layer, "nHead", nHead);
    if (dModel % nHead !== 0) throw new ValueError(`dModel (${dModel}) must be divisible by nHead (${nHead})`, layer);
    this.dimFeedforward = positiveInt(layer, "dimFeedforward", options.dimFeedforward ?? 2048);
    this.activation = checkChoice(layer, "activation", options.activation, ["relu", "gelu"] as const) ?? "relu";
    this.normFirst = options.normFirst ?? false;
    if (typeof this.normFirst !== "boolean") throw new ValueError(`normFirst must be a boolean, got ${String(options.normFirst)}`, layer);
    this.o = options;
    this.linear1 = new Linear(this.dimFeedforward, this.sub(0, { inFeatures: dModel }));
    this.linear2 = new Linear(dModel, this.sub(1, { inFeatures: this.dimFeedforward }));
    this.dropoutFF = this.dropoutLayer(0);
    this.dropoutOut = this.dropoutLayer(1);
  }

  /** Options of sub-layer k: the weights' dtype, bias and seed + k. */
  protected sub<T extends object>(k: number, extra: T): T & { dtype?: DType; bias?: boolean; seed?: number } {
    const o = this.o;
    return { ...extra, ...(o.dtype === undefined ? {} : { dtype: o.dtype }), ...(o.bias === undefined ? {} : { bias: o.bias }), ...(o.seed === undefined ? {} : { seed: o.seed + 10 * k }) };
  }

  protected dropoutLayer(k: number): Dropout {
    const seed = this.o.seed;
    return new Dropout(this.o.dropout ?? 0.1, seed === undefined ? {} : { seed: seed + 1000 + k });
  }

  protected norm(): LayerNorm {
    return new LayerNorm(this.dModel, { epsilon: this.o.layerNormEps ?? 1e-5, ...(this.o.dtype === undefined ? {} : { dtype: this.o.dtype }) });
  }

  protected feedForward(x: Tensor): Tensor {
    const h = this.linear1.call(x) as Tensor;
    const act = this.activation === "gelu" ? gelu(h) : relu(h);
    return this.dropoutOut.call(this.linear2.call(this.dropoutFF.call(act))) as Tensor;
  }

  protected checkInput(what: string, x: Tensor): void {
    if (x.rank !== 3 || (x.shape[2]! >= 0 && x.shape[2] !== this.dModel)) {
      throw new ValueError(`${what} must be [batch, time, ${this.dModel}], got shape [${x.shape.join(", ")}]`, this.typeName);
    }
  }

  protected attention(k: number): MultiHeadAttention {
    return new MultiHeadAttention(this.dModel, this.nHead, this.sub(2 + k, {}));
  }
}

/**
 * `call(src, mask?, keyMask?)`: src [batch, time, dModel] -> the same shape. Self-attention then
 * a feed-forward block, each with dropout, a residual sum and a LayerNorm (after the sum, or
 * before the block with normFirst). `mask` and `keyMask` are MultiHeadAttention's (true = attend).
 */
export class TransformerEncoderLayer extends TransformerBlock {
  readonly selfAttention: MultiHeadAttention;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  readonly dropoutAttention: Dropout;

  constructor(dModel: number, nHead: number, options: TransformerLayerOptions = {}) {
    super("TransformerEncoderLayer", dModel, nHead, options, LAYER_KEYS);
    recordConfig(this, TransformerEncoderLayer, [dModel, nHead, options]);
    this.selfAttention = this.attention(0);
    this.norm1 = this.norm();
    this.norm2 = this.norm();
    this.dropoutAttention = this.dropoutLayer(2);
  }

  forward(src: Tensor, mask?: Tensor, keyMask?: Tensor): Tensor {
    this.checkInput("src", src);
    const sa = (x: Tensor) => this.dropoutAttention.call(this.selfAttention.call(x, x, x, mask, keyMask)) as Tensor;
    const n1 = (x: Tensor) => this.norm1.call(x) as Tensor;
    const n2 = (x: Tensor) => this.norm2.call(x) as Tensor;
    if (this.normFirst) {
      const x = add(src, sa(n1(src)));
      return add(x, this.feedForward(n2(x)));
    }
    const x = n1(add(src, sa(src)));
    return n2(add(x, this.feedForward(x)));
  }
}

/** The masks of a decoder layer's call (each bool, true = attend; MultiHeadAttention's). */
export interface DecoderMasks {
  tgtMask?: Tensor;
  memoryMask?: Tensor;
  tgtKeyMask?: Tensor;
  memoryKeyMask?: Tensor;
}

/**
 * `call(tgt, memory, masks?)`: tgt [batch, tTgt, dModel], memory [batch, tSrc, dModel] (the
 * encoder's output) -> [batch, tTgt, dModel]. Self-attention over tgt (causal with the causal
 * option), cross-attention to memory, then a feed-forward block; each with dropout, a residual
 * sum and a LayerNorm (after the sum, or before the block with normFirst).
 */
export class TransformerDecoderLayer extends TransformerBlock {
  readonly causal: boolean;
  readonly selfAttention: MultiHeadAttention;
  readonly crossAttention: MultiHeadAttention;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  readonly norm3: LayerNorm;
  readonly dropoutSelf: Dropout;
  readonly dropoutCross: Dropout;

  constructor(dModel: number, nHead: number, options: TransformerDecoderLayerOptions = {}) {
    super("TransformerDecoderLayer", dModel, nHead, options, [...LAYER_KEYS, "causal"]);
    recordConfig(this, TransformerDecoderLayer, [dModel, nHead, options]);
    this.causal = options.causal ?? false;
    if (typeof this.causal !== "boolean") throw new ValueError(`causal must be a boolean, got ${String(options.causal)}`, "TransformerDecoderLayer");
    this.selfAttention = this.attention(0);
    this.crossAttention = this.attention(1);
    this.norm1 = this.norm();
    this.norm2 = this.norm();
    this.norm3 = this.norm();
    this.dropoutSelf = this.dropoutLayer(2);
    this.dropoutCross = this.dropoutLayer(3);
  }

  forward(tgt: Tensor, memory: Tensor, masks: DecoderMasks = {}): Tensor {
    checkOptions("TransformerDecoderLayer.call", masks, ["tgtMask", "memoryMask", "tgtKeyMask", "memoryKeyMask"]);
    this.checkInput("tgt", tgt);
    this.checkInput("memory", memory);
    const sa = (x: Tensor) => this.dropoutSelf.call(this.selfAttention.call(x, x, x, masks.tgtMask, masks.tgtKeyMask, this.causal)) as Tensor;
    const ca = (x: Tensor) => this.dropoutCross.call(this.crossAttention.call(x, memory, memory, masks.memoryMask, masks.memoryKeyMask)) as Tensor;
    const n = [this.norm1, this.norm2, this.norm3].map((m) => (x: Tensor) => m.call(x) as Tensor) as [(x: Tensor) => Tensor, (x: Tensor) => Tensor, (x: Tensor) => Tensor];
    if (this.normFirst) {
      let x = add(tgt, sa(n[0](tgt)));
      x = add(x, ca(n[1](x)));
      return add(x, this.feedForward(n[2](x)));
    }
    let x = n[0](add(tgt, sa(tgt)));
    x = n[1](add(x, ca(x)));
    return n[2](add(x, this.feedForward(x)));
  }
}
