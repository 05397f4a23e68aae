/**
 * PRNG keys as tensors (as JAX's): a key is an int32 tensor of shape [2] (two 32-bit words), so
 * a key can be an argument of a staged function (a new key is new data, not a new trace), and
 * `split` / `foldIn` are ops that work on symbolic keys as well as concrete ones. Keys derived
 * from a key are the counter-based generator's bits of it (backends/cpu/counter-rng.ts). The op
 * by which a Generator (random.ts) takes its next key from its state is here too: KEY_OPS lists
 * the ops that handle keys, and draw nothing.
 */
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import { applyOp, applyOp1, defineOp, type TensorType } from "./registry.js";
import { toTensor } from "./convert.js";
import { foldInKey, seedKey, splitKey } from "../backends/cpu/counter-rng.js";
import { mathGpu } from "../backends/webgpu/op-kernels/math.js";
import { perExample } from "./batching.js";

const KEY_TYPE: TensorType = { dtype: "int32", shape: [2] };

/** A concrete key tensor holding words (k0, k1). */
export function keyTensor(words: readonly [number, number]): Tensor {
  return new Tensor(Int32Array.of(words[0], words[1]), [2], "int32");
}

/** Checks that `key` is a key: an int32 tensor of shape [2]. */
export function checkKey(op: string, key: unknown, what = "key"): Tensor {
  if (!(key instanceof Tensor)) {
    throw new ValueError(`${what} must be a key tensor (int32, shape [2]) as sc.random.key(seed) makes, got ${key === null ? "null" : typeof key}`, op);
  }
  checkKeyType(op, key, what);
  return key;
}

export function checkKeyType(op: string, t: TensorType, what = "key"): void {
  if (t.dtype !== "int32") throw new DtypeError(`${what} must be an int32 tensor of shape [2] (as sc.random.key(seed) makes), got ${t.dtype}`, op);
  if (t.shape.length !== 1 || (t.shape[0] !== 2 && t.shape[0]! >= 0)) {
    throw new ShapeError(`${what} must be an int32 tensor of shape [2] (as sc.random.key(seed) makes), got shape ${fmtShape(t.shape)}`, op);
  }
}

/** The words of a concrete key tensor. */
export function keyWords(key: Tensor): [number, number] {
  const d = key.concrete();
  return [d[0]!, d[1]!];
}

/** The key of a seed held in an integer scalar tensor (equal to key(n) for the number n it holds). */
export const randomKeyOp = defineOp<Record<string, never>>({
  name: "randomKey",
  batch: perExample,
  family: "random",
  inputs: ["seed"],
  infer(inputs) {
    const s = inputs[0]!;
    if (s.dtype !== "int32" && s.dtype !== "int64" && s.dtype !== "uint8") throw new DtypeError(`the seed must be an integer tensor, got ${s.dtype}`, "random.key");
    if (s.shape.length !== 0) throw new ShapeError(`the seed must be a scalar, got shape ${fmtShape(s.shape)}`, "random.key");
    return [KEY_TYPE];
  },
  kernels: {
    webgpu: mathGpu.randomKey,
    cpu(inputs) {
      return [Int32Array.from(seedKey(inputs[0]!.concrete()[0]!))];
    },
  },
});

interface SplitAttrs {
  n: number;
}

/** n keys split from one: key i is the counter-based bits 2i and 2i + 1 of the key. */
export const randomSplitOp = defineOp<SplitAttrs>({
  name: "randomSplit",
  batch: perExample,
  family: "random",
  inputs: ["key"],
  infer(inputs, a) {
    checkKeyType("random.split", inputs[0]!);
    return Array.from({ length: a.n }, () => KEY_TYPE);
  },
  kernels: {
    webgpu: mathGpu.randomSplit,
    cpu(inputs, a) {
      const [k0, k1] = keyWords(inputs[0]!);
      return Array.from({ length: a.n }, (_, i) => Int32Array.from(splitKey(k0, k1, i)));
    },
  },
});

