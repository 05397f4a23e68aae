/**
 * Matrix products on the GPU: C[b] = op(A[b]) op(B[b]) for batches that broadcast NumPy-style.
 *
 * The main kernel is register-tiled: a workgroup computes a BM x BN tile of C, staging BK-deep
 * slices of A and B in workgroup memory; each thread accumulates TM x TN outputs in registers
 * (rows ty + i*WY, columns tx + j*WX, so neighbouring threads read neighbouring shared words and
 * write neighbouring outputs). Tile sizes are picked from the device's limits (workgroup memory and
 * invocations) and the problem's size: 128x128 tiles of 8x8 per thread for large products (the
 * shape of the hand-written kernel that reached 28.7 TFLOP/s on an H100), 64x64 of 4x4 for
 * medium ones, 32x32 of 2x2 for small ones. Loads follow each operand's memory order (transposed
 * or not) so consecutive threads read consecutive words. Products with few outputs and a long
 * contraction (GEMV-like: m or n of 1..8) use one thread per output instead.
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, Params, storageType, type GpuArray } from "./common.js";

export interface MatmulTile {
  BM: number;
  BN: number;
  BK: number;
  TM: number;
  TN: number;
}

/** The tile for an m x n product on a device with these limits. */
export function pickTile(m: number, n: number, limits: { maxComputeWorkgroupStorageSize: number; maxComputeInvocationsPerWorkgroup: number }): MatmulTile {
  const fits = (t: MatmulTile) =>
    4 * t.BK * (t.BM + t.BN) <= limits.maxComputeWorkgroupStorageSize && (t.BM / t.TM) * (t.BN / t.TN) <= limits.maxComputeInvocationsPerWorkgroup;
  const candidates: MatmulTile[] = [];
  if (m >= 256 && n >= 256) candidates.push({ BM: 128, BN: 128, BK: 16, TM: 8, TN: 8 }, { BM: 128, BN: 128, BK: 8, TM: 8, TN: 8 });
  // Skinny products (conv2d's few output channels, small batches): long tiles along the long side.
  if (m < 64 && n >= 256) candidates.push({ BM: 32, BN: 128, BK: 16, TM: 4, TN: 8 });
  if (n < 64 && m >= 256) candidates.push({ BM: 128, BN: 32, BK: 16, TM: 8, TN: 4 });
  if (m >= 64 && n >= 64) candidates.push({ BM: 64, BN: 64, BK: 16, TM: 4, TN: 4 });
  candidates.push({ BM: 32, BN: 32, BK: 16, TM: 2, TN: 2 }, { BM: 16, BN: 16, BK: 8, TM: 1, TN: 1 });
  return candidates.find(fits) ?? candidates[candidates.length - 1]!;
}

/** Batch offsets: up to three broadcast batch dimensions as parameters. */
const MAX_BATCH_DIMS = 3;

/**
 * An operand of the tiled GEMM as the kernel reads it: `load(mn, k)` is the WGSL expression of
 * element (row mn, contraction k) of A (or (k, column mn) of B), in bounds; `fast` says which index
 * runs along memory, so the cooperative tile load gives consecutive threads consecutive words.
 */
export interface GemmOperand {
  fast: "k" | "mn";
  load: (mn: string, k: string) => string;
}

/**
 * A register-tiled GEMM over z batches: C(z, row, col) = sum_k A(z, row, k) B(z, k, col), with
 * loads and the store given as WGSL snippets (matmul, and conv2d as an implicit GEMM). Parameters:
 * p.M, p.N, p.K, and whatever `decls` declares; the snippets may use `z`.
 */
