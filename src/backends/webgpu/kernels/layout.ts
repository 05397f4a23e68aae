/**
 * Data movement: every output element read from one input element through an affine map
 * (offset + sum of coordinate * stride, strides possibly 0 or negative). One kernel serves
 * transposes, broadcasts, strided slices and flips; the map is a kernel parameter, so one pipeline
 * per (dtype, rank) serves them all. Also: casts between the stored dtypes, fills and copies into
 * a region of a larger buffer (concat, pad, stack pushes).
 */
import type { DType } from "../../../core/dtype.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, SCALAR_HELPERS, sizeOf, storageType, stridesOf, WG, type GpuArray } from "./common.js";
import { f32Literal } from "../wgsl/render.js";

/** The input offset of output element `i`: WGSL that leaves it in `src` (uses p.d*, p.s*, p.off). */
function affineIndex(rank: number, prefix = ""): string {
  let code = `  var rem = i; var src = p.${prefix}off;\n`;
  for (let d = rank - 1; d >= 0; d--) code += `  { let c = rem % p.d${d}; rem = rem / p.d${d}; src += i32(c) * p.${prefix}s${d}; }\n`;
  return code;
}

function affineParams(p: Params, outShape: readonly number[], strides: readonly number[], offset: number, prefix = ""): Params {
  for (let d = 0; d < outShape.length; d++) p.u32(`d${d}`, outShape[d]!);
  for (let d = 0; d < outShape.length; d++) p.i32(`${prefix}s${d}`, strides[d]!);
  return p.i32(`${prefix}off`, offset);
}

