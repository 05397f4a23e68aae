/**
 * Indexing by tensors on the GPU: gather, gatherND and scatterAdd.
 *
 * Index values live on the GPU, so they are checked there: a kernel that meets an index out of
 * range writes 0 for it and reports the first such index through the device's error words
 * (common.ts REPORT); the next read of any tensor on the device raises the IndexError the caller
 * described (`outOfRange`). The error is raised late (at the read, as for CUDA's device-side
 * asserts), never lost.
 *
 * scatterAdd runs a thread per column (outer index, inner index) that applies every update of its
 * column in index order: the CPU's order, without atomics, so sums are deterministic.
 */
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, REPORT, sizeOf, storageType, WG, type GpuArray } from "./common.js";
import { clone } from "./layout.js";

/** Builds the IndexError for index `value` at flat position `pos` of the indices. */
export type OutOfRange = (pos: number, value: number) => Error;

function idxLoad(s: string, expr: string): string {
  return s === "i32" ? expr : `i32(${expr})`;
}

/** out[o, j, t] = x[o, idx[j], t] for x viewed as [outer, n, inner]. */
export function gather(dev: KernelDevice, x: GpuArray, idx: GpuArray, outer: number, n: number, inner: number, outShape: readonly number[], outOfRange: OutOfRange): GpuArray {
  const s = storageType(x.dtype, "gather");
  const si = storageType(idx.dtype, "gather");
  const out = allocArray(dev, outShape, x.dtype);
  const total = sizeOf(outShape);
  if (total === 0) return out;
  const m = sizeOf(idx.shape);
  const code = dev.check((pos, bits) => outOfRange(pos, bits | 0));
  const b = bindings([
    ["x", "r", s],
    ["ind", "r", si],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("total", total).u32("n", n).u32("m", m).u32("inner", inner).u32("code", code);
  const body = `  if (i >= p.total) { return; }
  let t = i % p.inner;
  let q = i / p.inner;
  let j = q % p.m;
  let o = q / p.m;
  let v = ${idxLoad(si, "ind[j]")};
  if (v < 0 || v >= i32(p.n)) { report(p.code, j, bitcast<u32>(v)); y[i] = ${s}(0); return; }
  y[i] = x[(o * p.n + u32(v)) * p.inner + t];`;
  launch(dev, lazy(`gather|${s}|${si}`, () => ({ source: `${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(WG, body)}`, layout: "rrwwu", label: "gather" })), [x.id, idx.id, out.id, dev.errorBuffer], params, grid(total, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/**
 * gatherND: for each of `count` index tuples of length k, the slice of `sliceSize` elements at
 * sum(idx * strides) of x (strides of x's first k dims); `dims` are those dims' sizes.
 */
export function gatherND(dev: KernelDevice, x: GpuArray, idx: GpuArray, dims: readonly number[], strides: readonly number[], sliceSize: number, count: number, outShape: readonly number[], outOfRange: OutOfRange): GpuArray {
  const s = storageType(x.dtype, "gatherND");
  const si = storageType(idx.dtype, "gatherND");
  const out = allocArray(dev, outShape, x.dtype);
  const total = count * sliceSize;
  if (total === 0) return out;
  const k = dims.length;
  const code = dev.check((tuple, comp) => outOfRange(tuple, comp));
  const b = bindings([
    ["x", "r", s],
    ["ind", "r", si],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("total", total).u32("slice", sliceSize).u32("code", code);
  for (let d = 0; d < k; d++) params.u32(`n${d}`, dims[d]!).u32(`s${d}`, strides[d]!);
  let body = `  if (i >= p.total) { return; }
  let tuple = i / p.slice;
  var off = i % p.slice;\n`;
  for (let d = 0; d < k; d++) {
    body += `  { let v = ${idxLoad(si, `ind[tuple * ${k}u + ${d}u]`)}; if (v < 0 || v >= i32(p.n${d})) { report(p.code, tuple, ${d}u); y[i] = ${s}(0); return; } off += u32(v) * p.s${d}; }\n`;
  }
  body += `  y[i] = x[off];`;
  launch(dev, lazy(`gatherND|${s}|${si}|${k}`, () => ({ source: `${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(WG, body)}`, layout: "rrwwu", label: `gather_nd${k}` })), [x.id, idx.id, out.id, dev.errorBuffer], params, grid(total, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/** A copy of acc (viewed as [outer, n, inner]) with upd [outer, m, inner] added at rows idx[j]. */
export function scatterAdd(dev: KernelDevice, acc: GpuArray, idx: GpuArray, upd: GpuArray, outer: number, n: number, inner: number, outOfRange: OutOfRange): GpuArray {
  const s = storageType(acc.dtype, "scatterAdd");
  const si = storageType(idx.dtype, "scatterAdd");
  const out = clone(dev, acc);
  const m = sizeOf(idx.shape);
  const columns = outer * inner;
  if (columns === 0 || (m === 0 && acc.dtype !== "bool")) return out;
  const code = dev.check((pos, bits) => outOfRange(pos, bits | 0));
  const b = bindings([
    ["ind", "r", si],
    ["upd", "r", s],
    ["y", "w", s],
    ["err", "w", "atomic<u32>"],
  ]);
  const params = new Params().u32("columns", columns).u32("n", n).u32("m", m).u32("inner", inner).u32("code", code);
  // bool: a logical or (the CPU adds 0/1 values, then maps non-zero to 1).
  // uint8: each addition wraps, as a Uint8Array store does.
  const u = "upd[(o * p.m + j) * p.inner + t]";
  const add = acc.dtype === "bool" ? `y[at] = y[at] | ${u};` : acc.dtype === "uint8" ? `y[at] = (y[at] + ${u}) & 0xffu;` : `y[at] = y[at] + ${u};`;
  const body = `  if (i >= p.columns) { return; }
  let t = i % p.inner;
  let o = i / p.inner;
  for (var j = 0u; j < p.m; j++) {
    let v = ${idxLoad(si, "ind[j]")};
    if (v < 0 || v >= i32(p.n)) { report(p.code, j, bitcast<u32>(v)); continue; }
    let at = (o * p.n + u32(v)) * p.inner + t;
    ${add}
  }`;
  launch(dev, lazy(`scatterAdd|${acc.dtype}|${si}`, () => ({ source: `${b.wgsl}${params.wgsl(4)}${REPORT}\n${linearMain(64, body)}`, layout: "rrwwu", label: "scatter_add" })), [idx.id, upd.id, out.id, dev.errorBuffer], params, grid(columns, 64, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}
