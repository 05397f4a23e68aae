/**
 * Outer products in WebAssembly SIMD, assembled here byte by byte (no build step): the
 * matrix products whose contracted dimension is 1 (k = 1), such as the per-example weight
 * gradients of a dense layer (`[B, 1, m]^T x [B, 1, n]`, what vmap(grad) of `x @ W` gives).
 *
 *   outer(a, b, c, m, n):  C (m x n) = a (m) b^T (n),  C(i, j) = 0 + a[i] * b[j]
 *
 * a, b, c are byte addresses; a and b are contiguous (an m x 1 or 1 x m matrix is the same m
 * floats, so any transpose of A and B is this call), C is row-major and contiguous.
 *
 * Arithmetic: one float32 multiply per element, added to 0 as the gemm kernels accumulate
 * from 0 over p (so a -0 product is +0 here as there): the same bits as wasm/sgemm.ts and
 * exec's gemm give for k = 1. The general kernels pack operands and keep tiles of
 * accumulators for a sum that has one term; this writes each row of C from one splat of a[i]
 * and the vectors of b, at the speed of the stores.
 */

import { block, br, brIf, end, f32add, f32load, f32mul, f32store, f32x4add, f32x4mul, f32zero, get, i32add, i32c, i32geS, i32gtS, i32shl, I32, F32, loop, moduleBytes, set, splatLoad, V128, v128load, v128store, v128zero, WA, type WasmModule } from "./bytes.js";

// params, then locals
const [A, B, C, M, N] = [0, 1, 2, 3, 4];
const [P, J, PC, JB] = [5, 6, 7, 8];
const AV = 9; // v128: splat(a[p])
const F = 10; // f32: a[p]

/** while (j + width <= n) { body; j += width } */
function columns(width: number, body: number[]): number[] {
  return [...block, ...loop, ...get(J), ...i32c(width), ...i32add, ...get(N), ...i32gtS, ...brIf(1), ...body, ...get(J), ...i32c(width), ...i32add, ...set(J), ...br(0), ...end, ...end];
}

/** jb = j * 4 (the byte offset of column j in b and in C's row) */
const jBytes = [...get(J), ...i32c(2), ...i32shl, ...set(JB)];

/** C(p, j + 4l ..) = 0 + splat(a[p]) * b[j + 4l ..] for l < lanes */
function vectorColumns(lanes: number): number[] {
  const code = [...jBytes];
  for (let l = 0; l < lanes; l++) {
    code.push(...get(PC), ...get(JB), ...i32add);
    code.push(...v128zero, ...get(AV), ...get(B), ...get(JB), ...i32add, ...v128load(16 * l), ...f32x4mul, ...f32x4add);
    code.push(...v128store(16 * l));
  }
  return code;
}

/** C(p, j) = 0 + a[p] * b[j] */
const scalarColumn = [...jBytes, ...get(PC), ...get(JB), ...i32add, ...f32zero, ...get(F), ...get(B), ...get(JB), ...i32add, ...f32load(), ...f32mul, ...f32add, ...f32store()];

function outerBody(): number[] {
  const code: number[] = [];
  code.push(...get(C), ...set(PC), ...i32c(0), ...set(P));
  code.push(...block, ...loop, ...get(P), ...get(M), ...i32geS, ...brIf(1));
  // av = splat(a[p]); f = a[p]
  const aAt = [...get(A), ...get(P), ...i32c(2), ...i32shl, ...i32add];
  code.push(...aAt, ...splatLoad(), ...set(AV), ...aAt, ...f32load(), ...set(F));
  code.push(...i32c(0), ...set(J));
  code.push(...columns(16, vectorColumns(4)));
  code.push(...columns(4, vectorColumns(1)));
  code.push(...columns(1, scalarColumn));
  // next row of C
  code.push(...get(PC), ...get(N), ...i32c(2), ...i32shl, ...i32add, ...set(PC));
  code.push(...get(P), ...i32c(1), ...i32add, ...set(P), ...br(0), ...end, ...end);
  return code;
}

const outerBytes = (): Uint8Array =>
  moduleBytes([
    {
      name: "outer",
      params: new Array<number>(5).fill(I32),
      locals: [
        [4, I32],
        [1, V128],
        [1, F32],
      ],
      body: outerBody(),
    },
  ]);

export type OuterFn = (a: number, b: number, c: number, m: number, n: number) => void;

let compiled: WasmModule | null | undefined;

/** The compiled module, or null where WebAssembly SIMD is unavailable. */
export function outerModule(): WasmModule | null {
  if (compiled !== undefined) return compiled;
  try {
    compiled = WA ? new WA.Module(outerBytes()) : null;
  } catch {
    compiled = null;
  }
  return compiled;
}

const instances = new WeakMap<object, OuterFn>();

/** The outer-product function working on `memory` (one instance per memory), or null without SIMD. */
export function outerOn(memory: object): OuterFn | null {
  const have = instances.get(memory);
  if (have) return have;
  const mod = outerModule();
  if (!mod || !WA) return null;
  const fn = new WA.Instance(mod, { env: { memory } }).exports.outer as OuterFn;
  instances.set(memory, fn);
  return fn;
}