/** out[coords] = x[offset + coords . strides] over `outShape` (a view of x materialized). */
export function stridedCopy(dev: KernelDevice, x: GpuArray, outShape: readonly number[], strides: readonly number[], offset: number): GpuArray {
  const out = allocArray(dev, outShape, x.dtype);
  const n = sizeOf(outShape);
  if (n === 0) return out;
  const s = storageType(x.dtype);
  const rank = outShape.length;
  const params = affineParams(new Params().u32("n", n), outShape, strides, offset);
  const b = bindings([
    ["x", "r", s],
    ["y", "w", s],
  ]);
  const k = lazy(`strided|${s}|${rank}`, () => ({ source: `${b.wgsl}${params.wgsl(2)}${linearMain(WG, `  if (i >= p.n) { return; }\n${affineIndex(rank)}  y[i] = x[u32(src)];`)}`, layout: "rwu", label: `strided_r${rank}` }));
  launch(dev, k, [x.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/** x with its axes permuted (out axis d is x axis perm[d]). */
export function transpose(dev: KernelDevice, x: GpuArray, perm: readonly number[]): GpuArray {
  const xs = stridesOf(x.shape);
  return stridedCopy(
    dev,
    x,
    perm.map((p) => x.shape[p]!),
    perm.map((p) => xs[p]!),
    0,
  );
}

/** x broadcast to `shape` (NumPy rules; 0 strides on broadcast dims). */
export function broadcastTo(dev: KernelDevice, x: GpuArray, shape: readonly number[]): GpuArray {
  const xs = stridesOf(x.shape);
  const r = shape.length;
  const strides = shape.map((_, d) => {
    const xd = d - (r - x.shape.length);
    return xd < 0 || x.shape[xd] === 1 ? 0 : xs[xd]!;
  });
  return stridedCopy(dev, x, shape, strides, 0);
}

/** Converts between stored dtypes with the CPU's typed-array semantics. */
export function cast(dev: KernelDevice, x: GpuArray, dtype: DType): GpuArray {
  const from = storageType(x.dtype, "cast");
  const to = storageType(dtype, "cast");
  const out = allocArray(dev, x.shape, dtype);
  const n = sizeOf(x.shape);
  if (n === 0) return out;
  let expr: string;
  if (dtype === "bool") expr = from === "f32" ? `select(0u, 1u, v != 0.0 || is_nan(v))` : `select(0u, 1u, v != ${from}(0))`;
  else if (dtype === "float32") expr = `f32(v)`;
  else if (dtype === "int32") expr = from === "f32" ? `f2i(v)` : `${to}(v)`;
  else expr = from === "f32" ? `f2u8(v)` : from === "i32" ? `bitcast<u32>(v) & 0xffu` : `v & 0xffu`;
  const b = bindings([
    ["x", "r", from],
    ["y", "w", to],
  ]);
  const params = new Params().u32("n", n);
  const k = lazy(`cast|${x.dtype}|${dtype}`, () => ({ source: `${SCALAR_HELPERS}${b.wgsl}${params.wgsl(2)}${linearMain(WG, `  if (i >= p.n) { return; }\n  let v = x[i];\n  y[i] = ${expr};`)}`, layout: "rwu", label: `cast_${x.dtype}_${dtype}` }));
  launch(dev, k, [x.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}

/** A new array of `shape` filled with `value` (stored as `dtype` stores it). */
export function fill(dev: KernelDevice, shape: readonly number[], dtype: DType, value: number): GpuArray {
  const out = allocArray(dev, shape, dtype);
  fillInto(dev, out, value, 0, sizeOf(shape));
  return out;
}

/** Writes `value` into elements [start, start + count) of `out`. */
export function fillInto(dev: KernelDevice, out: GpuArray, value: number, start: number, count: number): void {
  if (count === 0) return;
  const s = storageType(out.dtype);
  const params = new Params().u32("n", count).u32("start", start);
  if (s === "f32") params.f32("v", value);
  else if (s === "i32") params.i32("v", value | 0);
  else params.u32("v", out.dtype === "bool" ? (value ? 1 : 0) : value & 255);
  // (NaN travels as bits: a uniform's f32 field holds any value)
  const b = bindings([["y", "w", s]]);
  const k = lazy(`fill|${s}`, () => ({ source: `${b.wgsl}${params.wgsl(1)}${linearMain(WG, `  if (i >= p.n) { return; }\n  y[p.start + i] = p.v;`)}`, layout: "wu", label: `fill_${s}` }));
  launch(dev, k, [out.id], params, grid(count, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}

/**
 * Copies x (all of it) into `out` viewed through an affine map: out[off + coords(x) . strides] =
 * x[coords] (concat, pad and stack writes: the destination region of a larger array).
 */
export function copyInto(dev: KernelDevice, x: GpuArray, out: GpuArray, strides: readonly number[], offset: number): void {
  const n = sizeOf(x.shape);
  if (n === 0) return;
  const s = storageType(x.dtype);
  const rank = x.shape.length;
  const params = affineParams(new Params().u32("n", n), x.shape, strides, offset);
  const b = bindings([
    ["x", "r", s],
    ["y", "w", s],
  ]);
  const k = lazy(`copyInto|${s}|${rank}`, () => ({ source: `${b.wgsl}${params.wgsl(2)}${linearMain(WG, `  if (i >= p.n) { return; }\n${affineIndex(rank)}  y[u32(src)] = x[i];`)}`, layout: "rwu", label: `copy_into_r${rank}` }));
  launch(dev, k, [x.id, out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
}

/** A copy of x's buffer (new storage, same contents). */
export function clone(dev: KernelDevice, x: GpuArray): GpuArray {
  const out = allocArray(dev, x.shape, x.dtype);
  dev.copy(x.id, 0, out.id, 0, 4 * sizeOf(x.shape));
  return out;
}

/** start + i * step for i < n (range), stored as dtype. */
export function range(dev: KernelDevice, n: number, start: number, step: number, dtype: DType): GpuArray {
  const out = allocArray(dev, [n], dtype);
  if (n === 0) return out;
  const s = storageType(dtype, "range");
  const b = bindings([["y", "w", s]]);
  const params = new Params().u32("n", n);
  const value = s === "f32" ? `${f32Literal(start)} + f32(i) * ${f32Literal(step)}` : `${s}(${start | 0}) + ${s}(i) * ${s}(${step | 0})`;
  const k = lazy(`range|${s}|${start}|${step}`, () => ({ source: `${b.wgsl}${params.wgsl(1)}${linearMain(WG, `  if (i >= p.n) { return; }\n  y[i] = ${value};`)}`, layout: "wu", label: "range" }));
  launch(dev, k, [out.id], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return out;
}
