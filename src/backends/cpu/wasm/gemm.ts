/**
 * A small float32 matrix product in WebAssembly SIMD for the compiled executor, assembled
 * here byte by byte (no build step). Compiled graphs keep their planned buffers in a
 * WebAssembly memory, so products of small and medium matrices run on data already in place,
 * without the copies and task set-up the general kernel pays on every call.
 *
 *   gemm(a, b, c, m, n, k, sai, sap, acc):  C (m x n) = op(A) (m x k) B (k x n)   [+ C if acc]
 *
 * a, b, c are byte addresses; A(i, p) = a[i * sai + p * sap] (element strides: any transpose of
 * A); B is row-major and contiguous; C row-major and contiguous.
 *
 * Rows go in blocks of four: 4 x 8 and 4 x 4 register tiles (each B vector loaded serves four
 * rows, as in the sgemm microkernel), then the last columns and rows one at a time.
 *
 * Arithmetic: every output element is accumulated from 0 over p in order with float32
 * multiplies and float32 adds (f32x4 lanes, or scalar f32 for the last columns), then added to
 * C when `acc` is set: exactly what the WebAssembly sgemm of the eager kernel
 * (wasm/sgemm.ts) computes for one k block. Callers split k into the same blocks of 256.
 */

import {
  block, br, brIf, end, f32add, f32load, f32mul, f32store, f32x4add, f32x4mul, f32zero, get, i32add, i32c, i32geS, i32gtS,
  i32mul, i32shl, I32, F32, loop, moduleBytes, set, sharedMemory, splatLoad, V128, v128load, v128store, v128zero, VOID, WA,
  type WasmMemory, type WasmModule,
} from "./bytes.js";
import { registerExtraKernel, runRowChunks } from "../worker-pool.js";

// locals: params 0..8, then the function's own
const [A, B, C, M, N, K, SAI, SAP, ACC] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const [I, J, P, PA, PB, CROW, AROW, LDB] = [9, 10, 11, 12, 13, 14, 15, 16];
const PAR = [PA, 17, 18, 19]; // A pointers of the 4 rows of a tile
const JT = 20; // first column of the tail a 4-row tile leaves to single rows
const NUM_I32 = 12;
const S = [21, 22, 23, 24, 25, 26, 27, 28]; // v128 accumulators
const AV = 29; // v128
const BV = [30, 31]; // v128
const NUM_V128 = 11;
const F = 32; // f32

/** pa = arow; pb = b + j*4; p = 0 */
const startP = [...get(AROW), ...set(PA), ...get(B), ...get(J), ...i32c(2), ...i32shl, ...i32add, ...set(PB), ...i32c(0), ...set(P)];
/** pa += sap; pb += ldb; p += 1 */
const stepP = [...get(PA), ...get(SAP), ...i32add, ...set(PA), ...get(PB), ...get(LDB), ...i32add, ...set(PB), ...get(P), ...i32c(1), ...i32add, ...set(P)];
/** address of C(i, j) */
const cAt = [...get(CROW), ...get(J), ...i32c(2), ...i32shl, ...i32add];

/** Columns j .. j + 4*lanes - 1 with `lanes` f32x4 accumulators. */
function vectorColumns(lanes: number): number[] {
  const code: number[] = [];
  for (let l = 0; l < lanes; l++) code.push(...v128zero, ...set(S[l]!));
  code.push(...startP);
  // for p in 0..k: av = splat(A(i, p)); s_l += av * B(p, j + 4l ..)
  code.push(...block, ...loop, ...get(P), ...get(K), ...i32geS, ...brIf(1));
  code.push(...get(PA), ...splatLoad(), ...set(AV));
  for (let l = 0; l < lanes; l++) code.push(...get(S[l]!), ...get(AV), ...get(PB), ...v128load(16 * l), ...f32x4mul, ...f32x4add, ...set(S[l]!));
  code.push(...stepP, ...br(0), ...end, ...end);
  // if acc: s_l = s_l + C
  code.push(...get(ACC), 0x04, VOID);
  for (let l = 0; l < lanes; l++) code.push(...get(S[l]!), ...cAt, ...v128load(16 * l), ...f32x4add, ...set(S[l]!));
  code.push(...end);
  for (let l = 0; l < lanes; l++) code.push(...cAt, ...get(S[l]!), ...v128store(16 * l));
  code.push(...get(J), ...i32c(4 * lanes), ...i32add, ...set(J));
  return code;
}

