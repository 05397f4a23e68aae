/** Linear (dense) layers, Flatten, and activations as modules. */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { add } from "../../ops/binary.js";
import { matmul } from "../../ops/linalg.js";
import { reshape } from "../../ops/shape.js";
import { gelu, relu, sigmoid, tanh } from "../../ops/unary.js";
import { logSoftmax, softmax } from "../../ops/nn.js";
import { Module } from "../module.js";
import { axisSize, biasInitOf, kernelInitOf, positiveInt, WEIGHT_KEYS, type WeightOptions, checkLayerOptions } from "./options.js";
import { recordConfig } from "../layer-config.js";

export interface LinearOptions extends WeightOptions {
  /** Input features; without it they are read from the first input (the layer builds lazily). */
  inFeatures?: number;
}

/** y = x W + b over the last axis: W is [inFeatures, units], b is [units]. */
export class Linear extends Module {
  readonly units: number;
  inFeatures: number | undefined;
  kernel!: Variable;
  bias: Variable | null = null;
  private readonly options: LinearOptions;

  constructor(units: number, options: LinearOptions = {}) {
    super();
    recordConfig(this, Linear, [units, options]);
    checkLayerOptions("Linear", options, [...WEIGHT_KEYS, "inFeatures"]);
    this.units = positiveInt("Linear", "units", units);
    this.options = options;
    this.inFeatures = options.inFeatures === undefined ? undefined : positiveInt("Linear", "inFeatures", options.inFeatures);
    if (this.inFeatures !== undefined) this.makeWeights(this.inFeatures);
  }

  private makeWeights(inFeatures: number): void {
    const o = this.options;
    this.kernel = this.addWeight("kernel", [inFeatures, this.units], kernelInitOf(o), { dtype: o.dtype });
    if (o.bias !== false) this.bias = this.addWeight("bias", [this.units], biasInitOf(o), { dtype: o.dtype, fanIn: inFeatures, fanOut: this.units });
  }

  protected override build(x: Tensor): void {
    if (this.inFeatures === undefined) {
      this.inFeatures = axisSize("Linear", x, -1, "features", undefined, "the inFeatures option");
      this.makeWeights(this.inFeatures);
    }
  }

  forward(x: Tensor): Tensor {
    axisSize("Linear", x, -1, "features", this.inFeatures);
    const y = matmul(x, this.kernel);
    return this.bias ? add(y, this.bias) : y;
  }
}

/** Flattens every axis after the first: [N, ...] -> [N, prod(...)]. */
export class Flatten extends Module {
  constructor() {
    super();
    recordConfig(this, Flatten, []);
  }
  forward(x: Tensor): Tensor {
    const rest = x.shape.slice(1).reduce((a, b) => a * b, 1);
    return reshape(x, [x.shape[0]! < 0 ? -1 : x.shape[0]!, x.shape.slice(1).some((d) => d < 0) ? -1 : rest]);
  }
}

/** An elementwise function as a module (for Sequential). */
export class Activation extends Module {
  constructor(
    readonly fn: (x: Tensor) => Tensor,
    readonly label: string = fn.name || "Activation",
  ) {
    super();
  }
  forward(x: Tensor): Tensor {
    return this.fn(x);
  }
  override get typeName(): string {
    return this.label;
  }
}

export class ReLU extends Activation {
  constructor() {
    super(relu, "ReLU");
    recordConfig(this, ReLU, []);
  }
}
export class Tanh extends Activation {
  constructor() {
    super(tanh, "Tanh");
    recordConfig(this, Tanh, []);
  }
}
export class Sigmoid extends Activation {
  constructor() {
    super(sigmoid, "Sigmoid");
    recordConfig(this, Sigmoid, []);
  }
}
export class GELU extends Activation {
  constructor() {
    super(gelu, "GELU");
    recordConfig(this, GELU, []);
  }
}
export class Softmax extends Activation {
  constructor(axis = -1) {
    super((x) => softmax(x, axis), "Softmax");
    recordConfig(this, Softmax, [axis]);
  }
}
export class LogSoftmax extends Activation {
  constructor(axis = -1) {
    super((x) => logSoftmax(x, axis), "LogSoftmax");
    recordConfig(this, LogSoftmax, [axis]);
  }
}
