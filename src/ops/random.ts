/**
 * Seeded random numbers. Every draw is a pure function of a key and an element index (a
 * counter-based generator, backends/cpu/counter-rng.ts), so results are reproducible from a
 * seed or key and do not depend on evaluation order; the same key gives the same numbers eager
 * and staged.
 *
 * Where a draw's key comes from:
 * - `key`: a key tensor (random-keys.ts: `random.key(seed)`, `split`, `foldIn`). A key passed to
 *   a staged function is an argument like any tensor: a new key is a new call, not a new trace.
 * - `seed`: the key of that seed: the same numbers on every call (staged too), by request.
 * - `generator`, or by default the global generator: a `Generator`'s state is a Variable, and
 *   each draw reads it, takes its next key and writes the state back; staged, that is a
 *   variable read and assignment in the graph, so a staged function draws fresh numbers on
 *   every call and continues the stream eager draws use. `random.setSeed(seed)` resets the
 *   global generator (seeded from the OS until then).
 */
import { allocStorage, DEFAULT_FLOAT, isFloat, type DType } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { checkShape, fmtShape, sizeOf } from "../core/shape.js";
import { largestBelow } from "../core/float-steps.js";
import { isTracing } from "../core/context.js";
import { Tensor, type TensorLike } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { applyOp, applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { broadcastTo } from "./shape.js";
import { div, mul } from "./binary.js";
import { cast } from "./cast.js";
import { fullLike } from "./creation.js";
import { checkKey, checkKeyType, key as seedKeyTensor, keyWords, randomNextKeyOp } from "./random-keys.js";
import "./variable-updates.js";
import { seedKey, uniform01 } from "../backends/cpu/counter-rng.js";
import { mathGpu } from "../backends/webgpu/op-kernels/math.js";
import { perExample } from "./batching.js";

export { key, split, foldIn } from "./random-keys.js";

// ---------------------------------------------------------------------------------------------
// generators

function initialState(words: readonly [number, number]): Tensor {
  return new Tensor(Int32Array.of(words[0], words[1], 0, 0), [4], "int32");
}

function osSeed(): number {
  const w = crypto.getRandomValues(new Uint32Array(2));
  return w[0]! + (w[1]! & 0x1fffff) * 4294967296;
}

export interface GeneratorOptions {
  /** Start from the key of this seed (default: a seed from the OS). */
  seed?: number;
  /** Start from this key (a concrete key tensor). */
  key?: Tensor;
  /** The name of the state variable. */
  name?: string;
}
const GENERATOR_OPTIONS = optionKeys<GeneratorOptions>()("seed", "key", "name");

/**
 * A random generator whose state is a Variable (as TensorFlow's `tf.random.Generator`): each
 * draw takes the generator's next key and advances its counter, eagerly or as a variable read
 * and assignment in a staged graph, so staged draws are fresh on every call and one generator
 * gives one stream across eager and staged code. Create generators eagerly (or in
 * `sc.initScope`): their state is a variable.
 */
export class Generator {
  /** int32[4]: the key's two words, then the counter (low word, high word). */
  readonly state: Variable;

  constructor(options: GeneratorOptions = {}) {
    checkOptions("random.Generator", options, GENERATOR_OPTIONS);
    if (options.seed !== undefined && options.key !== undefined) throw new ValueError("give a seed or a key, not both", "random.Generator");
    const words = options.key !== undefined ? concreteKeyWords(options.key, "random.Generator") : seedKey(checkSeed(options.seed ?? osSeed(), "random.Generator"));
    this.state = new Variable(initialState(words), { name: options.name ?? "random_generator", trainable: false });
  }

  static fromSeed(seed: number): Generator {
    return new Generator({ seed });
  }

  static fromKey(key: Tensor): Generator {
    return new Generator({ key });
  }

  /** The next key of this generator's stream (advancing its state). */
  nextKey(): Tensor {
    const [state, k] = applyOp(randomNextKeyOp, [this.state.peek()], {});
    this.state.assign(state!);
    return k!;
  }

  /** Restarts the stream from a seed's key (staged: on every call, as eagerly). */
  reset(seed: number): void {
    this.state.assign(initialState(seedKey(checkSeed(seed, "random.Generator.reset"))));
  }

  /** n new generators from this one's next n keys (eager: each has a new state variable). */
  split(n = 2): Generator[] {
    if (!Number.isInteger(n) || n < 1) throw new ValueError(`n must be a positive integer, got ${n}`, "random.Generator.split");
    return Array.from({ length: n }, () => Generator.fromKey(this.nextKey()));
  }

  uniform(shape: number[], options: Omit<UniformOptions, "generator" | "key" | "seed"> = {}): Tensor {
    return uniform(shape, { ...options, generator: this });
  }

  normal(shape: number[], options: Omit<NormalOptions, "generator" | "key" | "seed"> = {}): Tensor {
    return normal(shape, { ...options, generator: this });
  }

  bernoulli(p: TensorLike, shape?: number[]): Tensor {
    return bernoulli(p, shape, { generator: this });
  }

  categorical(logits: TensorLike, numSamples = 1): Tensor {
    return categorical(logits, numSamples, { generator: this });
  }
}

function checkSeed(seed: unknown, op: string): number {
  if (typeof seed !== "number" || !Number.isInteger(seed)) throw new ValueError(`seed must be an integer, got ${String(seed)}`, op);
  return seed;
}

function concreteKeyWords(k: unknown, op: string): [number, number] {
  const t = checkKey(op, k);
  if (t.isSymbolic) throw new ValueError("a generator's key must be concrete (create generators eagerly, or in sc.initScope)", op);
  return keyWords(t);
}

let global: Generator | null = null;

/** The generator draws use when they are given no key, seed or generator. */
export function globalGenerator(): Generator {
  return (global ??= new Generator({ name: "global_random_generator" }));
}

/** Seeds the global generator (staged, the reset happens on every call, as eagerly). */
export function setSeed(seed: number): void {
  globalGenerator().reset(seed);
}

export interface DrawOptions {
  dtype?: DType;
  /** A key tensor for this draw (sc.random.key(seed), split, foldIn). */
  key?: Tensor;
  /** A seed for this draw alone: the same numbers every time. */
  seed?: number;
  /** The generator to take the key from (default: the global generator). */
  generator?: Generator;
}

/** The key tensor of a draw: from `key`, `seed` or a generator (at most one of them). */
function resolveKey(op: string, o: Omit<DrawOptions, "dtype">): Tensor {
  const given = (o.key !== undefined ? 1 : 0) + (o.seed !== undefined ? 1 : 0) + (o.generator !== undefined ? 1 : 0);
  if (given > 1) throw new ValueError("give at most one of key, seed and generator", op);
  if (o.key !== undefined) return checkKey(op, o.key);
  if (o.seed !== undefined) return seedKeyTensor(checkSeed(o.seed, op));
  if (o.generator !== undefined && !(o.generator instanceof Generator)) throw new ValueError(`generator must be a random.Generator, got ${typeof o.generator}`, op);
  return (o.generator ?? globalGenerator()).nextKey();
}

/**
 * Validates a draw's shape. While a function is staged with null inputSignature dimensions,
 * sizes read from tensors are -1 (unknown); a draw needs every size, so that is a clear error.
 */
function drawShape(op: string, shape: number[], hint: string): number[] {
  if (Array.isArray(shape) && isTracing() && shape.some((d) => typeof d === "number" && d < 0)) {
    throw new ShapeError(
      `shape ${fmtShape(shape)} has an unknown (negative) dimension: while a function is staged with null inputSignature dimensions, ` +
        `sizes read from tensors are -1, and ${op} needs every size to draw; ${hint}`,
      op,
    );
  }
  return checkShape(op, shape).slice();
}

const CONCRETE_HINT = "give the inputSignature concrete sizes for those dimensions";

function floatDtype(op: string, d: DType | undefined): DType {
  const dt = d ?? DEFAULT_FLOAT;
  if (!isFloat(dt)) throw new DtypeError(`needs a float dtype, got ${dt}`, op);
  return dt;
}

interface DrawAttrs {
  shape: number[];
  dtype: DType;
}

/** Element i of a draw from key (k0, k1); f64: whether the draw is float64. */
type Sample = (k0: number, k1: number, i: number, f64: boolean) => number;

/** A random op of a key: element i is `sampler(attrs)(k0, k1, i, f64)`, the sampler made once per call from the op's attributes. */
function defineDraw<A extends DrawAttrs>(name: string, sampler: (a: A) => Sample) {
  return defineOp<A>({
    name,
    batch: perExample,
    family: "random",
    inputs: ["key"],
    infer: (inputs, a) => {
      checkKeyType(name, inputs[0]!);
      return [{ shape: a.shape, dtype: a.dtype }];
    },
    kernels: { webgpu: mathGpu[name as keyof typeof mathGpu], cpu(inputs, a) {
      const n = sizeOf(a.shape);
      const out = allocStorage(a.dtype, n);
      const [k0, k1] = keyWords(inputs[0]!);
      const f64 = a.dtype === "float64";
      const sample = sampler(a);
      for (let i = 0; i < n; i++) out[i] = sample(k0, k1, i, f64);
      return [out];
    } },
  });
}

export const randomUniformOp = defineDraw<DrawAttrs & { minval: number; maxval: number }>("randomUniform", (a) => {
  const { minval } = a;
  const span = a.maxval - minval;
  // u < 1, but minval + span * u can still round to maxval in the dtype: keep below it (an empty range is minval)
  const top = a.maxval > minval ? largestBelow(a.maxval, a.dtype) : minval;
  return (k0, k1, i, f64) => {
    const v = minval + span * uniform01(k0, k1, i, f64);
    return v > top ? top : v;
  };
});

// Box-Muller on a pair of draws per output element (indices 2i and 2i + 1).
export const randomNormalOp = defineDraw<DrawAttrs & { mean: number; stddev: number }>("randomNormal", ({ mean, stddev }) => (k0, k1, i, f64) => {
  const u1 = uniform01(k0, k1, 2 * i, f64);
  const u2 = uniform01(k0, k1, 2 * i + 1, f64);
  return mean + stddev * Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
});

export const randomBernoulliOp = defineOp<Record<string, never>>({
  name: "randomBernoulli",
  batch: perExample,
  family: "random",
  inputs: ["p", "key"],
  infer(inputs) {
    if (!isFloat(inputs[0]!.dtype)) throw new DtypeError(`p must be a float tensor, got ${inputs[0]!.dtype}`, "random.bernoulli");
    checkKeyType("random.bernoulli", inputs[1]!);
    return [{ shape: inputs[0]!.shape, dtype: "bool" }];
  },
  kernels: { webgpu: mathGpu.randomBernoulli, cpu(inputs) {
    const p = inputs[0]!.concrete();
    const [k0, k1] = keyWords(inputs[1]!);
    const out = allocStorage("bool", p.length);
    for (let i = 0; i < p.length; i++) out[i] = uniform01(k0, k1, i, true) < p[i]! ? 1 : 0;
    return [out];
  } },
});

interface CategoricalAttrs {
  numSamples: number;
}

export const randomCategoricalOp = defineOp<CategoricalAttrs>({
  name: "randomCategorical",
  batch: perExample,
  family: "random",
  inputs: ["logits", "key"],
  infer(inputs, a) {
    const l = inputs[0]!;
    if (!isFloat(l.dtype)) throw new DtypeError(`logits must be float, got ${l.dtype}`, "random.categorical");
    if (l.shape.length !== 1 && l.shape.length !== 2) {
      throw new ShapeError(`logits must be [classes] or [batch, classes], got shape [${l.shape.join(", ")}]`, "random.categorical");
    }
    checkKeyType("random.categorical", inputs[1]!);
    return [{ shape: l.shape.length === 1 ? [a.numSamples] : [l.shape[0]!, a.numSamples], dtype: "int32" }];
  },
  kernels: { webgpu: mathGpu.randomCategorical, cpu(inputs, a) {
    const l = inputs[0]!;
    const logits = l.concrete();
    const [k0, k1] = keyWords(inputs[1]!);
    const classes = l.shape[l.shape.length - 1]!;
    const batch = l.shape.length === 1 ? 1 : l.shape[0]!;
    const out = allocStorage("int32", batch * a.numSamples);
    const cdf = new Float64Array(classes);
    for (let b = 0; b < batch; b++) {
      let max = -Infinity;
      for (let c = 0; c < classes; c++) max = Math.max(max, logits[b * classes + c]!);
      let total = 0;
      for (let c = 0; c < classes; c++) cdf[c] = total += Math.exp(logits[b * classes + c]! - max);
      for (let s = 0; s < a.numSamples; s++) {
        const u = uniform01(k0, k1, b * a.numSamples + s, true) * total;
        let lo = 0,
          hi = classes - 1;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (cdf[mid]! > u) hi = mid;
          else lo = mid + 1;
        }
        out[b * a.numSamples + s] = lo;
      }
    }
    return [out];
  } },
});