/**
 * Rows i .. i+3, columns j .. j + 4*lanes - 1: 4 x lanes f32x4 accumulators, so each B vector
 * loaded serves four rows (the 4 x 8 register tile of the sgemm microkernel). Every element is
 * still accumulated over p in order, so results equal the one-row code's.
 */
function tileColumns(lanes: number): number[] {
  const code: number[] = [];
  for (let t = 0; t < 4 * lanes; t++) code.push(...v128zero, ...set(S[t]!));
  code.push(...get(AROW), ...set(PAR[0]!));
  for (let r = 1; r < 4; r++) code.push(...get(PAR[r - 1]!), ...get(SAI), ...i32add, ...set(PAR[r]!));
  code.push(...get(B), ...get(J), ...i32c(2), ...i32shl, ...i32add, ...set(PB), ...i32c(0), ...set(P));
  code.push(...block, ...loop, ...get(P), ...get(K), ...i32geS, ...brIf(1));
  for (let l = 0; l < lanes; l++) code.push(...get(PB), ...v128load(16 * l), ...set(BV[l]!));
  for (let r = 0; r < 4; r++) {
    code.push(...get(PAR[r]!), ...splatLoad(), ...set(AV));
    for (let l = 0; l < lanes; l++) code.push(...get(S[r * lanes + l]!), ...get(AV), ...get(BV[l]!), ...f32x4mul, ...f32x4add, ...set(S[r * lanes + l]!));
  }
  for (let r = 0; r < 4; r++) code.push(...get(PAR[r]!), ...get(SAP), ...i32add, ...set(PAR[r]!));
  code.push(...get(PB), ...get(LDB), ...i32add, ...set(PB), ...get(P), ...i32c(1), ...i32add, ...set(P), ...br(0), ...end, ...end);
  // address of C(i + r, j + 4l) = crow + r*ldb + j*4 + 16l
  const cRow = (r: number) => [...get(CROW), ...get(LDB), ...i32c(r), ...i32mul, ...i32add, ...get(J), ...i32c(2), ...i32shl, ...i32add];
  code.push(...get(ACC), 0x04, VOID);
  for (let r = 0; r < 4; r++) for (let l = 0; l < lanes; l++) code.push(...get(S[r * lanes + l]!), ...cRow(r), ...v128load(16 * l), ...f32x4add, ...set(S[r * lanes + l]!));
  code.push(...end);
  for (let r = 0; r < 4; r++) for (let l = 0; l < lanes; l++) code.push(...cRow(r), ...get(S[r * lanes + l]!), ...v128store(16 * l));
  code.push(...get(J), ...i32c(4 * lanes), ...i32add, ...set(J));
  return code;
}

/** One column j with a scalar f32 accumulator. */
const scalarColumn = [
  ...f32zero,
  ...set(F),
  ...startP,
  ...block,
  ...loop,
  ...get(P),
  ...get(K),
  ...i32geS,
  ...brIf(1),
  ...get(F),
  ...get(PA),
  ...f32load(),
  ...get(PB),
  ...f32load(),
  ...f32mul,
  ...f32add,
  ...set(F),
  ...stepP,
  ...br(0),
  ...end,
  ...end,
  ...get(ACC),
  0x04,
  VOID,
  ...get(F),
  ...cAt,
  ...f32load(),
  ...f32add,
  ...set(F),
  ...end,
  ...cAt,
  ...get(F),
  ...f32store(),
  ...get(J),
  ...i32c(1),
  ...i32add,
  ...set(J),
];

/** while (j + width <= n) { body } */
function columnLoop(width: number, body: number[]): number[] {
  return [...block, ...loop, ...get(J), ...i32c(width), ...i32add, ...get(N), ...i32gtS, ...brIf(1), ...body, ...br(0), ...end, ...end];
}

