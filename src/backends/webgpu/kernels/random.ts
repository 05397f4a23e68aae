/**
 * Random draws on the GPU with the CPU's counter-based generator (backends/cpu/counter-rng.ts): the
 * 32-bit words of element i are the same function of (key, i) in WGSL, so a draw gives the same
 * bits on both devices. Uniform float32 values are then bit-identical (24-bit uniforms scaled once);
 * normal values go through float32 log/cos here and float64 on the CPU (equal to a few ulp); a
 * Bernoulli draw compares the CPU's 53-bit uniform with p exactly, in integers.
 */
import type { DType } from "../../../core/dtype.js";
import { largestBelow } from "../../../core/float-steps.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, REPORT, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";

/** randomBits and the uniforms, as counter-rng.ts computes them (all arithmetic modulo 2^32). */
const RNG = `
fn fmix32(h0: u32) -> u32 {
  var h = h0;
  h = h ^ (h >> 16u);
  h = h * 0x85ebca6bu;
  h = h ^ (h >> 13u);
  h = h * 0xc2b2ae35u;
  h = h ^ (h >> 16u);
  return h;
}
// 32 random bits for element (hi * 2^32 + lo) under key (k0, k1).
fn random_bits(k0: u32, k1: u32, lo: u32, hi: u32) -> u32 {
  let a = fmix32((lo ^ k0) + (hi ^ 0x9e3779b9u) * 0x27d4eb2fu);
  return fmix32((a ^ k1) + lo * 0x165667b1u + 0x9e3779b9u);
}
// A float32 uniform in [0, 1): 24 bits (exact).
fn uniform24(k0: u32, k1: u32, lo: u32, hi: u32) -> f32 {
  return f32(random_bits(k0, k1, lo, hi) >> 8u) * 5.9604644775390625e-8;
}
// The two halves of the CPU's 53-bit uniform (a * 2^26 + b) * 2^-53: a has 27 bits, b 26.
fn uniform53_parts(k0: u32, k1: u32, lo: u32, hi: u32) -> vec2u {
  let a = random_bits(k0, k1, lo, hi) >> 5u;
  let b = random_bits(k1, k0 ^ 0x5bd1e995u, lo, hi) >> 6u;
  return vec2u(a, b);
}
// Whether that 53-bit uniform is below p (p in [0, 1]), decided exactly.
fn uniform53_below(u: vec2u, p: f32) -> bool {
  if (!(p > 0.0)) { return false; }
  if (p >= 1.0) { return true; }
  let ph = p * 134217728.0; // p * 2^27, exact
  let fh = floor(ph);
  // (a has 27 bits, exact in float32 only up to 2^24: compared as integers)
  let ia = u.x;
  let ifh = u32(fh);
  if (ia != ifh) { return ia < ifh; }
  let rest = (ph - fh) * 67108864.0; // the fraction * 2^26, exact
  return u.y < u32(ceil(rest));
}
`;

// The key's words, read from its int32 buffer (a key is a tensor: int32 of shape [2]).
const KEY = `  let k0 = bitcast<u32>(key[0]); let k1 = bitcast<u32>(key[1]);\n`;

function drawSource(kind: "uniform" | "normal", s: string): string {
  const b = bindings([
    ["key", "r", "i32"],
    ["y", "w", s],
  ]);
  const params = new Params().u32("n", 0).f32("a", 0).f32("b", 0).f32("top", 0);
  // (a uniform draw stays below b: p.top, the largest value of the dtype below it; see core/float-steps.ts)
  const body =
    kind === "uniform"
      ? `  if (i >= p.n) { return; }\n${KEY}  y[i] = min(p.a + (p.b - p.a) * uniform24(k0, k1, i, 0u), p.top);`
      : `  if (i >= p.n) { return; }
${KEY}  // Box-Muller on draws 2i and 2i + 1 (64-bit indices: 2i may pass 2^32)
  let lo1 = i * 2u; let hi1 = i >> 31u;
  let u1 = uniform24(k0, k1, lo1, hi1);
  let u2 = uniform24(k0, k1, lo1 + 1u, hi1);
  y[i] = p.a + p.b * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);`;
  return `${RNG}${b.wgsl}${params.wgsl(2)}${linearMain(WG, body)}`;
}

