/**
 * Sorting on the GPU: a bitonic network over (key, index) pairs, so equal keys keep index order
 * (the CPU's stable order) and NaN is the largest value (last ascending, first descending and in
 * top-k), as backends/cpu/sort.ts does.
 *
 * Every slice along the sorted axis is padded to a power of two P with pairs that sort after
 * everything. Stages whose partner distance is below 2048 run in workgroup memory (one dispatch
 * covers all of them for a block); longer distances take one dispatch per stage over global memory.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, SCALAR_HELPERS, storageType, WG, type GpuArray } from "./common.js";

const BLOCK = 2048;
const PAD = "0xffffffffu";

function compareFns(dtype: DType, descending: boolean): string {
  const s = storageType(dtype, "sort");
  const as = s === "u32" ? "a" : `bitcast<${s}>(a)`;
  const bs = s === "u32" ? "b" : `bitcast<${s}>(b)`;
  const cmp = descending ? ">" : "<";
  // NaN after every number ascending, before every number descending
  const nan = s !== "f32" ? "" : descending ? `(is_nan(x) && !is_nan(y)) ||` : `(is_nan(y) && !is_nan(x)) ||`;
  return `
fn key_before(a: u32, b: u32) -> bool { let x = ${as}; let y = ${bs}; return ${nan} (x ${cmp} y); }
fn pair_less(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
  if (ia == ${PAD}) { return false; }
  if (ib == ${PAD}) { return true; }
  if (key_before(ka, kb)) { return true; }
  if (key_before(kb, ka)) { return false; }
  return ia < ib;
}`;
}

const PAIRS = bindings([
  ["keys", "w", "u32"],
  ["idx", "w", "u32"],
]);

/** Loads slices of x ([outer, n, inner], along the middle axis) into padded pair buffers [slices, P]. */
function loadSource(): string {
  const b = bindings([
    ["x", "r", "u32"],
    ["keys", "w", "u32"],
    ["idx", "w", "u32"],
  ]);
  const params = new Params().u32("total", 0).u32("n", 0).u32("inner", 0).u32("P", 0);
  return `${b.wgsl}${params.wgsl(3)}${linearMain(
    WG,
    `  if (i >= p.total) { return; }
  let slice = i / p.P;
  let pos = i % p.P;
  if (pos >= p.n) { keys[i] = 0u; idx[i] = ${PAD}; return; }
  let o = slice / p.inner;
  let ii = slice % p.inner;
  keys[i] = x[(o * p.n + pos) * p.inner + ii];
  idx[i] = pos;`,
  )}`;
}

/** One workgroup per block of BLOCK pairs: the stages (k from kFrom, every j < BLOCK) in shared memory. */
function localSource(dtype: DType, descending: boolean): string {
  const params = new Params().u32("kFrom", 0).u32("kTo", 0).u32("P", 0);
  return `${SCALAR_HELPERS}${compareFns(dtype, descending)}
${PAIRS.wgsl}${params.wgsl(2)}
var<workgroup> sk: array<u32, ${BLOCK}>;
var<workgroup> si: array<u32, ${BLOCK}>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let block = wid.y * nwg.x + wid.x;
  let span = min(${BLOCK}u, p.P);
  let base = block * span;
  for (var t = lid.x; t < span; t += ${WG}u) { sk[t] = keys[base + t]; si[t] = idx[base + t]; }
  workgroupBarrier();
  // Position within the slice decides the direction: (pos & k) == 0 sorts ascending.
  let slicePos0 = base % p.P;
  for (var k = p.kFrom; k <= p.kTo; k = k << 1u) {
    var j = min(k >> 1u, span >> 1u);
    for (; j > 0u; j = j >> 1u) {
      for (var r = lid.x; r < span / 2u; r += ${WG}u) {
        let a = 2u * j * (r / j) + (r % j);
        let b = a + j;
        let up = ((slicePos0 + a) & k) == 0u;
        let swap = pair_less(sk[b], si[b], sk[a], si[a]) == up;
        if (swap) { let tk = sk[a]; sk[a] = sk[b]; sk[b] = tk; let ti = si[a]; si[a] = si[b]; si[b] = ti; }
      }
      workgroupBarrier();
    }
  }
  for (var t = lid.x; t < span; t += ${WG}u) { keys[base + t] = sk[t]; idx[base + t] = si[t]; }
}`;
}