export function gemmSource(t: MatmulTile, s: string, decls: string, prologue: string, A: GemmOperand, B: GemmOperand, store: (row: string, col: string, v: string) => string): string {
  const WX = t.BN / t.TN, WY = t.BM / t.TM, NT = WX * WY;
  const zero = s === "f32" ? "0.0" : "0";
  const aMap = A.fast === "mn" ? `let kk = e / ${t.BM}u; let mm = e % ${t.BM}u;` : `let mm = e / ${t.BK}u; let kk = e % ${t.BK}u;`;
  const bMap = B.fast === "mn" ? `let kk = e / ${t.BN}u; let nn = e % ${t.BN}u;` : `let nn = e / ${t.BK}u; let kk = e % ${t.BK}u;`;
  return `${decls}
var<workgroup> As: array<${s}, ${t.BK * t.BM}>;
var<workgroup> Bs: array<${s}, ${t.BK * t.BN}>;
@compute @workgroup_size(${WX}, ${WY})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
${prologue}
  let row0 = wid.y * ${t.BM}u;
  let col0 = wid.x * ${t.BN}u;
  let tid = lid.y * ${WX}u + lid.x;
  var acc: array<${s}, ${t.TM * t.TN}>;
  for (var i = 0u; i < ${t.TM * t.TN}u; i++) { acc[i] = ${zero}; }
  var a: array<${s}, ${t.TM}>;
  var bv: array<${s}, ${t.TN}>;
  for (var k0 = 0u; k0 < p.K; k0 += ${t.BK}u) {
    for (var l = 0u; l < ${Math.ceil((t.BM * t.BK) / NT)}u; l++) {
      let e = tid + l * ${NT}u;
      if (e < ${t.BM * t.BK}u) {
        ${aMap}
        var v = ${zero};
        let gm = row0 + mm;
        let gk = k0 + kk;
        if (gm < p.M && gk < p.K) { v = ${A.load("gm", "gk")}; }
        As[kk * ${t.BM}u + mm] = v;
      }
    }
    for (var l = 0u; l < ${Math.ceil((t.BN * t.BK) / NT)}u; l++) {
      let e = tid + l * ${NT}u;
      if (e < ${t.BN * t.BK}u) {
        ${bMap}
        var v = ${zero};
        let gn = col0 + nn;
        let gk = k0 + kk;
        if (gn < p.N && gk < p.K) { v = ${B.load("gn", "gk")}; }
        Bs[kk * ${t.BN}u + nn] = v;
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${t.BK}u; kk++) {
      for (var i = 0u; i < ${t.TM}u; i++) { a[i] = As[kk * ${t.BM}u + lid.y + i * ${WY}u]; }
      for (var j = 0u; j < ${t.TN}u; j++) { bv[j] = Bs[kk * ${t.BN}u + lid.x + j * ${WX}u]; }
      for (var i = 0u; i < ${t.TM}u; i++) {
        for (var j = 0u; j < ${t.TN}u; j++) { acc[i * ${t.TN}u + j] += a[i] * bv[j]; }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < ${t.TM}u; i++) {
    let r = row0 + lid.y + i * ${WY}u;
    if (r >= p.M) { continue; }
    for (var j = 0u; j < ${t.TN}u; j++) {
      let c = col0 + lid.x + j * ${WX}u;
      if (c < p.N) { ${store("r", "c", `acc[i * ${t.TN}u + j]`)} }
    }
  }
}`;
}

function tiledSource(t: MatmulTile, s: string, tA: boolean, tB: boolean): string {
  const b = bindings([
    ["A", "r", s],
    ["B", "r", s],
    ["C", "w", s],
  ]);
  // A(m, k): a[m*K + k], or a[k*M + m] when transposed; B(k, n): b[k*N + n], or b[n*K + k].
  const A: GemmOperand = tA ? { fast: "mn", load: (m, k) => `A[aoff + ${k} * p.M + ${m}]` } : { fast: "k", load: (m, k) => `A[aoff + ${m} * p.K + ${k}]` };
  const B: GemmOperand = tB ? { fast: "k", load: (n, k) => `B[boff + ${n} * p.K + ${k}]` } : { fast: "mn", load: (n, k) => `B[boff + ${k} * p.N + ${n}]` };
  const prologue = `  let z = wid.z + p.z0;
  let offs = batch_offsets(z);
  let aoff = offs.x;
  let boff = offs.y;
  let coff = z * p.M * p.N;`;
  return gemmSource(t, s, `${b.wgsl}${batchParams().wgsl(3)}
${batchOffsetFn()}`, prologue, A, B, (r, c, v) => `C[coff + ${r} * p.N + ${c}] = ${v};`);
}

