/**
 * Copies where each output coordinate maps to an input coordinate by a per-axis rule: tile (c mod n)
 * and pad's "reflect", "symmetric" and "edge" modes (the rules of ops/shape/pad.ts padIndexMap,
 * evaluated per element in WGSL rather than as index tables).
 */
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, sizeOf, storageType, stridesOf, WG, type GpuArray } from "./common.js";

export type AxisRule = "tile" | "reflect" | "symmetric" | "edge";

const RULES = `
fn map_axis(rule: u32, c: i32, n: i32, before: i32) -> i32 {
  if (rule == 0u) { return c % n; }
  let i = c - before;
  if (i >= 0 && i < n) { return i; }
  if (rule == 3u || n == 1) { return select(n - 1, 0, i < 0); }
  if (rule == 1u) {
    let p = 2 * (n - 1);
    var j = ((i % p) + p) % p;
    if (j >= n) { j = p - j; }
    return j;
  }
  let p = 2 * n;
  var j = ((i % p) + p) % p;
  if (j >= n) { j = p - 1 - j; }
  return j;
}`;

const RULE_CODE: Record<AxisRule, number> = { tile: 0, reflect: 1, symmetric: 2, edge: 3 };

/**
 * out[c] = x[map(c)] where axis d of x (shape `inShape`, x's elements in order) maps output
 * coordinate c_d by `rule` (with `before[d]` leading pad elements for the pad rules).
 */
export function mappedCopy(dev: KernelDevice, x: GpuArray, inShape: readonly number[], outShape: readonly number[], rule: AxisRule, before: readonly number[]): GpuArray {
  const out = allocArray(dev, outShape, x.dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  const s = storageType(x.dtype);
  const rank = outShape.length;
  const st = stridesOf(inShape);
  const params = new Params().u32("n", n).u32("rule", RULE_CODE[rule]);
  for (let d = 0; d < rank; d++) params.u32(`d${d}`, outShape[d]!).i32(`n${d}`, inShape[d]!).i32(`b${d}`, before[d] ?? 0).u32(`s${d}`, st[d]!);
  let body = `  if (i >= p.n) { return; }\n  var rem = i;\n  var src = 0u;\n`;
  for (let d = rank - 1; d >= 0; d--) body += `  { let c = i32(rem % p.d${d}); rem = rem / p.d${d}; src += u32(map_axis(p.rule, c, p.n${d}, p.b${d})) * p.s${d}; }\n`;
  body += `  y[i] = x[src];`;
  const b = bindings([
    ["x", "r", s],
    ["y", "w", s],
  ]);
  launch(dev, lazy(`mapped|${s}|${rank}`, () => ({ source: `${b.wgsl}${params.wgsl(2)}${RULES}\n${linearMain(WG, body)}`, layout: "rwu", label: `mapped_r${rank}` })), [x.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}
