/**
 * Reductions on the GPU. The input is viewed as [outer, red, inner] around one contiguous run of
 * reduced axes (other axis sets are transposed into one first). Then:
 *
 * - rows (inner = 1, red >= 256): a workgroup per row, threads striding over it, a tree in
 *   workgroup memory (pairwise, so float32 sums keep ~log2(n) rounding error);
 * - columns and short rows: a thread per output, looping over the group (float32 sums with Kahan
 *   compensation: each new sum passes through an XOR with a uniform 0, so that the compiler cannot
 *   fold (t - acc) - v to 0 as lavapipe did; an infinite sum zeroes the compensation, which would
 *   otherwise be Inf - Inf = NaN);
 * - few outputs over long groups: the group is split into chunks reduced in parallel, then the
 *   partial results are reduced (a second pass).
 *
 * Semantics follow the CPU (backends/cpu/reduce.ts): max/min propagate NaN, any/all count NaN as
 * true, int32 sums wrap, empty groups give the identity.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, Params, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray, type WgslScalar } from "./common.js";
import { fill, transpose } from "./layout.js";

export type Combine = "sum" | "prod" | "max" | "min" | "any" | "all";

const ROW_MIN = 256;
const SPLIT_MIN_GROUP = 8192;
const SPLIT_MAX_OUTPUTS = 1024;

export interface View {
  x: GpuArray;
  outer: number;
  red: number;
  inner: number;
  /** A transposed copy made for the view (freed by the caller through `release`). */
  temp: boolean;
}

/** x viewed as [outer, red, inner] around `axes` (sorted); transposes when they are not one run. */
export function reductionView(dev: KernelDevice, x: GpuArray, axes: readonly number[]): View {
  const shape = x.shape;
  const contiguous = axes.every((a, i) => i === 0 || a === axes[i - 1]! + 1);
  if (contiguous && axes.length > 0) {
    const start = axes[0]!, end = axes[axes.length - 1]! + 1;
    return { x, outer: sizeOf(shape.slice(0, start)), red: sizeOf(shape.slice(start, end)), inner: sizeOf(shape.slice(end)), temp: false };
  }
  const kept = shape.map((_, d) => d).filter((d) => !axes.includes(d));
  const t = transpose(dev, x, [...kept, ...axes]);
  return { x: t, outer: sizeOf(kept.map((d) => shape[d]!)), red: sizeOf(axes.map((d) => shape[d]!)), inner: 1, temp: true };
}

export function release(dev: KernelDevice, v: View): void {
  if (v.temp) dev.free(v.x.id, 4 * sizeOf(v.x.shape));
}

interface Reducer {
  /** WGSL type of the accumulator. */
  acc: WgslScalar;
  init: string;
  /** Absorbs the loaded element `v` (already converted to the accumulator type) into `a`. */
  absorb: (a: string, v: string) => string;
  /** Combines two partial accumulators (the tree and the second pass). */
  merge: (a: string, b: string) => string;
  /** Converts an element of the input type to the accumulator's. */
  load: (v: string) => string;
  /** Whether a float sum (Kahan compensation in sequential loops). */
  kahan: boolean;
}