/** One thread per output, the contraction in a loop (few outputs, GEMV-like shapes). */
function dotSource(s: string, tA: boolean, tB: boolean): string {
  const b = bindings([
    ["A", "r", s],
    ["B", "r", s],
    ["C", "w", s],
  ]);
  const zero = s === "f32" ? "0.0" : "0";
  const aStep = tA ? "p.M" : "1u";
  const bStep = tB ? "1u" : "p.N";
  return `${b.wgsl}${batchParams().wgsl(3)}
${batchOffsetFn()}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid.x;
  if (idx >= p.M * p.N) { return; }
  let z = wid.z + p.z0;
  let offs = batch_offsets(z);
  let r = idx / p.N;
  let c = idx % p.N;
  var ai = offs.x + ${tA ? "r" : "r * p.K"};
  var bi = offs.y + ${tB ? "c * p.K" : "c"};
  var s0 = ${zero}; var s1 = ${zero}; var s2 = ${zero}; var s3 = ${zero};
  var k = 0u;
  for (; k + 4u <= p.K; k += 4u) {
    s0 += A[ai] * B[bi]; ai += ${aStep}; bi += ${bStep};
    s1 += A[ai] * B[bi]; ai += ${aStep}; bi += ${bStep};
    s2 += A[ai] * B[bi]; ai += ${aStep}; bi += ${bStep};
    s3 += A[ai] * B[bi]; ai += ${aStep}; bi += ${bStep};
  }
  for (; k < p.K; k++) { s0 += A[ai] * B[bi]; ai += ${aStep}; bi += ${bStep}; }
  C[z * p.M * p.N + idx] = (s0 + s1) + (s2 + s3);
}`;
}

function batchParams(): Params {
  const p = new Params().u32("M", 0).u32("N", 0).u32("K", 0).u32("z0", 0);
  for (let d = 0; d < MAX_BATCH_DIMS; d++) p.u32(`bd${d}`, 1).u32(`as${d}`, 0).u32(`bs${d}`, 0);
  return p;
}

/** batch_offsets(z): element offsets of batch z's matrices in A and B (broadcast dims have stride 0). */
function batchOffsetFn(): string {
  let body = "  var rem = z; var ao = 0u; var bo = 0u;\n";
  for (let d = MAX_BATCH_DIMS - 1; d >= 0; d--) body += `  { let c = rem % p.bd${d}; rem = rem / p.bd${d}; ao += c * p.as${d}; bo += c * p.bs${d}; }\n`;
  return `fn batch_offsets(z: u32) -> vec2u {\n${body}  return vec2u(ao, bo);\n}`;
}

/**
 * Collapses the output's batch dims with A's and B's strides (0 where broadcast) into at most
 * MAX_BATCH_DIMS dims, merging neighbours whose strides chain; null when more remain.
 */
function batchDims(outBatch: readonly number[], aBatch: readonly number[], bBatch: readonly number[], aMat: number, bMat: number): [number, number, number][] | null {
  const strides = (shape: readonly number[], mat: number): number[] => {
    const r = outBatch.length;
    const s = new Array<number>(r).fill(0);
    let acc = mat;
    for (let d = shape.length - 1; d >= 0; d--) {
      s[r - shape.length + d] = shape[d] === 1 ? 0 : acc;
      acc *= shape[d]!;
    }
    return s;
  };
  const as = strides(aBatch, aMat), bs = strides(bBatch, bMat);
  const dims: [number, number, number][] = [];
  for (let d = 0; d < outBatch.length; d++) {
    const n = outBatch[d]!;
    if (n === 1) continue;
    const last = dims[dims.length - 1];
    if (last && last[1] === as[d]! * n && last[2] === bs[d]! * n) {
      last[0] *= n;
      last[1] = as[d]!;
      last[2] = bs[d]!;
    } else dims.push([n, as[d]!, bs[d]!]);
  }
  return dims.length <= MAX_BATCH_DIMS ? dims : null;
}

/**
 * C = op(A) @ op(B) with A [...batchA, m|k, k|m], B [...batchB, k|n, n|k] and C [...batch, m, n].
 */
