/**
 * The element-wise indexing ops ONNX brought (CPU: backends/cpu/elements-index.ts) on the GPU:
 * gatherElements (a thread per index), scatterElements (a thread per column of the indices along
 * the axis, applying its updates in index order) and scatterND (a thread per element of a slice,
 * applying the index tuples in order). Scatters apply updates in the CPU's order, without atomics,
 * so "none" keeps the last duplicate and sums are deterministic. An index out of range is reported
 * through the device's error words and raised at the next read (gather.ts).
 */
import type { DType } from "../../../core/dtype.js";
import { stridesOf } from "../../../core/shape.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, REPORT, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";
import { clone } from "./layout.js";
import type { OutOfRange } from "./gather.js";

export type Reduction = "none" | "add" | "mul" | "max" | "min";

/** WGSL giving the new value of `old` met by update `u`, as the CPU computes and stores it for `dtype`. */
function combine(r: Reduction, dtype: DType, old: string, u: string): string {
  if (r === "none") return u;
  if (dtype === "float32") {
    if (r === "add") return `${old} + ${u}`;
    if (r === "mul") return `${old} * ${u}`;
    return `select(${old}, ${u}, ${u} ${r === "max" ? ">" : "<"} ${old} || is_nan(${u}))`;
  }
  // integers: i32 wraps like an Int32Array store; uint8 and bool keep the low 8 bits like a Uint8Array store
  const wrap = (e: string) => (dtype === "int32" ? e : `((${e}) & 0xffu)`);
  if (r === "add") return wrap(`${old} + ${u}`);
  if (r === "mul") return wrap(`${old} * ${u}`);
  return `${r}(${old}, ${u})`;
}

const idxLoad = (si: string, e: string) => (si === "i32" ? e : `i32(${e})`);