/** One stage (k, j) over global memory: a thread per compared pair. */
function globalSource(dtype: DType, descending: boolean): string {
  const params = new Params().u32("pairs", 0).u32("k", 0).u32("j", 0).u32("P", 0);
  return `${SCALAR_HELPERS}${compareFns(dtype, descending)}
${PAIRS.wgsl}${params.wgsl(2)}${linearMain(
    WG,
    `  if (i >= p.pairs) { return; }
  let half = p.P / 2u;
  let slice = i / half;
  let r = i % half;
  let a = 2u * p.j * (r / p.j) + (r % p.j);
  let b = a + p.j;
  let up = (a & p.k) == 0u;
  let ga = slice * p.P + a;
  let gb = slice * p.P + b;
  let ka = keys[ga]; let kb = keys[gb]; let ia = idx[ga]; let ib = idx[gb];
  if (pair_less(kb, ib, ka, ia) == up) { keys[ga] = kb; keys[gb] = ka; idx[ga] = ib; idx[gb] = ia; }`,
  )}`;
}

export interface SortedPairs {
  keys: number;
  idx: number;
  P: number;
  slices: number;
  release(): void;
}

/** Sorts every slice of x viewed as [outer, n, inner] along n: padded (key bits, index) pairs. */
export function sortPairs(dev: KernelDevice, x: GpuArray, outer: number, n: number, inner: number, descending: boolean): SortedPairs {
  let P = 1;
  while (P < n) P *= 2;
  const slices = outer * inner;
  const total = slices * P;
  const keys = dev.alloc(4 * total);
  const idx = dev.alloc(4 * total);
  const maxDim = dev.limits.maxComputeWorkgroupsPerDimension;
  const release = () => {
    dev.free(keys, 4 * total);
    dev.free(idx, 4 * total);
  };
  if (total === 0) return { keys, idx, P, slices, release };
  launch(dev, lazy("sortLoad", () => ({ source: loadSource(), layout: "rwwu", label: "sort_load" })), [x.id, keys, idx], new Params().u32("total", total).u32("n", n).u32("inner", inner).u32("P", P), grid(total, WG, maxDim));
  if (P === 1) return { keys, idx, P, slices, release };
  const local = lazy(`sortLocal|${x.dtype}|${descending}`, () => ({ source: localSource(x.dtype, descending), layout: "wwu", label: "sort_local" }));
  const blocks = total / Math.min(BLOCK, P);
  const runLocal = (kFrom: number, kTo: number) =>
    launch(dev, local, [keys, idx], new Params().u32("kFrom", kFrom).u32("kTo", kTo).u32("P", P), grid(blocks, 1, maxDim));
  runLocal(2, Math.min(P, BLOCK));
  const global = lazy(`sortGlobal|${x.dtype}|${descending}`, () => ({ source: globalSource(x.dtype, descending), layout: "wwu", label: "sort_global" }));
  for (let k = 2 * BLOCK; k <= P; k *= 2) {
    for (let j = k / 2; j >= BLOCK; j /= 2) {
      launch(dev, global, [keys, idx], new Params().u32("pairs", total / 2).u32("k", k).u32("j", j).u32("P", P), grid(total / 2, WG, maxDim));
    }
    // The remaining stages of this k (j < BLOCK) stay inside blocks.
    runLocal(k, k);
  }
  return { keys, idx, P, slices, release };
}

/**
 * Writes sorted pairs back in x's layout: the first `m` of each slice (m = n for sort, k for topK)
 * into values ([outer, m, inner], the key bits) and/or indices (int32).
 */