/** randomUniform (minval, maxval) or randomNormal (mean, stddev) of `shape` under `key` (an int32[2] array). */
export function draw(dev: KernelDevice, kind: "uniform" | "normal", shape: readonly number[], dtype: DType, key: GpuArray, a: number, b: number): GpuArray {
  const s = storageType(dtype, kind === "uniform" ? "random.uniform" : "random.normal");
  const out = allocArray(dev, shape, dtype);
  const n = sizeOf(shape);
  if (n === 0) return out;
  const top = kind === "uniform" && b > a ? largestBelow(b, dtype === "float16" ? "float16" : "float32") : b;
  const params = new Params().u32("n", n).f32("a", a).f32("b", b).f32("top", top);
  launch(dev, lazy(`draw|${kind}|${s}`, () => ({ source: drawSource(kind, s), layout: "rwu", label: `random_${kind}` })), [key.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/**
 * The key ops, as random-keys.ts computes them on the CPU: "seed" (the key of an integer scalar
 * seed), "split" (split key `index` of a key), "foldIn" (a key folded with an integer scalar) and
 * "next" (a generator state [k0, k1, counter lo, counter hi] to the next state and split key
 * `counter`). One thread; `src` is the seed, key or state, `data` foldIn's data (else src again).
 */
export type KeyOp = "seed" | "split" | "foldIn" | "next";

function keySource(op: KeyOp, srcType: string, dataType: string): string {
  const b = bindings(
    op === "next"
      ? [
          ["src", "r", srcType],
          ["y", "w", "i32"],
          ["y2", "w", "i32"],
          ["err", "w", "atomic<u32>"],
        ]
      : [
          ["src", "r", srcType],
          ["data", "r", dataType],
          ["y", "w", "i32"],
        ],
  );
  const params = new Params().u32("index", 0).u32("code", 0);
  const word = (v: string, t: string) => (t === "i32" ? `bitcast<u32>(${v})` : v);
  const out = (a: string, c: string) => `  y[0] = bitcast<i32>(${a});\n  y[1] = bitcast<i32>(${c});`;
  let body: string;
  switch (op) {
    case "seed":
      // (the seed's 64 bits: an int32 seed sign-extends)
      body = `  let lo = ${word("src[0]", srcType)};\n  let hi = ${srcType === "i32" ? "select(0u, 0xffffffffu, src[0] < 0)" : "0u"};\n${out("random_bits(hi, 0x85ebca6bu, lo, 0u)", "random_bits(lo, 0xc2b2ae35u, hi, 0u)")}`;
      break;
    case "split":
      body = `  let k0 = bitcast<u32>(src[0]); let k1 = bitcast<u32>(src[1]);\n${out("random_bits(k0, k1, 2u * p.index, 0u)", "random_bits(k0, k1, 2u * p.index + 1u, 0u)")}`;
      break;
    case "foldIn":
      body = `  let k0 = bitcast<u32>(src[0]); let k1 = bitcast<u32>(src[1]);\n  let d = ${word("data[0]", dataType)};\n${out("random_bits(k0 ^ 0x3c6ef372u, k1, d, 0u)", "random_bits(k0, k1 ^ 0xa54ff53au, d, 0u)")}`;
      break;
    case "next":
      // split key `counter` (draws 2c and 2c + 1 of 64-bit indices); the counter stops at 2^52
      body = `  let k0 = bitcast<u32>(src[0]); let k1 = bitcast<u32>(src[1]);
  let clo = bitcast<u32>(src[2]); let chi = bitcast<u32>(src[3]);
  if (chi >= 0x100000u) { report(p.code, 0u, 0u); }
  let lo = clo << 1u; let hi = (chi << 1u) | (clo >> 31u);
  let nlo = clo + 1u; let nhi = chi + select(0u, 1u, nlo == 0u);
  y[0] = src[0]; y[1] = src[1]; y[2] = bitcast<i32>(nlo); y[3] = bitcast<i32>(nhi);
  y2[0] = bitcast<i32>(random_bits(k0, k1, lo, hi));
  y2[1] = bitcast<i32>(random_bits(k0, k1, lo | 1u, hi));`;
      break;
  }
  return `${RNG}${op === "next" ? REPORT : ""}${b.wgsl}${params.wgsl(op === "next" ? 4 : 3)}${linearMain(1, `  if (i > 0u) { return; }\n${body}`)}`;
}

/**
 * Runs key op `op` on `src` (and `data` for foldIn): a new int32 key ([2]); "next" also gives the
 * next state ([4], first) and "split" key `index`. `tooMany` makes the error "next" reports when a
 * generator has handed out all of its keys.
 */
export function keyOp(dev: KernelDevice, op: KeyOp, src: GpuArray, data: GpuArray | null, index: number, tooMany?: () => Error): GpuArray[] {
  const st = storageType(src.dtype, "random.key");
  const dt = data ? storageType(data.dtype, "random.foldIn") : st;
  const y = allocArray(dev, op === "next" ? [4] : [2], "int32");
  const kernel = lazy(`key|${op}|${st}|${dt}`, () => ({ source: keySource(op, st, dt), layout: op === "next" ? "rwwwu" : "rrwu", label: `random_${op}` }));
  if (op !== "next") {
    launch(dev, kernel, [src.id, (data ?? src).id, y.id], new Params().u32("index", index).u32("code", 0), [1, 1, 1]);
    return [y];
  }
  const y2 = allocArray(dev, [2], "int32");
  launch(dev, kernel, [src.id, y.id, y2.id, dev.errorBuffer], new Params().u32("index", index).u32("code", dev.check(() => tooMany!())), [1, 1, 1]);
  return [y, y2];
}

/** randomBernoulli: element i is true when the CPU's 53-bit uniform i is below p[i]. */
export function bernoulli(dev: KernelDevice, probs: GpuArray, key: GpuArray): GpuArray {
  const s = storageType(probs.dtype, "random.bernoulli");
  const out = allocArray(dev, probs.shape, "bool");
  const n = sizeOf(probs.shape);
  if (n === 0) return out;
  const b = bindings([
    ["prob", "r", s],
    ["key", "r", "i32"],
    ["y", "w", "u32"],
  ]);
  const params = new Params().u32("n", n);
  const body = `  if (i >= p.n) { return; }\n${KEY}  y[i] = select(0u, 1u, uniform53_below(uniform53_parts(k0, k1, i, 0u), f32(prob[i])));`;
  launch(dev, lazy(`bernoulli|${s}`, () => ({ source: `${SCALAR_HELPERS}${RNG}${b.wgsl}${params.wgsl(3)}${linearMain(WG, body)}`, layout: "rrwu", label: "random_bernoulli" })), [probs.id, key.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/**
 * randomCategorical: per row of logits ([batch, classes]) the CDF of exp(logits - max) (one thread
 * per row, into scratch), then per sample a binary search of the 53-bit uniform times the total.
 */
export function categorical(dev: KernelDevice, logits: GpuArray, batch: number, classes: number, numSamples: number, key: GpuArray, outShape: readonly number[]): GpuArray {
  const s = storageType(logits.dtype, "random.categorical");
  const out = allocArray(dev, outShape, "int32");
  if (batch * numSamples === 0) return out;
  const cdf = dev.alloc(4 * batch * (classes + 1));
  const maxDim = dev.limits.maxComputeWorkgroupsPerDimension;
  const b1 = bindings([
    ["logits", "r", s],
    ["cdf", "w", "f32"],
  ]);
  const p1 = new Params().u32("batch", batch).u32("classes", classes);
  const body1 = `  if (i >= p.batch) { return; }
  let base = i * p.classes;
  var m = -inf_f32();
  for (var c = 0u; c < p.classes; c++) { m = max(m, f32(logits[base + c])); }
  var total = 0.0;
  for (var c = 0u; c < p.classes; c++) { total += exp(f32(logits[base + c]) - m); cdf[i * (p.classes + 1u) + c] = total; }
  cdf[i * (p.classes + 1u) + p.classes] = total;`;
  launch(dev, lazy(`categoricalCdf|${s}`, () => ({ source: `${SCALAR_HELPERS}${b1.wgsl}${p1.wgsl(2)}${linearMain(64, body1)}`, layout: "rwu", label: "categorical_cdf" })), [logits.id, cdf], p1, grid(batch, 64, maxDim));
  const b2 = bindings([
    ["cdf", "r", "f32"],
    ["key", "r", "i32"],
    ["y", "w", "i32"],
  ]);
  const p2 = new Params().u32("n", batch * numSamples).u32("samples", numSamples).u32("classes", classes);
  const body2 = `  if (i >= p.n) { return; }
  if (p.classes == 0u) { y[i] = 0; return; }
  let row = i / p.samples;
  let base = row * (p.classes + 1u);
${KEY}  let parts = uniform53_parts(k0, k1, i, 0u);
  let u = (f32(parts.x) * 7.450580596923828e-9 + f32(parts.y) * 1.1102230246251565e-16) * cdf[base + p.classes];
  var lo = 0u;
  var hi = p.classes - 1u;
  loop {
    if (lo >= hi) { break; }
    let mid = (lo + hi) / 2u;
    if (cdf[base + mid] > u) { hi = mid; } else { lo = mid + 1u; }
  }
  y[i] = i32(lo);`;
  launch(dev, lazy("categoricalSample", () => ({ source: `${RNG}${b2.wgsl}${p2.wgsl(3)}${linearMain(WG, body2)}`, layout: "rrwu", label: "categorical_sample" })), [cdf, key.id, out.id], p2, grid(batch * numSamples, WG, maxDim));
  dev.free(cdf, 4 * batch * (classes + 1));
  return out;
}