export interface UniformOptions extends DrawOptions {
  minval?: number;
  maxval?: number;
}
export interface NormalOptions extends DrawOptions {
  mean?: number;
  stddev?: number;
}
const UNIFORM_OPTIONS = optionKeys<UniformOptions>()("dtype", "key", "seed", "generator", "minval", "maxval");
const NORMAL_OPTIONS = optionKeys<NormalOptions>()("dtype", "key", "seed", "generator", "mean", "stddev");
const SAMPLE_OPTIONS = optionKeys<Omit<DrawOptions, "dtype">>()("key", "seed", "generator");

/** Uniform values in [minval, maxval). */
export function uniform(shape: number[], options: UniformOptions = {}): Tensor {
  checkOptions("random.uniform", options, UNIFORM_OPTIONS);
  const minval = options.minval ?? 0;
  const maxval = options.maxval ?? 1;
  if (!(maxval >= minval)) throw new ValueError(`maxval (${maxval}) must be >= minval (${minval})`, "random.uniform");
  const s = drawShape("random.uniform", shape, CONCRETE_HINT);
  const dtype = floatDtype("random.uniform", options.dtype);
  return applyOp1(randomUniformOp, [resolveKey("random.uniform", options)], { shape: s, dtype, minval, maxval });
}

/** Normally distributed values. */
export function normal(shape: number[], options: NormalOptions = {}): Tensor {
  checkOptions("random.normal", options, NORMAL_OPTIONS);
  const stddev = options.stddev ?? 1;
  if (!(stddev >= 0)) throw new ValueError(`stddev must be >= 0, got ${stddev}`, "random.normal");
  const s = drawShape("random.normal", shape, CONCRETE_HINT);
  const dtype = floatDtype("random.normal", options.dtype);
  return applyOp1(randomNormalOp, [resolveKey("random.normal", options)], { shape: s, dtype, mean: options.mean ?? 0, stddev });
}

