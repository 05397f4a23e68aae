/**
 * Kernels that work along one axis of x viewed as [outer, n, inner]: argMax/argMin, cumsum,
 * softmax/logSoftmax, logSumExp and variance (the last two over any axes, through reduce.ts's view).
 *
 * Long rows (inner = 1, n >= 256) take a workgroup each: maxima and sums are trees in workgroup
 * memory. Otherwise a thread handles one (outer, inner) line. Semantics are the CPU's
 * (backends/cpu/reduce.ts, ops/nn/softmax.ts): NaN propagates through max shifts, argMax takes the
 * first NaN or the first largest value, logSumExp shifts by a finite max only.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, Params, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";
import { fill } from "./layout.js";
import { reductionView, release } from "./reduce.js";

const ROW_MIN = 256;

/** Workgroup tree reductions over one value per thread (every thread must call them). */
const TREES = `
var<workgroup> tree_v: array<f32, ${WG}>;
var<workgroup> tree_i: array<u32, ${WG}>;
fn wg_sum(v: f32, lid: u32) -> f32 {
  tree_v[lid] = v;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (lid < s) { tree_v[lid] = tree_v[lid] + tree_v[lid + s]; }
    workgroupBarrier();
  }
  let r = tree_v[0];
  workgroupBarrier();
  return r;
}
// max with NaN winning
fn wg_max(v: f32, lid: u32) -> f32 {
  tree_v[lid] = v;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (lid < s) { let a = tree_v[lid]; let b = tree_v[lid + s]; tree_v[lid] = select(a, b, b > a || is_nan(b)); }
    workgroupBarrier();
  }
  let r = tree_v[0];
  workgroupBarrier();
  return r;
}`;

interface Line {
  x: GpuArray;
  outer: number;
  n: number;
  inner: number;
}

/**
 * Runs `seq` (a thread per line: `base` is the line's first element, elements `p.inner` apart) or
 * `row` (a workgroup per line of consecutive elements: `base`, threads `lid.x` striding by WG).
 */