function gemmBody(): number[] {
  const code: number[] = [];
  // ldb = n*4; sai, sap in bytes
  code.push(...get(N), ...i32c(2), ...i32shl, ...set(LDB));
  code.push(...get(SAI), ...i32c(2), ...i32shl, ...set(SAI));
  code.push(...get(SAP), ...i32c(2), ...i32shl, ...set(SAP));
  const rowPointers = (r: number) => [
    ...get(A), ...get(I), ...i32c(r), ...i32add, ...get(SAI), ...i32mul, ...i32add, ...set(AROW),
    ...get(C), ...get(I), ...i32c(r), ...i32add, ...get(LDB), ...i32mul, ...i32add, ...set(CROW),
  ];
  code.push(...i32c(0), ...set(I));
  // blocks of 4 rows: 4 x 8 and 4 x 4 tiles, then the last columns row by row
  code.push(...block, ...loop, ...get(I), ...i32c(4), ...i32add, ...get(M), ...i32gtS, ...brIf(1));
  code.push(...rowPointers(0), ...i32c(0), ...set(J));
  code.push(...columnLoop(8, tileColumns(2)));
  code.push(...columnLoop(4, tileColumns(1)));
  code.push(...get(J), ...set(JT));
  for (let r = 0; r < 4; r++) code.push(...rowPointers(r), ...get(JT), ...set(J), ...columnLoop(1, scalarColumn));
  code.push(...get(I), ...i32c(4), ...i32add, ...set(I), ...br(0), ...end, ...end);
  // the remaining rows one by one
  code.push(...block, ...loop, ...get(I), ...get(M), ...i32geS, ...brIf(1));
  code.push(...rowPointers(0), ...i32c(0), ...set(J));
  code.push(...columnLoop(16, vectorColumns(4)));
  code.push(...columnLoop(4, vectorColumns(1)));
  code.push(...columnLoop(1, scalarColumn));
  code.push(...get(I), ...i32c(1), ...i32add, ...set(I), ...br(0), ...end, ...end);
  return code;
}

const gemmBytes = (): Uint8Array =>
  moduleBytes([
    {
      name: "gemm",
      params: new Array<number>(9).fill(I32),
      locals: [
        [NUM_I32, I32],
        [NUM_V128, V128],
        [1, F32],
      ],
      body: gemmBody(),
    },
  ]);

export type GemmFn = (a: number, b: number, c: number, m: number, n: number, k: number, sai: number, sap: number, acc: number) => void;

let compiled: WasmModule | null | undefined;

/** The compiled module, or null where WebAssembly SIMD is unavailable. */
export function gemmModule(): WasmModule | null {
  if (compiled !== undefined) return compiled;
  try {
    compiled = WA ? new WA.Module(gemmBytes()) : null;
  } catch {
    compiled = null;
  }
  return compiled;
}

export interface GemmInstance {
  memory: WasmMemory;
  gemm: GemmFn;
  /**
   * The same product, its rows shared with a worker thread in 4-row chunks when the thread
   * policy says that pays for its size (rows are independent, so the results are the same
   * bits); made by `gemm` on this thread otherwise.
   */
  split: GemmFn;
}

/**
 * A shared memory of at least `bytes` bytes with a gemm instance working on it; with
 * `threads`, the instance is also registered with the worker threads for `split`.
 */
export function gemmInstance(bytes: number, threads = false): GemmInstance {
  const mod = gemmModule();
  if (!mod || !WA) throw new Error("WebAssembly SIMD is not available");
  const memory = sharedMemory(bytes);
  const gemm = new WA.Instance(mod, { env: { memory } }).exports.gemm as GemmFn;
  const id = threads ? registerExtraKernel(mod, memory, "gemm", gemm) : null;
  if (id === null) return { memory, gemm, split: gemm };
  const split: GemmFn = (a, b, c, m, n, k, sai, sap, acc) => runRowChunks(id, gemm, [a, b, c, m, n, k, sai, sap, acc], 4);
  return { memory, gemm, split };
}
