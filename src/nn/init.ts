/**
 * Seeded initializers. An initializer makes a weight's starting value from its shape, dtype and
 * fans (fan-in: inputs per output unit; fan-out: outputs per input unit). With a `seed` the
 * draw is reproducible; without one it takes the next key of the global generator
 * (`sc.random.setSeed` makes a whole model reproducible).
 */
import type { DType } from "../core/dtype.js";
import { ValueError } from "../core/errors.js";
import { checkOptions } from "../core/options.js";
import type { Tensor } from "../core/tensor.js";
import { full } from "../ops/fill.js";
import { normal as randomNormal, uniform as randomUniform } from "../ops/random.js";

export interface Fans {
  fanIn: number;
  fanOut: number;
}

export type Initializer = (shape: number[], dtype: DType, fans: Fans) => Tensor;

export interface SeedOption {
  /** Seed of this initializer's draw (each call with the same seed draws the same values). */
  seed?: number;
}

function draw(seed: number | undefined) {
  return seed === undefined ? {} : { seed };
}

/** All zeros. */
export const zeros = (): Initializer => (shape, dtype) => full(shape, 0, dtype);
/** All ones. */
export const ones = (): Initializer => (shape, dtype) => full(shape, 1, dtype);
/** A constant. */
export const constant = (value: number): Initializer => (shape, dtype) => full(shape, value, dtype);

/** Normal(mean, stddev). */
export function normal(o: SeedOption & { mean?: number; stddev?: number } = {}): Initializer {
  checkOptions("init.normal", o, ["seed", "mean", "stddev"]);
  return (shape, dtype) => randomNormal(shape, { dtype, mean: o.mean ?? 0, stddev: o.stddev ?? 0.05, ...draw(o.seed) });
}

/** Uniform(minval, maxval). */
export function uniform(o: SeedOption & { minval?: number; maxval?: number } = {}): Initializer {
  checkOptions("init.uniform", o, ["seed", "minval", "maxval"]);
  return (shape, dtype) => randomUniform(shape, { dtype, minval: o.minval ?? -0.05, maxval: o.maxval ?? 0.05, ...draw(o.seed) });
}

function scaled(kind: "uniform" | "normal", scale: (f: Fans) => number, o: SeedOption, name: string): Initializer {
  checkOptions(`init.${name}`, o, ["seed"]);
  return (shape, dtype, fans) => {
    if (!(fans.fanIn > 0) || !(fans.fanOut > 0)) throw new ValueError(`needs positive fans, got fan-in ${fans.fanIn}, fan-out ${fans.fanOut}`, name);
    const variance = scale(fans);
    if (kind === "normal") return randomNormal(shape, { dtype, stddev: Math.sqrt(variance), ...draw(o.seed) });
    const limit = Math.sqrt(3 * variance);
    return randomUniform(shape, { dtype, minval: -limit, maxval: limit, ...draw(o.seed) });
  };
}

/** Glorot (Xavier) uniform: U(-l, l), l = sqrt(6 / (fanIn + fanOut)). */
export const glorotUniform = (o: SeedOption = {}): Initializer => scaled("uniform", (f) => 2 / (f.fanIn + f.fanOut), o, "glorotUniform");
/** Glorot (Xavier) normal: N(0, 2 / (fanIn + fanOut)). */
export const glorotNormal = (o: SeedOption = {}): Initializer => scaled("normal", (f) => 2 / (f.fanIn + f.fanOut), o, "glorotNormal");
/** He (Kaiming) normal, for ReLU networks: N(0, 2 / fanIn). */
export const heNormal = (o: SeedOption = {}): Initializer => scaled("normal", (f) => 2 / f.fanIn, o, "heNormal");
/** He (Kaiming) uniform: U(-l, l), l = sqrt(6 / fanIn). */
export const heUniform = (o: SeedOption = {}): Initializer => scaled("uniform", (f) => 2 / f.fanIn, o, "heUniform");
/** LeCun normal: N(0, 1 / fanIn). */
export const lecunNormal = (o: SeedOption = {}): Initializer => scaled("normal", (f) => 1 / f.fanIn, o, "lecunNormal");
