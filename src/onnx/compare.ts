/**
 * Tolerance comparison of tensors, as ONNX's backend test runner does it: floats match when
 * |actual - expected| <= atol + rtol * |expected| (NaN matches NaN, infinities match their
 * own sign); integers and booleans match exactly; dtypes and shapes must be equal. Used by the
 * conformance runner, the real-model tests, and the export checks against onnxruntime.
 */
import type { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { fmtShape } from "../core/shape.js";

export interface Tolerance {
  rtol: number;
  atol: number;
}

/** ONNX's backend node tests. */
export const NODE_TEST_TOLERANCE: Tolerance = { rtol: 1e-3, atol: 1e-7 };
/** Whole models (real-models/ README). */
export const MODEL_TOLERANCE: Tolerance = { rtol: 1e-3, atol: 1e-5 };

/** null when `actual` matches `expected`, else a sentence saying where and by how much it does not. */
export function mismatch(actual: Tensor, expected: Tensor, tol: Tolerance = NODE_TEST_TOLERANCE): string | null {
  const t = typeMismatch(actual, expected);
  if (t !== null) return t;
  const a = actual.dataSync();
  const e = expected.dataSync();
  const float = isFloat(expected.dtype);
  let bad = 0;
  let first = -1;
  let worst = 0;
  for (let i = 0; i < e.length; i++) {
    const x = a[i]!;
    const y = e[i]!;
    if (float ? floatMatches(x, y, tol) : x === y) continue;
    bad++;
    if (first < 0) first = i;
    if (float && Number.isFinite(y) && Math.abs(x - y) > worst) worst = Math.abs(x - y);
  }
  if (bad === 0) return null;
  const detail = float && worst > 0 ? `, largest difference ${worst.toPrecision(3)}` : "";
  return `${bad} of ${e.length} elements differ (first at flat index ${first}: ${a[first]} vs expected ${e[first]}${detail})`;
}

/** Whether float `actual` matches `expected`: within atol + rtol * |expected|; NaN matches NaN, an infinity only itself. */
export function floatMatches(actual: number, expected: number, tol: Tolerance): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(actual);
  if (!Number.isFinite(expected)) return actual === expected;
  return Math.abs(actual - expected) <= tol.atol + tol.rtol * Math.abs(expected);
}

/** null when `actual` has `expected`'s dtype and shape exactly, else a sentence saying how it differs. */
export function typeMismatch(actual: Tensor, expected: Tensor): string | null {
  if (actual.dtype !== expected.dtype) return `dtype ${actual.dtype}, expected ${expected.dtype}`;
  if (actual.rank !== expected.rank || actual.shape.some((d, i) => d !== expected.shape[i])) return `shape ${fmtShape(actual.shape)}, expected ${fmtShape(expected.shape)}`;
  return null;
}

/** Whether the tensors match within the tolerance. */
export function allClose(actual: Tensor, expected: Tensor, tol: Tolerance = NODE_TEST_TOLERANCE): boolean {
  return mismatch(actual, expected, tol) === null;
}