/** A key folded with 32 bits of integer data (a step number, an index). */
export const randomFoldInOp = defineOp<Record<string, never>>({
  name: "randomFoldIn",
  batch: perExample,
  family: "random",
  inputs: ["key", "data"],
  infer(inputs) {
    checkKeyType("random.foldIn", inputs[0]!);
    const d = inputs[1]!;
    if (d.dtype !== "int32" && d.dtype !== "int64" && d.dtype !== "uint8") throw new DtypeError(`data must be an integer, got a ${d.dtype} tensor`, "random.foldIn");
    if (d.shape.length !== 0) throw new ShapeError(`data must be a scalar, got shape ${fmtShape(d.shape)}`, "random.foldIn");
    return [KEY_TYPE];
  },
  kernels: {
    webgpu: mathGpu.randomFoldIn,
    cpu(inputs) {
      const [k0, k1] = keyWords(inputs[0]!);
      return [Int32Array.from(foldInKey(k0, k1, inputs[1]!.concrete()[0]!))];
    },
  },
});

// ---------------------------------------------------------------------------------------------
// a generator's next key (ops/random.ts: Generator)

const STATE_TYPE: TensorType = { dtype: "int32", shape: [4] };
/** Keys a generator may take (2^52: its n-th key is split index n of its key, below 2^53). */
const MAX_COUNTER = 2 ** 52;

/**
 * A generator's state (int32[4]: its key's two words, then the counter's low and high words)
 * to (the next state, the key for this draw): the key is split key `counter` of the
 * generator's key, so a generator made from key K hands out split(K, n)'s keys in order.
 */
export const randomNextKeyOp = defineOp<Record<string, never>>({
  name: "randomNextKey",
  batch: perExample,
  family: "random",
  inputs: ["state"],
  infer(inputs) {
    const s = inputs[0]!;
    if (s.dtype !== "int32" || s.shape.length !== 1 || (s.shape[0] !== 4 && s.shape[0]! >= 0)) {
      throw new ShapeError(`a generator state is an int32 tensor of shape [4], got ${s.dtype}${fmtShape(s.shape)}`, "random.Generator");
    }
    return [STATE_TYPE, { dtype: "int32", shape: [2] }];
  },
  kernels: {
    webgpu: mathGpu.randomNextKey,
    cpu(inputs) {
      const s = inputs[0]!.concrete();
      const counter = (s[2]! >>> 0) + (s[3]! >>> 0) * 4294967296;
      if (counter >= MAX_COUNTER) throw new ValueError(`the generator has handed out all of its 2^52 keys; make a new one`, "random.Generator");
      const next = counter + 1;
      return [Int32Array.of(s[0]!, s[1]!, next >>> 0, Math.floor(next / 4294967296)), Int32Array.from(splitKey(s[0]!, s[1]!, counter))];
    },
  },
});

/**
 * The random-family ops that make or advance keys: they draw no numbers themselves (the
 * conformance runner tells programs that draw from those that only handle keys by these).
 */
export const KEY_OPS: ReadonlySet<string> = new Set([randomKeyOp, randomSplitOp, randomFoldInOp, randomNextKeyOp].map((op) => op.name));

/**
 * The key of a seed: an int32 tensor of shape [2]. A JS integer gives a concrete key (a
 * constant in staged code); an integer scalar tensor (a staged function's argument) gives the
 * same key through an op.
 */
export function key(seed: number | Tensor): Tensor {
  if (seed instanceof Tensor) return applyOp1(randomKeyOp, [seed], {});
  if (typeof seed !== "number" || !Number.isInteger(seed)) throw new ValueError(`seed must be an integer, got ${String(seed)}`, "random.key");
  return keyTensor(seedKey(seed));
}

/** n new independent keys derived from `k` (an array of n keys). */
export function split(k: Tensor, n = 2): Tensor[] {
  if (!Number.isInteger(n) || n < 1) throw new ValueError(`n must be a positive integer, got ${n}`, "random.split");
  return applyOp(randomSplitOp, [checkKey("random.split", k)], { n });
}

/** A new key from `k` and integer `data` (a JS integer or an integer scalar tensor, e.g. a loop counter). */
export function foldIn(k: Tensor, data: number | Tensor): Tensor {
  if (typeof data === "number" && !Number.isInteger(data)) throw new ValueError(`data must be an integer, got ${data}`, "random.foldIn");
  return applyOp1(randomFoldInOp, [checkKey("random.foldIn", k), toTensor(data, "random.foldIn", "int32")], {});
}
