/** The public random API (sc.random): keys, seeding and draws (ops/random.ts). */
export { PRNGKey, key, split, setSeed, uniform, normal, bernoulli, categorical, type DrawOptions } from "../ops/random.js";