/** Bool samples, true with probability p (p broadcast to `shape` when given). */
export function bernoulli(p: TensorLike, shape?: number[], options: Omit<DrawOptions, "dtype"> = {}): Tensor {
  checkOptions("random.bernoulli", options, SAMPLE_OPTIONS);
  let pt = toTensor(p, "random.bernoulli", typeof p === "number" ? "float64" : undefined);
  if (shape !== undefined) {
    drawShape("random.bernoulli", shape, `${CONCRETE_HINT}, or pass probabilities shaped like the tensor instead of a shape (bernoulli(fullLike(x, p)))`);
    pt = broadcastTo(pt, shape);
  }
  const data = pt.isSymbolic ? null : pt.dataSync();
  if (data) for (const v of data) if (!(v >= 0 && v <= 1)) throw new ValueError(`probabilities must be in [0, 1], got ${v}`, "random.bernoulli");
  return applyOp1(randomBernoulliOp, [pt, resolveKey("random.bernoulli", options)], {});
}

/** Samples class indices from unnormalized log-probabilities. */
export function categorical(logits: TensorLike, numSamples = 1, options: Omit<DrawOptions, "dtype"> = {}): Tensor {
  checkOptions("random.categorical", options, SAMPLE_OPTIONS);
  if (!Number.isInteger(numSamples) || numSamples < 0) throw new ValueError(`numSamples must be a non-negative integer, got ${numSamples}`, "random.categorical");
  const l = toTensor(logits, "random.categorical");
  return applyOp1(randomCategoricalOp, [l, resolveKey("random.categorical", options)], { numSamples });
}