function lineKernel(dev: KernelDevice, label: string, variant: string, l: Line, decls: [string, "r" | "w", string][], buffers: number[], seq: string, row: string | null, rowDecls = ""): void {
  const lines = l.outer * l.inner;
  if (lines === 0) return;
  const mode = row !== null && l.inner === 1 && l.n >= ROW_MIN ? "row" : "seq";
  const b = bindings(decls);
  // (p.zero is 0, which the shader compiler cannot know: see cumsum's compensation)
  const params = new Params().u32("lines", lines).u32("n", l.n).u32("inner", l.inner).u32("zero", 0);
  const head = `${SCALAR_HELPERS}${b.wgsl}${params.wgsl(decls.length)}`;
  const make = () => {
  let source: string;
  if (mode === "seq") {
    source = `${head}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let line = (wid.y * nwg.x + wid.x) * ${WG}u + lid.x;
  if (line >= p.lines) { return; }
  let base = (line / p.inner) * p.n * p.inner + line % p.inner;
  let line_out = line;
${seq}
}`;
  } else {
    source = `${head}${TREES}${rowDecls}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let line = wid.y * nwg.x + wid.x;
  let base = line * p.n;
  let line_out = line;
  let t = lid.x;
${row}
}`;
  }
  return source;
  };
  const k = lazy(`line|${label}|${variant}|${mode}|${decls.map((d) => d[2]).join(",")}`, () => ({ source: make(), layout: b.layout + "u", label: `${label}_${mode}` }));
  launch(dev, k, buffers, params, mode === "row" ? grid(lines, 1, dev.limits.maxComputeWorkgroupsPerDimension) : grid(lines, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}

/** Index of the max (or min) along the middle axis (int32 [outer, inner]): first NaN, else first extreme. */
export function argReduce(dev: KernelDevice, x: GpuArray, kind: "max" | "min", outer: number, n: number, inner: number, outShape: readonly number[]): GpuArray {
  const s = storageType(x.dtype, kind === "max" ? "argMax" : "argMin");
  const out = allocArray(dev, outShape, "int32");
  if (sizeOf(outShape) === 0) return out;
  const cmp = kind === "max" ? ">" : "<";
  const nan = (v: string) => (s === "f32" ? `is_nan(${v})` : "false");
  // (v, k) replaces (b, bi) when strictly better, or NaN over a number (a NaN is never replaced)
  const better = (v: string, b: string) => `((${v} ${cmp} ${b}) || (${nan(v)} && !${nan(b)}))`;
  const seq = `  var best = x[base];
  var bi = 0u;
  for (var k = 1u; k < p.n; k++) {
    let v = x[base + k * p.inner];
    if (${nan("best")}) { break; }
    if (${better("v", "best")}) { best = v; bi = k; }
  }
  y[line_out] = i32(bi);`;
  // Row mode: each thread's first best of its stride class, then a tree on (value, index) that
  // prefers NaN, then the better value, then the lower index.
  const row = `  var best = x[base + t];
  var bi = t;
  for (var k = t + ${WG}u; k < p.n; k += ${WG}u) {
    let v = x[base + k];
    if (!${nan("best")} && ${better("v", "best")}) { best = v; bi = k; }
  }
  if (t >= p.n) { bi = 0xffffffffu; }
  tv[t] = best; tree_i[t] = bi;
  workgroupBarrier();
  for (var st = ${WG / 2}u; st > 0u; st = st >> 1u) {
    if (t < st) {
      let a = tv[t]; let ai = tree_i[t]; let b = tv[t + st]; let bj = tree_i[t + st];
      var take = false;
      if (bj != 0xffffffffu) {
        if (ai == 0xffffffffu) { take = true; }
        else if (${nan("a")} || ${nan("b")}) { take = ${nan("b")} && (!${nan("a")} || bj < ai); }
        else if (b ${cmp} a) { take = true; }
        else if (b == a && bj < ai) { take = true; }
      }
      if (take) { tv[t] = b; tree_i[t] = bj; }
    }
    workgroupBarrier();
  }
  if (t == 0u) { y[line_out] = i32(tree_i[0]); }`;
  const decls: [string, "r" | "w", string][] = [
    ["x", "r", s],
    ["y", "w", "i32"],
  ];
  lineKernel(dev, `arg${kind}`, "", { x, outer, n, inner }, decls, [x.id, out.id], seq, row, `\nvar<workgroup> tv: array<${s}, ${WG}>;`);
  return out;
}

/** Cumulative sum along the middle axis (exclusive: sums before each element; reverse: from the end). */
export function cumsum(dev: KernelDevice, x: GpuArray, outer: number, n: number, inner: number, exclusive: boolean, reverse: boolean, dtype: DType): GpuArray {
  const s = storageType(dtype, "cumsum");
  const out = allocArray(dev, x.shape, dtype);
  if (sizeOf(x.shape) === 0) return out;
  const step = (k: string) => (reverse ? `(p.n - 1u - ${k})` : k);
  const add = s === "u32" ? "(acc + v) & 0xffu" : "acc + v";
  // float32: Kahan-compensated (the CPU accumulates in float64). The new sum passes through an
  // XOR with p.zero so that the compiler cannot fold (tv - acc) - yv to 0 (WGSL has no `precise`;
  // lavapipe folded it); an infinite sum zeroes the compensation, else it would be
  // Inf - Inf = NaN and turn the rest of the line into NaN where the CPU keeps the infinity.
  const absorb =
    s === "f32"
      ? `{ let yv = v - comp; let tv = bitcast<f32>(bitcast<u32>(acc + yv) ^ p.zero); comp = select(0.0, (tv - acc) - yv, is_finite(tv)); acc = tv; }`
      : `acc = ${add};`;
  // float32 sums start at -0, IEEE's additive identity, as on the CPU (backends/cpu/reduce.ts
  // cumsum3): a leading -0 stays -0; an exclusive scan's first entry, the empty sum, is +0.
  const zero = s === "f32" ? "neg_zero_f32()" : `${s}(0)`;
  const body = `  var acc: ${s} = ${zero};
  var comp = ${s}(0);
  for (var k = 0u; k < p.n; k++) {
    let at = base + ${step("k")} * p.inner;
    let v = ${s}(x[at]);
    ${exclusive ? `y[at] = select(acc, ${s}(0), k == 0u); ${absorb}` : `${absorb} y[at] = acc;`}
  }`;
  // (a sequential scan per line; a long single line runs on one thread)
  lineKernel(dev, "cumsum", `${exclusive}|${reverse}`, { x, outer, n, inner }, [["x", "r", storageType(x.dtype, "cumsum")], ["y", "w", s]], [x.id, out.id], body, null);
  return out;
}

/**
 * softmax or logSoftmax along the middle axis (float32). logSoftmax is (x - max) - log s, not
 * x - (max + log s), as on the CPU (ops/nn/softmax.ts): a lone -0 gives +0 (-0 - -0).
 */
export function softmax(dev: KernelDevice, x: GpuArray, outer: number, n: number, inner: number, log: boolean): GpuArray {
  const out = allocArray(dev, x.shape, "float32");
  if (sizeOf(x.shape) === 0) return out;
  const at = (k: string) => `base + ${k} * p.inner`;
  const seq = `  var m = -inf_f32();
  var nan = false;
  for (var k = 0u; k < p.n; k++) { let v = x[${at("k")}]; if (v > m) { m = v; } else if (is_nan(v)) { nan = true; } }
  if (nan) { m = nan_f32(); }
  var s = 0.0;
${
  log
    ? `  for (var k = 0u; k < p.n; k++) { s += exp(x[${at("k")}] - m); }
  let ls = log(s);
  for (var k = 0u; k < p.n; k++) { y[${at("k")}] = (x[${at("k")}] - m) - ls; }`
    : `  for (var k = 0u; k < p.n; k++) { let e = exp(x[${at("k")}] - m); y[${at("k")}] = e; s += e; }
  let r = 1.0 / s;
  for (var k = 0u; k < p.n; k++) { y[${at("k")}] = y[${at("k")}] * r; }`
}`;
  const row = `  var lm = -inf_f32();
  for (var k = t; k < p.n; k += ${WG}u) { let v = x[base + k]; lm = select(lm, v, v > lm || is_nan(v)); }
  let m = wg_max(lm, t);
  var ls = 0.0;
  for (var k = t; k < p.n; k += ${WG}u) { ls += exp(x[base + k] - m); }
  let s = wg_sum(ls, t);
${log ? `  let lg = log(s);\n  for (var k = t; k < p.n; k += ${WG}u) { y[base + k] = (x[base + k] - m) - lg; }` : `  let r = 1.0 / s;\n  for (var k = t; k < p.n; k += ${WG}u) { y[base + k] = exp(x[base + k] - m) * r; }`}`;
  lineKernel(dev, log ? "log_softmax" : "softmax", "", { x, outer, n, inner }, [["x", "r", "f32"], ["y", "w", "f32"]], [x.id, out.id], seq, row);
  return out;
}

/** logSumExp or variance over sorted `axes` (float32 output of the kept dims). */
export function groupStat(dev: KernelDevice, x: GpuArray, axes: readonly number[], kind: "logSumExp" | "variance", outShape: readonly number[]): GpuArray {
  storageType(x.dtype, kind);
  const m = sizeOf(outShape);
  const red = sizeOf(axes.map((a) => x.shape[a]!));
  if (m === 0) return allocArray(dev, outShape, "float32");
  if (red === 0) return fill(dev, outShape, "float32", kind === "logSumExp" ? -Infinity : NaN);
  const v = axes.length === 0 ? { x, outer: m, red: 1, inner: 1, temp: false } : reductionView(dev, x, axes);
  const out = allocArray(dev, outShape, "float32");
  const s = storageType(x.dtype);
  const ld = (e: string) => (s === "f32" ? e : `f32(${e})`);
  const at = (k: string) => ld(`x[base + ${k} * p.inner]`);
  let seq: string, row: string;
  if (kind === "logSumExp") {
    seq = `  var hi = -inf_f32();
  for (var k = 0u; k < p.n; k++) { let v = ${at("k")}; if (v > hi || is_nan(v)) { hi = v; } }
  let shift = select(select(0.0, hi, is_nan(hi)), hi, is_finite(hi));
  var acc = 0.0;
  for (var k = 0u; k < p.n; k++) { acc += exp(${at("k")} - shift); }
  y[line_out] = log(acc) + shift;`;
    row = `  var lh = -inf_f32();
  for (var k = t; k < p.n; k += ${WG}u) { let v = ${ld("x[base + k]")}; lh = select(lh, v, v > lh || is_nan(v)); }
  let hi = wg_max(lh, t);
  let shift = select(select(0.0, hi, is_nan(hi)), hi, is_finite(hi));
  var la = 0.0;
  for (var k = t; k < p.n; k += ${WG}u) { la += exp(${ld("x[base + k]")} - shift); }
  let acc = wg_sum(la, t);
  if (t == 0u) { y[line_out] = log(acc) + shift; }`;
  } else {
    seq = `  var sum = 0.0;
  for (var k = 0u; k < p.n; k++) { sum += ${at("k")}; }
  let mean = sum / f32(p.n);
  var ss = 0.0;
  for (var k = 0u; k < p.n; k++) { let d = ${at("k")} - mean; ss += d * d; }
  y[line_out] = ss / f32(p.n);`;
    row = `  var ls = 0.0;
  for (var k = t; k < p.n; k += ${WG}u) { ls += ${ld("x[base + k]")}; }
  let mean = wg_sum(ls, t) / f32(p.n);
  var lq = 0.0;
  for (var k = t; k < p.n; k += ${WG}u) { let d = ${ld("x[base + k]")} - mean; lq += d * d; }
  let ss = wg_sum(lq, t);
  if (t == 0u) { y[line_out] = ss / f32(p.n); }`;
  }
  lineKernel(dev, kind, "", { x: v.x, outer: v.outer, n: v.red, inner: v.inner }, [["x", "r", s], ["y", "w", "f32"]], [v.x.id, out.id], seq, row);
  release(dev, v);
  return out;
}