export function matmul(dev: KernelDevice, a: GpuArray, b: GpuArray, transposeA: boolean, transposeB: boolean, outShape: readonly number[], dtype: DType): GpuArray {
  const s = storageType(dtype, "matmul");
  const out = allocArray(dev, outShape, dtype);
  const r = outShape.length;
  const m = outShape[r - 2]!, n = outShape[r - 1]!;
  const k = transposeA ? a.shape[a.shape.length - 2]! : a.shape[a.shape.length - 1]!;
  const outBatch = outShape.slice(0, r - 2);
  let batch = 1;
  for (const d of outBatch) batch *= d;
  if (batch * m * n === 0) return out;
  if (k === 0) {
    // An empty contraction: zeros (a product of two empty operands).
    launch(dev, lazy(`zeros|${s}`, () => zeroFill(s)), [out.id], new Params().u32("n", batch * m * n), [Math.ceil((batch * m * n) / 256), 1, 1]);
    return out;
  }
  const dims = batchDims(outBatch, a.shape.slice(0, -2), b.shape.slice(0, -2), m * k, k * n);
  if (dims === null) {
    // More than three independent broadcast batch dims: one product per leading index.
    return matmulByLeading(dev, a, b, transposeA, transposeB, outShape, dtype, out);
  }
  const small = m <= 8 || n <= 8;
  const tile = pickTile(m, n, dev.limits);
  const label = `matmul${small ? "_dot" : `_${tile.BM}x${tile.BN}x${tile.BK}_${tile.TM}x${tile.TN}`}${transposeA ? "_tA" : ""}${transposeB ? "_tB" : ""}`;
  const kernel = lazy(`${label}|${s}`, () => ({ source: small ? dotSource(s, transposeA, transposeB) : tiledSource(tile, s, transposeA, transposeB), layout: "rrwu", label }));
  const maxZ = dev.limits.maxComputeWorkgroupsPerDimension;
  for (let z0 = 0; z0 < batch; z0 += maxZ) {
    const p = new Params().u32("M", m).u32("N", n).u32("K", k).u32("z0", z0);
    for (let d = 0; d < MAX_BATCH_DIMS; d++) {
      const [bd, as, bs] = dims[d - (MAX_BATCH_DIMS - dims.length)] ?? [1, 0, 0];
      p.u32(`bd${d}`, bd).u32(`as${d}`, as).u32(`bs${d}`, bs);
    }
    const zs = Math.min(maxZ, batch - z0);
    let groups: [number, number, number];
    if (small) {
      const [gx, gy] = grid(m * n, 64, maxZ);
      groups = [gx, gy, zs];
    } else groups = [Math.ceil(n / tile.BN), Math.ceil(m / tile.BM), zs];
    launch(dev, kernel, [a.id, b.id, out.id], p, groups);
  }
  return out;
}

function zeroFill(s: string): { source: string; layout: string; label: string } {
  return {
    source: `@group(0) @binding(0) var<storage, read_write> C: array<${s}>;\n${new Params().u32("n", 0).wgsl(1)}
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x < p.n) { C[g.x] = ${s}(0); } }`,
    layout: "wu",
    label: "zeros",
  };
}

/** Rare: batch dims that do not collapse to three. Splits off the leading output batch dim. */
function matmulByLeading(dev: KernelDevice, a: GpuArray, b: GpuArray, tA: boolean, tB: boolean, outShape: readonly number[], dtype: DType, out: GpuArray): GpuArray {
  const lead = outShape[0]!;
  const r = outShape.length;
  const outMat = outShape.slice(1).reduce((x, y) => x * y, 1);
  const part = (x: GpuArray, i: number): GpuArray => {
    const pad = r - x.shape.length;
    if (pad > 0 || x.shape[0] === 1) return { id: x.id, shape: pad > 0 ? x.shape : x.shape.slice(1), dtype: x.dtype };
    const size = x.shape.slice(1).reduce((p, q) => p * q, 1);
    const y = allocArray(dev, x.shape.slice(1), x.dtype);
    dev.copy(x.id, 4 * i * size, y.id, 0, 4 * size);
    return y;
  };
  for (let i = 0; i < lead; i++) {
    const ai = part(a, i), bi = part(b, i);
    const c = matmul(dev, ai, bi, tA, tB, outShape.slice(1), dtype);
    dev.copy(c.id, 0, out.id, 4 * i * outMat, 4 * outMat);
    for (const t of [ai, bi, c]) if (t.id !== a.id && t.id !== b.id) dev.free(t.id, 4 * t.shape.reduce((p, q) => p * q, 1));
  }
  return out;
}
