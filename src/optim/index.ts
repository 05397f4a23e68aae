/**
 * Optimizers (`sc.optim`): SGD, Adam, AdamW, RMSprop, Adagrad, clipping by global norm, and
 * learning-rate schedules. All state is Variables, so optimizers work the same eagerly and
 * inside `sc.stage`. See optimizer.ts for the API.
 */
export { Optimizer, type GradientPair, type OptimizerOptions, type StepValues } from "./optimizer.js";
export { SGD, sgd, type SGDOptions } from "./sgd.js";
export { Adam, AdamW, adam, adamw, type AdamOptions } from "./adam.js";
export { RMSprop, rmsprop, type RMSpropOptions } from "./rmsprop.js";
export { Adagrad, adagrad, type AdagradOptions } from "./adagrad.js";
export { clipByGlobalNorm } from "./clip.js";
export {
  constant,
  stepDecay,
  exponentialDecay,
  cosineDecay,
  scheduleValue,
  type Schedule,
  type LearningRate,
  type StepDecayOptions,
  type ExponentialDecayOptions,
  type CosineDecayOptions,
} from "./schedules.js";
