/**
 * The WebAssembly binary format, as far as the CPU backend's generated modules need it
 * (gemm.ts, elementwise.ts, simd-expr.ts): LEB128 integers, sections, and the opcodes they use. Modules are assembled here byte by byte, so no build step is involved.
 */

/** Unsigned LEB128. */
export function u32(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 (for i32.const). */
export function s32(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

export const name = (s: string) => [...u32(s.length), ...[...s].map((c) => c.charCodeAt(0))];
export const vec = (items: number[][]) => [...u32(items.length), ...items.flat()];
export const section = (id: number, body: number[]) => [id, ...u32(body.length), ...body];

// value types and control
export const I32 = 0x7f,
  F32 = 0x7d,
  V128 = 0x7b,
  VOID = 0x40;
export const block = [0x02, VOID],
  loop = [0x03, VOID],
  end = [0x0b];
export const br = (d: number) => [0x0c, ...u32(d)];
export const brIf = (d: number) => [0x0d, ...u32(d)];
export const get = (l: number) => [0x20, ...u32(l)];
export const set = (l: number) => [0x21, ...u32(l)];

// i32
export const i32c = (v: number) => [0x41, ...s32(v)];
export const i32add = [0x6a],
  i32mul = [0x6c],
  i32shl = [0x74],
  i32geS = [0x4e],
  i32gtS = [0x4a],
  i32ltS = [0x48];

// f32 scalars
export const f32load = (off = 0) => [0x2a, 0x02, ...u32(off)];
export const f32store = (off = 0) => [0x38, 0x02, ...u32(off)];
export const f32add = [0x92],
  f32mul = [0x94];
export const f32zero = [0x43, 0, 0, 0, 0];

// SIMD (0xfd prefix)
export const simd = (op: number, ...imm: number[]) => [0xfd, ...u32(op), ...imm];
/** SIMD opcodes (after the 0xfd prefix). */
export const SIMD_OP = {
  v128const: 0x0c,
  shuffle: 0x0d,
  extractLaneF32: 0x1f,
  f32x4eq: 0x41,
  f32x4ne: 0x42,
  f32x4lt: 0x43,
  f32x4gt: 0x44,
  f32x4le: 0x45,
  f32x4ge: 0x46,
  f64x2eq: 0x47,
  f64x2ne: 0x48,
  f64x2lt: 0x49,
  f64x2gt: 0x4a,
  f64x2le: 0x4b,
  f64x2ge: 0x4c,
  not: 0x4d,
  and: 0x4e,
  or: 0x50,
  bitselect: 0x52,
  demote: 0x5e, // f32x4.demote_f64x2_zero
  promote: 0x5f, // f64x2.promote_low_f32x4
  f32x4ceil: 0x67,
  f32x4floor: 0x68,
  f64x2ceil: 0x74,
  f64x2floor: 0x75,
  f32x4abs: 0xe0,
  f32x4neg: 0xe1,
  f32x4sqrt: 0xe3,
  f32x4add: 0xe4,
  f32x4sub: 0xe5,
  f32x4mul: 0xe6,
  f32x4div: 0xe7,
  f64x2abs: 0xec,
  f64x2neg: 0xed,
  f64x2sqrt: 0xef,
  f64x2add: 0xf0,
  f64x2sub: 0xf1,
  f64x2mul: 0xf2,
  f64x2div: 0xf3,
} as const;
export const v128load = (off = 0) => simd(0x00, 0x02, ...u32(off));
export const v128store = (off = 0) => simd(0x0b, 0x02, ...u32(off));
/** v128.load32_splat */
export const splatLoad = (off = 0) => simd(0x09, 0x02, ...u32(off));
export const v128zero = simd(SIMD_OP.v128const, ...new Array<number>(16).fill(0));
export const f32x4add = simd(SIMD_OP.f32x4add),
  f32x4mul = simd(SIMD_OP.f32x4mul);

/** Pages a generated module's memory may have (the most WebAssembly allows). */
export const MAX_PAGES = 65536;

/**
 * A module: one function type per signature, an imported shared memory (so that worker
 * threads can run its functions on the same data), and exported functions.
 */
export function moduleBytes(funcs: { name: string; params: number[]; locals: [number, number][]; body: number[] }[]): Uint8Array {
  const sigs: string[] = [];
  const sigOf = funcs.map((f) => {
    const key = f.params.join(",");
    if (!sigs.includes(key)) sigs.push(key);
    return sigs.indexOf(key);
  });
  const type = section(1, vec(sigs.map((key) => [0x60, ...vec(key === "" ? [] : key.split(",").map((t) => [Number(t)])), ...vec([])])));
  const imports = section(2, vec([[...name("env"), ...name("memory"), 0x02, 0x03, ...u32(1), ...u32(MAX_PAGES)]]));
  const fns = section(3, vec(sigOf.map((s) => u32(s))));
  const exports = section(7, vec(funcs.map((f, i) => [...name(f.name), 0x00, ...u32(i)])));
  const bodies = funcs.map((f) => {
    const body = [...vec(f.locals.map(([count, t]) => [...u32(count), t])), ...f.body, ...end];
    return [...u32(body.length), ...body];
  });
  const code = section(10, vec(bodies));
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...type, ...imports, ...fns, ...exports, ...code]);
}

// Minimal typings for the WebAssembly JS API (the project's lib settings do not include them).
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
}

/** A shared memory of at least `bytes` bytes (fixed size: views of it stay valid). */
export function sharedMemory(bytes: number): WasmMemory {
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  return new WA!.Memory({ initial: pages, maximum: pages, shared: true });
}
export type WasmModule = object;
export interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: Record<string, unknown> };
  Memory: new (desc: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
}
export const WA = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
