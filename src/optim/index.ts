/** Optimizers: `sc.optim.SGD`, `sc.optim.Adam` (and the factories sgd/adam/adamw). See optimizer.ts for the API. */
export { Optimizer, type LearningRate, type GradientPair, type OptimizerOptions } from "./optimizer.js";
export { SGD, sgd, type SGDOptions } from "./sgd.js";
export { Adam, adam, adamw, type AdamOptions } from "./adam.js";
