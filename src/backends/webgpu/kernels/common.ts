/**
 * What every WGSL kernel shares: how dtypes are stored, parameter blocks, the dispatch grid of a
 * one-thread-per-element kernel, and scalar helpers WGSL lacks (NaN tests that survive fast math,
 * JavaScript's integer conversions).
 *
 * Storage: every element is one 32-bit word. float32 is f32, int32 is i32, uint8 and bool are u32
 * (0..255, 0/1). float64 and int64 have no WGSL type: they cannot be computed on the GPU
 * (storageType throws, and the backend refuses to place such tensors on the device).
 */
import type { DType } from "../../../core/dtype.js";
import { DtypeError } from "../../../core/errors.js";
import type { KernelDevice, KernelSource } from "../device.js";

export type WgslScalar = "f32" | "i32" | "u32";

/** The WGSL type that stores `dtype` (throws a DtypeError for float64/int64). */
export function storageType(dtype: DType, op = "webgpu"): WgslScalar {
  switch (dtype) {
    case "float32":
      return "f32";
    case "int32":
      return "i32";
    case "uint8":
    case "bool":
      return "u32";
    default:
      throw new DtypeError(
        `${dtype} has no WebGPU storage, so ${op} cannot compute with ${dtype} on the webgpu device; cast to ${dtype === "float64" || dtype === "float16" ? "float32" : "int32"} first or run it on the CPU (x.to("cpu"))`,
        op,
      );
  }
}

/** A tensor on the device as kernels see it: a buffer of words, its shape and dtype. */
export interface GpuArray {
  readonly id: number;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

/** Row-major strides (in elements). */
export { stridesOf } from "../../../core/shape.js";

/**
 * A uniform parameter block: named 32-bit fields in declaration order. `wgsl()` declares the struct
 * and its binding; `data()` packs the values.
 */
export class Params {
  private readonly fields: [string, WgslScalar][] = [];
  private readonly words: number[] = [];
  private readonly kinds: WgslScalar[] = [];

