/** The public random API (sc.random): keys, generators, seeding and draws (ops/random.ts). */
export {
  key, split, foldIn, Generator, globalGenerator, setSeed, uniform, normal, bernoulli, categorical,
  type GeneratorOptions, type DrawOptions, type UniformOptions, type NormalOptions,
} from "../ops/random.js";