function reducer(c: Combine, inT: WgslScalar, outDtype: DType): Reducer {
  const acc: WgslScalar = c === "any" || c === "all" ? "u32" : storageType(outDtype);
  const load = (v: string) => {
    if (acc === "u32") return inT === "f32" ? `select(0u, 1u, ${v} != 0.0 || is_nan(${v}))` : `select(0u, 1u, ${v} != ${inT}(0))`;
    return inT === acc ? v : `${acc}(${v})`;
  };
  switch (c) {
    case "sum":
      // (float32 sums start at -0, IEEE's additive identity, as on the CPU: a group of -0 sums to -0)
      return { acc, init: acc === "f32" ? "neg_zero_f32()" : `${acc}(0)`, absorb: (a, v) => `${a} + ${v}`, merge: (a, b) => `${a} + ${b}`, load, kahan: acc === "f32" };
    case "prod":
      return { acc, init: `${acc}(1)`, absorb: (a, v) => `${a} * ${v}`, merge: (a, b) => `${a} * ${b}`, load, kahan: false };
    case "max":
    case "min": {
      const cmp = c === "max" ? ">" : "<";
      const nan = acc === "f32" ? ` || is_nan(V)` : "";
      const pick = (a: string, v: string) => `select(${a}, ${v}, ${v} ${cmp} ${a}${nan.replace("V", v)})`;
      const init = acc === "f32" ? (c === "max" ? "-inf_f32()" : "inf_f32()") : acc === "i32" ? (c === "max" ? "i32(-2147483647 - 1)" : "2147483647i") : c === "max" ? "0u" : "4294967295u";
      return { acc, init, absorb: pick, merge: pick, load, kahan: false };
    }
    case "any":
      return { acc, init: "0u", absorb: (a, v) => `${a} | ${v}`, merge: (a, b) => `${a} | ${b}`, load, kahan: false };
    case "all":
      return { acc, init: "1u", absorb: (a, v) => `${a} & ${v}`, merge: (a, b) => `${a} & ${b}`, load, kahan: false };
  }
}

/** The empty group's value (stored as the output dtype stores it). */
function identity(c: Combine, outDtype: DType): number {
  const v = { sum: 0, prod: 1, max: -Infinity, min: Infinity, any: 0, all: 1 }[c];
  if (outDtype === "float32" || Number.isFinite(v)) return v;
  return 0; // (an infinity stored in an int32 / uint8 array is 0)
}

/**
 * The kernel: outputs [outer, inner] (or [outer, chunks, inner] partials when `chunks` > 1) from
 * x [outer, red, inner]. Mode "row": a workgroup per output; "seq": a thread per output.
 */
function reduceSource(r: Reducer, inT: WgslScalar, outT: WgslScalar, mode: "row" | "seq", finish: string): string {
  const b = bindings([
    ["x", "r", inT],
    ["y", "w", outT],
  ]);
  const params = new Params().u32("outer", 0).u32("red", 0).u32("inner", 0).u32("chunks", 0).u32("chunk", 0).f32("scale", 0).u32("zero", 0);
  const head = `${SCALAR_HELPERS}${b.wgsl}${params.wgsl(2)}`;
  // Output o = (outer index, chunk, inner index); its group: red elements from base, inner apart.
  const locate = `
  let q = o / p.inner;
  let ii = o % p.inner;
  let oo = q / p.chunks;
  let ch = q % p.chunks;
  let start = ch * p.chunk;
  let stop = min(p.red, start + p.chunk);
  let base = oo * p.red * p.inner + ii;`;
  const store = `y[o] = ${finish.replace(/ACC/g, "acc")};`;
  if (mode === "seq") {
    const loop = r.kahan
      ? `var acc = ${r.init}; var comp = 0.0;
  for (var k = start; k < stop; k++) { let v = ${r.load("x[base + k * p.inner]")} - comp; let t = bitcast<f32>(bitcast<u32>(acc + v) ^ p.zero); comp = select(0.0, (t - acc) - v, is_finite(t)); acc = t; }`
      : `var acc = ${r.init};
  for (var k = start; k < stop; k++) { acc = ${r.absorb("acc", r.load("x[base + k * p.inner]"))}; }`;
    return `${head}@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let o = (wid.y * nwg.x + wid.x) * ${WG}u + lid.x;
  if (o >= p.outer * p.chunks * p.inner) { return; }${locate}
  ${loop}
  ${store}
}`;
  }
  return `${head}var<workgroup> part: array<${r.acc}, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let o = wid.y * nwg.x + wid.x;
  let live = o < p.outer * p.chunks * p.inner;${locate.replace(/\n  let /g, "\n  let ")}
  var acc = ${r.init};
  if (live) {
    for (var k = start + lid.x; k < stop; k += ${WG}u) { acc = ${r.absorb("acc", r.load("x[base + k * p.inner]"))}; }
  }
  part[lid.x] = acc;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (lid.x < s) { part[lid.x] = ${r.merge("part[lid.x]", "part[lid.x + s]")}; }
    workgroupBarrier();
  }
  if (live && lid.x == 0u) { let acc = part[0]; ${store} }
}`;
}

