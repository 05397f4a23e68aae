/**
 * Seeded random numbers. Every draw is a pure function of a key and an element index
 * (a counter-based generator, backends/cpu/counter-rng.ts), so results are reproducible from a seed or key, do not
 * depend on evaluation order, and stage as ordinary nodes whose key is an attribute.
 *
 * Keys: `random.key(seed)`, `random.split(key, n)`. Without an explicit `key`/`seed`, a
 * draw takes the next key from a global generator (`random.setSeed(seed)` makes it
 * reproducible; by default it is seeded from the OS).
 */
import { allocStorage, DEFAULT_FLOAT, isFloat, type DType } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { checkShape, fmtShape, sizeOf } from "../core/shape.js";
import { isTracing } from "../core/context.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp } from "./registry.js";
import { toTensor } from "./convert.js";
import { broadcastTo } from "./shape.js";
import { randomBits, uniform01 } from "../backends/cpu/counter-rng.js";

/** A PRNG key: two 32-bit words. */
export class PRNGKey {
  constructor(
    readonly k0: number,
    readonly k1: number,
  ) {}
  toString(): string {
    return `PRNGKey(${this.k0}, ${this.k1})`;
  }
}

export function key(seed: number): PRNGKey {
  if (!Number.isInteger(seed)) throw new ValueError(`seed must be an integer, got ${seed}`, "random.key");
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  return new PRNGKey(randomBits(hi, 0x85ebca6b, lo), randomBits(lo, 0xc2b2ae35, hi));
}

/** n new independent keys derived from `k`. */
export function split(k: PRNGKey, n = 2): PRNGKey[] {
  if (!Number.isInteger(n) || n < 1) throw new ValueError(`n must be a positive integer, got ${n}`, "random.split");
  return Array.from({ length: n }, (_, i) => new PRNGKey(randomBits(k.k0, k.k1, 2 * i), randomBits(k.k0, k.k1, 2 * i + 1)));
}

let globalKey = key(Number(crypto.getRandomValues(new Uint32Array(1))[0]));

/** Seeds the global generator used by draws that pass no key or seed. */
export function setSeed(seed: number): void {
  globalKey = key(seed);
}

function nextGlobalKey(): PRNGKey {
  const [next, use] = split(globalKey, 2) as [PRNGKey, PRNGKey];
  globalKey = next;
  return use;
}

export interface DrawOptions {
  dtype?: DType;
  /** An explicit key (takes precedence over seed). */
  key?: PRNGKey;
  /** A seed for this draw alone. */
  seed?: number;
}

function resolveKey(o: DrawOptions): [number, number] {
  const k = o.key ?? (o.seed !== undefined ? key(o.seed) : nextGlobalKey());
  return [k.k0, k.k1];
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
  key: [number, number];
}

/** A random op with no inputs: element i is `sample(attrs, k0, k1, i, f64)`. */
function defineDraw<A extends DrawAttrs>(name: string, sample: (a: A, k0: number, k1: number, i: number, f64: boolean) => number) {
  return defineOp<A>({
    name,
    family: "random",
    inputs: [],
    infer: (_i, a) => [{ shape: a.shape, dtype: a.dtype }],
    kernels: { cpu(_i, a) {
      const n = sizeOf(a.shape);
      const out = allocStorage(a.dtype, n);
      const [k0, k1] = a.key;
      const f64 = a.dtype === "float64";
      for (let i = 0; i < n; i++) out[i] = sample(a, k0, k1, i, f64);
      return [out];
    } },
  });
}

export const randomUniformOp = defineDraw<DrawAttrs & { minval: number; maxval: number }>(
  "randomUniform",
  (a, k0, k1, i, f64) => a.minval + (a.maxval - a.minval) * uniform01(k0, k1, i, f64),
);

// Box-Muller on a pair of draws per output element (indices 2i and 2i + 1).
export const randomNormalOp = defineDraw<DrawAttrs & { mean: number; stddev: number }>("randomNormal", (a, k0, k1, i, f64) => {
  const u1 = uniform01(k0, k1, 2 * i, f64);
  const u2 = uniform01(k0, k1, 2 * i + 1, f64);
  return a.mean + a.stddev * Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
});

interface BernoulliAttrs {
  key: [number, number];
}