/**
 * Dropout (Srivastava et al.) of a float tensor: each element is dropped (zeroed) with
 * probability `rate` and the kept ones are scaled by 1 / (1 - rate). Returns [output, mask], the
 * mask bool and true where an element is kept. The keep probability 1 - rate is held in float64
 * for a float64 x, else in float32 (which every backend has). Rate 0 is the exact identity and
 * draws nothing. nn.Dropout and ONNX's training-mode Dropout are this function.
 */
export function dropout(x: Tensor, rate: number, options: Omit<DrawOptions, "dtype"> = {}): [Tensor, Tensor] {
  checkOptions("random.dropout", options, SAMPLE_OPTIONS);
  if (typeof rate !== "number" || !(rate >= 0 && rate < 1)) throw new ValueError(`rate must be in [0, 1), got ${String(rate)}`, "random.dropout");
  if (!(x instanceof Tensor)) throw new ValueError(`x must be a tensor, got ${x === null ? "null" : typeof x}`, "random.dropout");
  if (!isFloat(x.dtype)) throw new DtypeError(`drops elements of float tensors, got ${x.dtype}`, "random.dropout");
  if (rate === 0) return [x, fullLike(x, true, "bool")];
  const keep = bernoulli(fullLike(x, 1 - rate, x.dtype === "float64" ? "float64" : "float32"), undefined, options);
  return [mul(x, div(cast(keep, x.dtype), 1 - rate)), keep];
}
