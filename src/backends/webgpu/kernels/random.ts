/**
 * Random draws on the GPU with the CPU's counter-based generator (backends/cpu/counter-rng.ts): the
 * 32-bit words of element i are the same function of (key, i) in WGSL, so a draw gives the same
 * bits on both devices. Uniform float32 values are then bit-identical (24-bit uniforms scaled once);
 * normal values go through float32 log/cos here and float64 on the CPU (equal to a few ulp); a
 * Bernoulli draw compares the CPU's 53-bit uniform with p exactly, in integers.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";

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

function drawSource(kind: "uniform" | "normal", s: string): string {
  const b = bindings([["y", "w", s]]);
  const params = new Params().u32("n", 0).u32("k0", 0).u32("k1", 0).f32("a", 0).f32("b", 0);
  const body =
    kind === "uniform"
      ? `  if (i >= p.n) { return; }\n  y[i] = p.a + (p.b - p.a) * uniform24(p.k0, p.k1, i, 0u);`
      : `  if (i >= p.n) { return; }
  // Box-Muller on draws 2i and 2i + 1 (64-bit indices: 2i may pass 2^32)
  let lo1 = i * 2u; let hi1 = i >> 31u;
  let u1 = uniform24(p.k0, p.k1, lo1, hi1);
  let u2 = uniform24(p.k0, p.k1, lo1 + 1u, hi1);
  y[i] = p.a + p.b * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);`;
  return `${RNG}${b.wgsl}${params.wgsl(1)}${linearMain(WG, body)}`;
}

/** randomUniform (minval, maxval) or randomNormal (mean, stddev) of `shape` under `key`. */
export function draw(dev: KernelDevice, kind: "uniform" | "normal", shape: readonly number[], dtype: DType, key: readonly [number, number], a: number, b: number): GpuArray {
  const s = storageType(dtype, kind === "uniform" ? "random.uniform" : "random.normal");
  const out = allocArray(dev, shape, dtype);
  const n = sizeOf(shape);
  if (n === 0) return out;
  const params = new Params().u32("n", n).u32("k0", key[0]).u32("k1", key[1]).f32("a", a).f32("b", b);
  launch(dev, lazy(`draw|${kind}|${s}`, () => ({ source: drawSource(kind, s), layout: "wu", label: `random_${kind}` })), [out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/** randomBernoulli: element i is true when the CPU's 53-bit uniform i is below p[i]. */
export function bernoulli(dev: KernelDevice, probs: GpuArray, key: readonly [number, number]): GpuArray {
  const s = storageType(probs.dtype, "random.bernoulli");
  const out = allocArray(dev, probs.shape, "bool");
  const n = sizeOf(probs.shape);
  if (n === 0) return out;
  const b = bindings([
    ["prob", "r", s],
    ["y", "w", "u32"],
  ]);
  const params = new Params().u32("n", n).u32("k0", key[0]).u32("k1", key[1]);
  const body = `  if (i >= p.n) { return; }\n  y[i] = select(0u, 1u, uniform53_below(uniform53_parts(p.k0, p.k1, i, 0u), f32(prob[i])));`;
  launch(dev, lazy(`bernoulli|${s}`, () => ({ source: `${SCALAR_HELPERS}${RNG}${b.wgsl}${params.wgsl(2)}${linearMain(WG, body)}`, layout: "rwu", label: "random_bernoulli" })), [probs.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/**
 * randomCategorical: per row of logits ([batch, classes]) the CDF of exp(logits - max) (one thread
 * per row, into scratch), then per sample a binary search of the 53-bit uniform times the total.
 */
export function categorical(dev: KernelDevice, logits: GpuArray, batch: number, classes: number, numSamples: number, key: readonly [number, number], outShape: readonly number[]): GpuArray {
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
    ["y", "w", "i32"],
  ]);
  const p2 = new Params().u32("n", batch * numSamples).u32("samples", numSamples).u32("classes", classes).u32("k0", key[0]).u32("k1", key[1]);
  const body2 = `  if (i >= p.n) { return; }
  if (p.classes == 0u) { y[i] = 0; return; }
  let row = i / p.samples;
  let base = row * (p.classes + 1u);
  let parts = uniform53_parts(p.k0, p.k1, i, 0u);
  let u = (f32(parts.x) * 7.450580596923828e-9 + f32(parts.y) * 1.1102230246251565e-16) * cdf[base + p.classes];
  var lo = 0u;
  var hi = p.classes - 1u;
  loop {
    if (lo >= hi) { break; }
    let mid = (lo + hi) / 2u;
    if (cdf[base + mid] > u) { hi = mid; } else { lo = mid + 1u; }
  }
  y[i] = i32(lo);`;
  launch(dev, lazy("categoricalSample", () => ({ source: `${RNG}${b2.wgsl}${p2.wgsl(2)}${linearMain(WG, body2)}`, layout: "rwu", label: "categorical_sample" })), [cdf, out.id], p2, grid(batch * numSamples, WG, maxDim));
  dev.free(cdf, 4 * batch * (classes + 1));
  return out;
}
