/** Sequential: modules applied in order, each to the previous one's output. */
import { ValueError } from "../../core/errors.js";
import { Module } from "../module.js";
import { recordConfig } from "../layer-config.js";

export class Sequential extends Module {
  readonly layers: Module[];

  constructor(...layers: Module[]) {
    super();
    recordConfig(this, Sequential, layers);
    layers.forEach((l, i) => {
      if (!(l instanceof Module)) throw new ValueError(`layer ${i} is ${typeof l}, expected an nn.Module`, "Sequential");
    });
    this.layers = layers;
  }

  forward(x: unknown): any {
    let h = x;
    for (const l of this.layers) h = l.call(h);
    return h;
  }
}