function runReduce(dev: KernelDevice, x: GpuArray, outer: number, red: number, inner: number, chunks: number, r: Reducer, inT: WgslScalar, outDtype: DType, finish: string, scale: number, label: string): GpuArray {
  const outT = r.acc === "u32" && outDtype === "bool" ? "u32" : storageType(outDtype);
  const out = allocArray(dev, [outer * chunks * inner], outDtype);
  const chunk = Math.ceil(red / chunks);
  const mode = inner === 1 && chunk >= ROW_MIN ? "row" : "seq";

  // (p.zero is 0, which the shader compiler cannot know: it keeps the Kahan compensation from being folded away)
  const params = new Params().u32("outer", outer).u32("red", red).u32("inner", inner).u32("chunks", chunks).u32("chunk", chunk).f32("scale", scale).u32("zero", 0);
  const n = outer * chunks * inner;
  const groups = mode === "row" ? grid(n, 1, dev.limits.maxComputeWorkgroupsPerDimension) : grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension);
  const k = lazy(`reduce|${label}|${inT}|${outT}|${r.acc}|${mode}|${finish}`, () => ({ source: reduceSource(r, inT, outT, mode, finish), layout: "rwu", label: `${label}_${mode}` }));
  launch(dev, k, [x.id, out.id], params, groups);
  return out;
}

/**
 * Reduces x over sorted `axes` with `c`; the output (dtype `outDtype`) has the kept dims' size, in
 * their order. `mean` divides each group's sum by the group's size.
 */
export function reduce(dev: KernelDevice, x: GpuArray, axes: readonly number[], c: Combine, outDtype: DType, mean = false): GpuArray {
  const outShape = x.shape.filter((_, d) => !axes.includes(d));
  const n = sizeOf(outShape);
  const red = sizeOf(axes.map((a) => x.shape[a]!));
  if (n === 0) return allocArray(dev, outShape, outDtype);
  if (red === 0) return fill(dev, outShape, outDtype, mean ? NaN : identity(c, outDtype));
  const inT = storageType(x.dtype, c);
  const finalOut = (y: GpuArray) => ({ ...y, shape: outShape });
  // No reduced axes: a conversion (through a group of one).
  const v = axes.length === 0 ? { x, outer: n, red: 1, inner: 1, temp: false } : reductionView(dev, x, axes);
  const r = reducer(c, inT, outDtype);
  const scaleExpr = mean && outDtype === "float32" ? "ACC / p.scale" : "ACC";
  const store = (expr: string) => (r.acc === "u32" && outDtype !== "bool" ? `${storageType(outDtype)}(${expr})` : expr);
  const chunks = n <= SPLIT_MAX_OUTPUTS && v.red >= SPLIT_MIN_GROUP ? Math.min(256, Math.ceil(v.red / 4096)) : 1;
  let y: GpuArray;
  if (chunks === 1) {
    y = runReduce(dev, v.x, v.outer, v.red, v.inner, 1, r, inT, outDtype, store(scaleExpr), v.red, c);
  } else {
    const partial = runReduce(dev, v.x, v.outer, v.red, v.inner, chunks, r, inT, outDtype === "bool" ? "bool" : outDtype, "ACC", 1, c);
    // Partials [outer, chunks, inner] reduced over chunks; the accumulator type is the output's.
    const r2 = c === "any" || c === "all" ? { ...reducer(c, "u32", "bool"), load: (s: string) => s } : { ...reducer(c, r.acc, outDtype), load: (s: string) => s };
    y = runReduce(dev, partial, v.outer, chunks, v.inner, 1, r2, storageType(partial.dtype), outDtype, store(scaleExpr), v.red, `${c}_2`);
    dev.free(partial.id, 4 * sizeOf(partial.shape));
  }
  release(dev, v);
  return finalOut(y);
}
