/**
 * A counter-based generator: bits(key, i) hashes the 64-bit key with the element index
 * through two rounds of a murmur3-style finalizer. Statistical quality is ample for ML
 * initialization and sampling (not for cryptography); every element is independent of
 * evaluation order, which staging and multithreading need.
 *
 * Keys are two 32-bit words; derived keys (a seed's key, split, foldIn, a generator's n-th key)
 * are bits of the parent key too, so a key held in a tensor (int32[2], whose words may read
 * negative) derives exactly what the same key held as JS numbers does.
 */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32 random bits for element `i` under key (k0, k1). */
export function randomBits(k0: number, k1: number, i: number): number {
  const lo = i >>> 0;
  const hi = Math.floor(i / 4294967296) >>> 0;
  const a = fmix32((lo ^ k0) + Math.imul(hi ^ 0x9e3779b9, 0x27d4eb2f));
  return fmix32((a ^ k1) + Math.imul(lo, 0x165667b1) + 0x9e3779b9);
}

const INV_2_24 = 1 / 16777216;
const INV_2_53 = 1 / 9007199254740992;

/** A uniform value in [0, 1): 24 bits for float32 outputs, 53 bits for float64. */
export function uniform01(k0: number, k1: number, i: number, f64: boolean): number {
  const a = randomBits(k0, k1, i);
  if (!f64) return (a >>> 8) * INV_2_24;
  const b = randomBits(k1, k0 ^ 0x5bd1e995, i);
  return ((a >>> 5) * 67108864 + (b >>> 6)) * INV_2_53;
}

/** The key of an integer seed (|seed| < 2^53; its low and high 32-bit words). */
export function seedKey(seed: number): [number, number] {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  return [randomBits(hi, 0x85ebca6b, lo), randomBits(lo, 0xc2b2ae35, hi)];
}

/** Key `i` of the keys split from (k0, k1); a generator's n-th key is split key n of its key. */
export function splitKey(k0: number, k1: number, i: number): [number, number] {
  return [randomBits(k0, k1, 2 * i), randomBits(k0, k1, 2 * i + 1)];
}

/** The key (k0, k1) folded with 32 bits of data (a stream apart from every split key). */
export function foldInKey(k0: number, k1: number, data: number): [number, number] {
  const d = data >>> 0;
  return [randomBits(k0 ^ 0x3c6ef372, k1, d), randomBits(k0, k1 ^ 0xa54ff53a, d)];
}
