// Single-precision GEMM for WebAssembly SIMD (128-bit, f32x4), GotoBLAS/BLIS blocking.
//
//   C (m x n) = op(A) (m x k) * op(B) (k x n), row-major, leading dims in elements.
//
// Blocking scheme (loops from outside in):
//   jc: columns of C in blocks of NC      -> B block KC x NC packed once (lives in L2/L3)
//   pc: the k dimension in blocks of KC   -> first block stores C, later blocks accumulate
//   ic: rows of C in blocks of MC         -> A block MC x KC packed (lives in L2)
//   jr: NR-wide micro-panels of packed B  (KC x NR = 8 KiB, stays in L1)
//   ir: MR-tall micro-panels of packed A  -> MR x NR register-blocked microkernel
// Packed panels are k-major ("for each p: MR values of A" / "NR values of B") and zero
// padded at the edges, so the microkernel never branches; partial edge tiles are computed
// into a small scratch tile and then copied into C. Transposition is handled entirely by
// the packing routines, so all four trans combinations run the same microkernel.
// The microkernel is MR=4 x NR=8: 8 f32x4 accumulators + 2 B vectors + 1 broadcast A value,
// which fits the 16 XMM registers V8 uses on x64 without spills.
// The workspace `ws` (per thread) must hold wsBytes() bytes.

// @ts-ignore: decorator
@inline export const MR: i32 = 4;
// @ts-ignore: decorator
@inline export const NR: i32 = 8;
// @ts-ignore: decorator
@inline export const MC: i32 = 128;
// @ts-ignore: decorator
@inline export const KC: i32 = 256;
// @ts-ignore: decorator
@inline export const NC: i32 = 1024;

export function wsBytes(): i32 {
  return (MC * KC + KC * NC + MR * NR) * 4 + 64;
}

// Pack rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-row panels.
function packA(a: usize, lda: i32, transA: bool, i0: i32, p0: i32, mc: i32, kc: i32, dst: usize): void {
  for (let ir = 0; ir < mc; ir += MR) {
    const rows = min(MR, mc - ir);
    const panel = dst + <usize>(ir * kc) * 4;
    if (transA) {
      // op(A)(i, p) = a[p*lda + i]: MR consecutive floats per p
      let src = a + (<usize>p0 * lda + <usize>(i0 + ir)) * 4;
      if (rows == MR) {
        for (let p = 0; p < kc; p++) {
          v128.store(panel + <usize>(p * MR) * 4, v128.load(src));
          src += <usize>lda * 4;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const d = panel + <usize>(p * MR) * 4;
          for (let r = 0; r < MR; r++) store<f32>(d + <usize>r * 4, r < rows ? load<f32>(src + <usize>r * 4) : 0);
          src += <usize>lda * 4;
        }
      }
    } else {
      // op(A)(i, p) = a[i*lda + p]: gather one float from each of MR rows per p
      for (let r = 0; r < MR; r++) {
        if (r < rows) {
          let src = a + (<usize>(i0 + ir + r) * lda + <usize>p0) * 4;
          let d = panel + <usize>r * 4;
          for (let p = 0; p < kc; p++) {
            store<f32>(d, load<f32>(src));
            src += 4; d += MR * 4;
          }
        } else {
          let d = panel + <usize>r * 4;
          for (let p = 0; p < kc; p++) { store<f32>(d, 0); d += MR * 4; }
        }
      }
    }
  }
}

// Pack rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into NR-column panels.
function packB(b: usize, ldb: i32, transB: bool, p0: i32, j0: i32, kc: i32, nc: i32, dst: usize): void {
  for (let jr = 0; jr < nc; jr += NR) {
    const cols = min(NR, nc - jr);
    const panel = dst + <usize>(jr * kc) * 4;
    if (!transB) {
      // op(B)(p, j) = b[p*ldb + j]: NR consecutive floats per p
      let src = b + (<usize>p0 * ldb + <usize>(j0 + jr)) * 4;
      if (cols == NR) {
        for (let p = 0; p < kc; p++) {
          const d = panel + <usize>(p * NR) * 4;
          v128.store(d, v128.load(src));
          v128.store(d, v128.load(src, 16), 16);
          src += <usize>ldb * 4;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const d = panel + <usize>(p * NR) * 4;
          for (let j = 0; j < NR; j++) store<f32>(d + <usize>j * 4, j < cols ? load<f32>(src + <usize>j * 4) : 0);
          src += <usize>ldb * 4;
        }
      }
    } else {
      // op(B)(p, j) = b[j*ldb + p]
      for (let j = 0; j < NR; j++) {
        let d = panel + <usize>j * 4;
        if (j < cols) {
          let src = b + (<usize>(j0 + jr + j) * ldb + <usize>p0) * 4;
          for (let p = 0; p < kc; p++) { store<f32>(d, load<f32>(src)); src += 4; d += NR * 4; }
        } else {
          for (let p = 0; p < kc; p++) { store<f32>(d, 0); d += NR * 4; }
        }
      }
    }
  }
}