export const randomBernoulliOp = defineOp<BernoulliAttrs>({
  name: "randomBernoulli",
  family: "random",
  inputs: ["p"],
  infer(inputs) {
    if (!isFloat(inputs[0]!.dtype)) throw new DtypeError(`p must be a float tensor, got ${inputs[0]!.dtype}`, "random.bernoulli");
    return [{ shape: inputs[0]!.shape, dtype: "bool" }];
  },
  kernels: { cpu(inputs, a) {
    const p = inputs[0]!.concrete();
    const out = allocStorage("bool", p.length);
    for (let i = 0; i < p.length; i++) out[i] = uniform01(a.key[0], a.key[1], i, true) < p[i]! ? 1 : 0;
    return [out];
  } },
});

interface CategoricalAttrs {
  key: [number, number];
  numSamples: number;
}

export const randomCategoricalOp = defineOp<CategoricalAttrs>({
  name: "randomCategorical",
  family: "random",
  inputs: ["logits"],
  infer(inputs, a) {
    const l = inputs[0]!;
    if (!isFloat(l.dtype)) throw new DtypeError(`logits must be float, got ${l.dtype}`, "random.categorical");
    if (l.shape.length !== 1 && l.shape.length !== 2) {
      throw new ShapeError(`logits must be [classes] or [batch, classes], got shape [${l.shape.join(", ")}]`, "random.categorical");
    }
    return [{ shape: l.shape.length === 1 ? [a.numSamples] : [l.shape[0]!, a.numSamples], dtype: "int32" }];
  },
  kernels: { cpu(inputs, a) {
    const l = inputs[0]!;
    const logits = l.concrete();
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
        const u = uniform01(a.key[0], a.key[1], b * a.numSamples + s, true) * total;
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

/** Uniform values in [minval, maxval). */
export function uniform(shape: number[], options: DrawOptions & { minval?: number; maxval?: number } = {}): Tensor {
  const minval = options.minval ?? 0;
  const maxval = options.maxval ?? 1;
  if (!(maxval >= minval)) throw new ValueError(`maxval (${maxval}) must be >= minval (${minval})`, "random.uniform");
  const s = drawShape("random.uniform", shape, CONCRETE_HINT);
  return applyOp1(randomUniformOp, [], { shape: s, dtype: floatDtype("random.uniform", options.dtype), key: resolveKey(options), minval, maxval });
}

/** Normally distributed values. */
export function normal(shape: number[], options: DrawOptions & { mean?: number; stddev?: number } = {}): Tensor {
  const stddev = options.stddev ?? 1;
  if (!(stddev >= 0)) throw new ValueError(`stddev must be >= 0, got ${stddev}`, "random.normal");
  const s = drawShape("random.normal", shape, CONCRETE_HINT);
  return applyOp1(randomNormalOp, [], { shape: s, dtype: floatDtype("random.normal", options.dtype), key: resolveKey(options), mean: options.mean ?? 0, stddev });
}

/** Bool samples, true with probability p (p broadcast to `shape` when given). */
export function bernoulli(p: TensorLike, shape?: number[], options: Omit<DrawOptions, "dtype"> = {}): Tensor {
  let pt = toTensor(p, "random.bernoulli", typeof p === "number" ? "float64" : undefined);
  if (shape !== undefined) {
    drawShape("random.bernoulli", shape, `${CONCRETE_HINT}, or pass probabilities shaped like the tensor instead of a shape (bernoulli(fullLike(x, p)))`);
    pt = broadcastTo(pt, shape);
  }
  const data = pt.isSymbolic ? null : pt.dataSync();
  if (data) for (const v of data) if (!(v >= 0 && v <= 1)) throw new ValueError(`probabilities must be in [0, 1], got ${v}`, "random.bernoulli");
  return applyOp1(randomBernoulliOp, [pt], { key: resolveKey(options) });
}

/** Samples class indices from unnormalized log-probabilities. */
export function categorical(logits: TensorLike, numSamples = 1, options: Omit<DrawOptions, "dtype"> = {}): Tensor {
  if (!Number.isInteger(numSamples) || numSamples < 0) throw new ValueError(`numSamples must be a non-negative integer, got ${numSamples}`, "random.categorical");
  return applyOp1(randomCategoricalOp, [toTensor(logits, "random.categorical")], { key: resolveKey(options), numSamples });
}