/** out[q] = x[q with q[axis] = idx[q]], for each position q of idx (whose shape is the output's). */
export function gatherElements(dev: KernelDevice, x: GpuArray, idx: GpuArray, axis: number, outOfRange: OutOfRange): GpuArray {
  const s = storageType(x.dtype, "gatherElements");
  const si = storageType(idx.dtype, "gatherElements");
  const out = allocArray(dev, idx.shape, x.dtype);
  const total = sizeOf(idx.shape);
  if (total === 0) return out;
  const r = idx.shape.length;
  const xs = stridesOf(x.shape);
  const code = dev.check((pos, bits) => outOfRange(pos, bits | 0));
  const b = bindings([
    ["x", "r", s],
    ["ind", "r", si],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("total", total).u32("n", x.shape[axis]!).u32("code", code);
  for (let d = 0; d < r; d++) params.u32(`e${d}`, idx.shape[d]!).u32(`xs${d}`, xs[d]!);
  let body = `  if (i >= p.total) { return; }\n  var rest = i;\n  var off = 0u;\n`;
  for (let d = r - 1; d >= 0; d--) body += `  { let c = rest % p.e${d}; rest = rest / p.e${d};${d === axis ? "" : ` off += c * p.xs${d};`} }\n`;
  body += `  let v = ${idxLoad(si, "ind[i]")};
  if (v < 0 || v >= i32(p.n)) { report(p.code, i, bitcast<u32>(v)); y[i] = ${s}(0); return; }
  y[i] = x[off + u32(v) * p.xs${axis}];`;
  launch(dev, lazy(`gatherElements|${s}|${si}|${r}|${axis}`, () => ({ source: `${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(WG, body)}`, layout: "rrwwu", label: "gather_elements" })), [x.id, idx.id, out.id, dev.errorBuffer], params, grid(total, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/** A copy of x where x[q with q[axis] = idx[q]] is combined with upd[q], for each position q of idx, in row-major order. */
export function scatterElements(dev: KernelDevice, x: GpuArray, idx: GpuArray, upd: GpuArray, axis: number, reduction: Reduction, outOfRange: OutOfRange): GpuArray {
  const s = storageType(x.dtype, "scatterElements");
  const si = storageType(idx.dtype, "scatterElements");
  const out = clone(dev, x);
  const m = idx.shape[axis]!;
  const columns = m === 0 ? 0 : sizeOf(idx.shape) / m;
  if (columns === 0) return out;
  const r = idx.shape.length;
  const xs = stridesOf(x.shape);
  const is = stridesOf(idx.shape);
  const code = dev.check((pos, bits) => outOfRange(pos, bits | 0));
  const b = bindings([
    ["ind", "r", si],
    ["upd", "r", s],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("columns", columns).u32("m", m).u32("n", x.shape[axis]!).u32("code", code);
  for (let d = 0; d < r; d++) params.u32(`e${d}`, idx.shape[d]!).u32(`xs${d}`, xs[d]!).u32(`is${d}`, is[d]!);
  // (the column's coordinates: every axis of the indices but `axis`)
  let body = `  if (i >= p.columns) { return; }\n  var rest = i;\n  var xo = 0u;\n  var io = 0u;\n`;
  for (let d = r - 1; d >= 0; d--) if (d !== axis) body += `  { let c = rest % p.e${d}; rest = rest / p.e${d}; xo += c * p.xs${d}; io += c * p.is${d}; }\n`;
  body += `  for (var k = 0u; k < p.m; k++) {
    let j = io + k * p.is${axis};
    let v = ${idxLoad(si, "ind[j]")};
    if (v < 0 || v >= i32(p.n)) { report(p.code, j, bitcast<u32>(v)); continue; }
    let at = xo + u32(v) * p.xs${axis};
    y[at] = ${combine(reduction, x.dtype, "y[at]", "upd[j]")};
  }`;
  const helpers = s === "f32" ? SCALAR_HELPERS : "";
  launch(dev, lazy(`scatterElements|${x.dtype}|${si}|${r}|${axis}|${reduction}`, () => ({ source: `${helpers}${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(64, body)}`, layout: "rrwwu", label: "scatter_elements" })), [idx.id, upd.id, out.id, dev.errorBuffer], params, grid(columns, 64, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/**
 * A copy of x whose slice at each index tuple of idx ([count, k]) is combined with that tuple's
 * slice of upd, tuple after tuple. `tooFar(t, d)` is the error of component d of tuple t.
 */
export function scatterND(dev: KernelDevice, x: GpuArray, idx: GpuArray, upd: GpuArray, reduction: Reduction, tooFar: OutOfRange): GpuArray {
  const s = storageType(x.dtype, "scatterND");
  const si = storageType(idx.dtype, "scatterND");
  const out = clone(dev, x);
  const k = idx.shape[idx.shape.length - 1]!;
  const count = sizeOf(idx.shape.slice(0, -1));
  const slice = sizeOf(x.shape.slice(k));
  if (count === 0 || slice === 0) return out;
  const xs = stridesOf(x.shape);
  const code = dev.check((tuple, d) => tooFar(tuple, d));
  const b = bindings([
    ["ind", "r", si],
    ["upd", "r", s],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("slice", slice).u32("count", count).u32("code", code);
  for (let d = 0; d < k; d++) params.u32(`n${d}`, x.shape[d]!).u32(`s${d}`, xs[d]!);
  let body = `  if (i >= p.slice) { return; }\n  for (var t = 0u; t < p.count; t++) {\n    var at = i;\n    var ok = true;\n`;
  for (let d = 0; d < k; d++) {
    body += `    { let v = ${idxLoad(si, `ind[t * ${k}u + ${d}u]`)}; if (v < 0 || v >= i32(p.n${d})) { report(p.code, t, ${d}u); ok = false; } else { at += u32(v) * p.s${d}; } }\n`;
  }
  body += `    if (!ok) { continue; }\n    y[at] = ${combine(reduction, x.dtype, "y[at]", "upd[t * p.slice + i]")};\n  }`;
  const helpers = s === "f32" ? SCALAR_HELPERS : "";
  launch(dev, lazy(`scatterND|${x.dtype}|${si}|${k}|${reduction}`, () => ({ source: `${helpers}${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(64, body)}`, layout: "rrwwu", label: "scatter_nd" })), [idx.id, upd.id, out.id, dev.errorBuffer], params, grid(slice, 64, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}