function extract(dev: KernelDevice, s: SortedPairs, outer: number, m: number, inner: number, values: GpuArray | null, indices: GpuArray | null): void {
  const total = outer * m * inner;
  if (total === 0) return;
  const decl: [string, "r" | "w", string][] = [
    ["keys", "r", "u32"],
    ["idx", "r", "u32"],
  ];
  if (values) decl.push(["vals", "w", "u32"]);
  if (indices) decl.push(["inds", "w", "u32"]);
  const b = bindings(decl);
  const params = new Params().u32("total", total).u32("m", m).u32("inner", inner).u32("P", s.P);
  const body = `  if (i >= p.total) { return; }
  let ii = i % p.inner;
  let q = i / p.inner;
  let pos = q % p.m;
  let o = q / p.m;
  let src = (o * p.inner + ii) * p.P + pos;
${values ? "  vals[i] = keys[src];\n" : ""}${indices ? "  inds[i] = idx[src];\n" : ""}`;
  const ids = [s.keys, s.idx, ...(values ? [values.id] : []), ...(indices ? [indices.id] : [])];
  launch(dev, lazy(`sortExtract|${!!values}|${!!indices}`, () => ({ source: `${b.wgsl}${params.wgsl(decl.length)}${linearMain(WG, body)}`, layout: b.layout + "u", label: "sort_extract" })), ids, params, grid(total, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}

/** sort / argsort along the middle axis of x viewed as [outer, n, inner]. */
export function sortAxis(dev: KernelDevice, x: GpuArray, outer: number, n: number, inner: number, descending: boolean, wantValues: boolean, wantIndices: boolean): { values: GpuArray | null; indices: GpuArray | null } {
  const s = sortPairs(dev, x, outer, n, inner, descending);
  const values = wantValues ? allocArray(dev, x.shape, x.dtype) : null;
  const indices = wantIndices ? allocArray(dev, x.shape, "int32") : null;
  extract(dev, s, outer, n, inner, values, indices);
  s.release();
  return { values, indices };
}

/** The k largest of every row of x ([rows, n]): values and int32 indices, largest first (or in index order). */
export function topK(dev: KernelDevice, x: GpuArray, rows: number, n: number, k: number, sorted: boolean, outShape: readonly number[]): [GpuArray, GpuArray] {
  const values = allocArray(dev, outShape, x.dtype);
  const indices = allocArray(dev, outShape, "int32");
  if (rows * k === 0) return [values, indices];
  const s = sortPairs(dev, x, rows, n, 1, true);
  if (sorted) {
    extract(dev, s, rows, k, 1, values, indices);
  } else {
    // The chosen indices in index order: sort them (as int32 keys) ascending, then gather values.
    const chosen = allocArray(dev, [rows, k], "int32");
    extract(dev, s, rows, k, 1, null, chosen);
    const byIndex = sortPairs(dev, chosen, rows, k, 1, false);
    extract(dev, byIndex, rows, k, 1, indices, null);
    byIndex.release();
    gatherRows(dev, x, indices, values, rows, n, k);
    dev.free(chosen.id, 4 * rows * k);
  }
  s.release();
  return [values, indices];
}

/** values[r, j] = x[r, indices[r, j]]. */
function gatherRows(dev: KernelDevice, x: GpuArray, indices: GpuArray, values: GpuArray, rows: number, n: number, k: number): void {
  const b = bindings([
    ["x", "r", "u32"],
    ["ind", "r", "u32"],
    ["vals", "w", "u32"],
  ]);
  const params = new Params().u32("total", rows * k).u32("n", n).u32("k", k);
  const body = `  if (i >= p.total) { return; }\n  vals[i] = x[(i / p.k) * p.n + ind[i]];`;
  launch(dev, lazy("gatherRows", () => ({ source: `${b.wgsl}${params.wgsl(3)}${linearMain(WG, body)}`, layout: "rrwu", label: "gather_rows" })), [x.id, indices.id, values.id], params, grid(rows * k, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}