// MR x NR microkernel: tile(c, ldcBytes) (+)= packedA panel * packedB panel over kc steps.
// @ts-ignore: decorator
@inline function kernel(kc: i32, pa: usize, pb: usize, c: usize, ldc: usize, accumulate: bool): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  for (let p = 0; p < kc; p++) {
    const b0 = v128.load(pb), b1 = v128.load(pb, 16);
    let a = v128.load32_splat(pa);
    c00 = f32x4.add(c00, f32x4.mul(a, b0)); c01 = f32x4.add(c01, f32x4.mul(a, b1));
    a = v128.load32_splat(pa, 4);
    c10 = f32x4.add(c10, f32x4.mul(a, b0)); c11 = f32x4.add(c11, f32x4.mul(a, b1));
    a = v128.load32_splat(pa, 8);
    c20 = f32x4.add(c20, f32x4.mul(a, b0)); c21 = f32x4.add(c21, f32x4.mul(a, b1));
    a = v128.load32_splat(pa, 12);
    c30 = f32x4.add(c30, f32x4.mul(a, b0)); c31 = f32x4.add(c31, f32x4.mul(a, b1));
    pa += MR * 4; pb += NR * 4;
  }
  if (accumulate) {
    c00 = f32x4.add(c00, v128.load(c)); c01 = f32x4.add(c01, v128.load(c, 16)); c += ldc;
    c10 = f32x4.add(c10, v128.load(c)); c11 = f32x4.add(c11, v128.load(c, 16)); c += ldc;
    c20 = f32x4.add(c20, v128.load(c)); c21 = f32x4.add(c21, v128.load(c, 16)); c += ldc;
    c30 = f32x4.add(c30, v128.load(c)); c31 = f32x4.add(c31, v128.load(c, 16));
    c -= ldc * 3;
  }
  v128.store(c, c00); v128.store(c, c01, 16); c += ldc;
  v128.store(c, c10); v128.store(c, c11, 16); c += ldc;
  v128.store(c, c20); v128.store(c, c21, 16); c += ldc;
  v128.store(c, c30); v128.store(c, c31, 16);
}

function fullTile(kc: i32, pa: usize, pb: usize, c: usize, ldc: usize, accumulate: bool): void {
  kernel(kc, pa, pb, c, ldc, accumulate);
}

// Edge tile: compute the whole MR x NR tile into scratch, then copy the valid rows x cols.
function edgeTile(kc: i32, pa: usize, pb: usize, c: usize, ldc: usize, rows: i32, cols: i32, accumulate: bool, tile: usize): void {
  kernel(kc, pa, pb, tile, NR * 4, false);
  for (let r = 0; r < rows; r++) {
    const crow = c + <usize>r * ldc, trow = tile + <usize>(r * NR) * 4;
    for (let j = 0; j < cols; j++) {
      const v = load<f32>(trow + <usize>j * 4);
      store<f32>(crow + <usize>j * 4, accumulate ? load<f32>(crow + <usize>j * 4) + v : v);
    }
  }
}

/** C = op(A) op(B). Pointers are byte addresses in linear memory; ld* in elements. */
export function sgemm(a: usize, b: usize, c: usize, m: i32, n: i32, k: i32,
                      lda: i32, ldb: i32, ldc: i32, transA: bool, transB: bool, ws: usize): void {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (let i = 0; i < m; i++) memory.fill(c + <usize>i * ldc * 4, 0, <usize>n * 4);
    return;
  }
  ws = (ws + 63) & ~<usize>63;
  const pA = ws;
  const pB = pA + <usize>(MC * KC) * 4;
  const tile = pB + <usize>(KC * NC) * 4;
  const ldcB = <usize>ldc * 4;
  for (let jc = 0; jc < n; jc += NC) {
    const nc = min(NC, n - jc);
    for (let pc = 0; pc < k; pc += KC) {
      const kc = min(KC, k - pc);
      const acc = pc > 0;
      packB(b, ldb, transB, pc, jc, kc, nc, pB);
      for (let ic = 0; ic < m; ic += MC) {
        const mc = min(MC, m - ic);
        packA(a, lda, transA, ic, pc, mc, kc, pA);
        for (let jr = 0; jr < nc; jr += NR) {
          const cols = min(NR, nc - jr);
          const pb = pB + <usize>(jr * kc) * 4;
          for (let ir = 0; ir < mc; ir += MR) {
            const rows = min(MR, mc - ir);
            const pa = pA + <usize>(ir * kc) * 4;
            const cp = c + (<usize>(ic + ir) * ldc + <usize>(jc + jr)) * 4;
            if (rows == MR && cols == NR) fullTile(kc, pa, pb, cp, ldcB, acc);
            else edgeTile(kc, pa, pb, cp, ldcB, rows, cols, acc, tile);
          }
        }
      }
    }
  }
}