  u32(name: string, v: number): this {
    return this.add(name, "u32", v);
  }
  i32(name: string, v: number): this {
    return this.add(name, "i32", v);
  }
  f32(name: string, v: number): this {
    return this.add(name, "f32", v);
  }
  private add(name: string, t: WgslScalar, v: number): this {
    this.fields.push([name, t]);
    this.words.push(v);
    this.kinds.push(t);
    return this;
  }
  get empty(): boolean {
    return this.fields.length === 0;
  }
  /** The struct declaration and the uniform binding `p` at `binding`. */
  wgsl(binding: number): string {
    if (this.fields.length === 0) return "";
    return `struct Params { ${this.fields.map(([n, t]) => `${n}: ${t},`).join(" ")} }\n@group(0) @binding(${binding}) var<uniform> p: Params;\n`;
  }
  data(): Uint32Array | null {
    if (this.words.length === 0) return null;
    const out = new Uint32Array(this.words.length);
    const f = new Float32Array(out.buffer);
    const i = new Int32Array(out.buffer);
    for (let k = 0; k < this.words.length; k++) {
      const v = this.words[k]!;
      if (this.kinds[k] === "f32") f[k] = v;
      else if (this.kinds[k] === "i32") i[k] = v;
      else out[k] = v >>> 0;
    }
    return out;
  }
}

/** Storage buffer declarations: `names` in binding order, "r" read-only or "w" read-write. */
export function bindings(decls: [name: string, access: "r" | "w", type: WgslScalar | string][]): { wgsl: string; layout: string } {
  let wgsl = "";
  let layout = "";
  decls.forEach(([name, access, type], i) => {
    wgsl += `@group(0) @binding(${i}) var<storage, ${access === "r" ? "read" : "read_write"}> ${name}: array<${type}>;\n`;
    layout += access;
  });
  return { wgsl, layout };
}

export const WG = 256;

/**
 * Workgroups for `n` threads of `wg` each: x up to the per-dimension limit, the rest in y. A kernel
 * recovers its linear index with LINEAR_INDEX (needs the `wid`, `lid` and `nwg` builtins).
 */
export function grid(n: number, wg: number, maxPerDim = 65535): [number, number, number] {
  const groups = Math.ceil(n / wg);
  if (groups <= maxPerDim) return [groups, 1, 1];
  const y = Math.ceil(groups / maxPerDim);
  return [Math.ceil(groups / y), y, 1];
}

/** The entry point header of a one-thread-per-element kernel; the body gets `i` (u32). */
export function linearMain(wg: number, body: string): string {
  return `@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * ${wg}u + lid.x;
${body}
}`;
}

/**
 * Scalar helpers: NaN tests on the bits (WGSL may assume floats are never NaN, so x != x can be
 * folded away), and the float -> integer conversions of JavaScript typed-array stores.
 */
export const SCALAR_HELPERS = `
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
// (NaN and infinity are not WGSL constants: they are read from private variables at run time)
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;
fn nan_f32() -> f32 { return bitcast<f32>(NAN_BITS); }
fn inf_f32() -> f32 { return bitcast<f32>(INF_BITS); }
// -0 read at run time too: a -0 initializer of a loop's accumulator (-0.0, or a bitcast constant)
// reaches lavapipe's code as +0, while run-time arithmetic keeps the sign (-0 + -0 is -0).
var<private> NEG_ZERO_BITS: u32 = 0x80000000u;
fn neg_zero_f32() -> f32 { return bitcast<f32>(NEG_ZERO_BITS); }
// ToInt32 of a float (Int32Array stores): truncate, wrap modulo 2^32, NaN and infinities give 0.
fn f2i(x: f32) -> i32 {
  if (!is_finite(x)) { return 0; }
  let t = trunc(x);
  if (abs(t) < 2147483648.0) { return i32(t); }
  // |t| >= 2^31: t is an integer multiple of 2^(e-23); wrap exactly through its bits.
  let bits = bitcast<u32>(t);
  let e = i32((bits >> 23u) & 0xffu) - 150;
  var m = (bits & 0x7fffffu) | 0x800000u;
  var r = 0u;
  if (e < 32) { r = m << u32(e); }
  if (t < 0.0) { r = ~r + 1u; }
  return bitcast<i32>(r);
}
// ToUint8 of a float (Uint8Array stores): ToInt32, then the low 8 bits.
fn f2u8(x: f32) -> u32 { return bitcast<u32>(f2i(x)) & 0xffu; }
`;

/**
 * The error words a checking kernel binds (as \`err\`, read-write) and \`report(code, value, aux)\`,
 * which keeps the first report (KernelDevice.check makes the codes).
 */
export const REPORT = `
fn report(code: u32, value: u32, aux: u32) {
  loop {
    let r = atomicCompareExchangeWeak(&err[0], 0u, code);
    if (r.exchanged) { atomicStore(&err[1], value); atomicStore(&err[2], aux); return; }
    if (r.old_value != 0u) { return; }
  }
}`;

export function launch(dev: KernelDevice, k: KernelSource | LazyKernel, buffers: number[], params: Params | null, groups: readonly [number, number, number]): void {
  dev.run(dev.kernel(k), buffers, params?.data() ?? null, groups);
}

/**
 * A kernel named by a short key that determines its source: the source is generated only the
 * first time the key is seen (eager ops would otherwise build and hash kilobytes of WGSL per call).
 */
export interface LazyKernel {
  key: string;
  make: () => KernelSource;
}

export function lazy(key: string, make: () => KernelSource): LazyKernel {
  return { key, make };
}

/** Allocates the output buffer of `shape` (one word per element). */
export function allocArray(dev: KernelDevice, shape: readonly number[], dtype: DType): GpuArray {
  return { id: dev.alloc(4 * sizeOf(shape)), shape, dtype };
}
