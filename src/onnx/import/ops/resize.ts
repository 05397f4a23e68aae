/**
 * ONNX Resize (and the older Upsample) as separable interpolation: along each resized axis
 * the source coordinates, neighbour indices and weights of every output position are computed
 * at trace time (the sizes are known), and the result is a weighted sum of gathers of the input,
 * one per kernel tap. Gather's gradient makes the whole thing differentiable. The arithmetic
 * follows ONNX's reference implementation (coordinate modes, nearest rounding modes, cubic
 * coefficients, antialiasing, exclude_outside, tf_crop_and_resize extrapolation).
 */
import type { Tensor } from "../../../core/tensor.js";
import { dtypeRange, isFloat } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

type Coeffs = (ratio: number, scale: number) => number[];

function nearestCoeffs(mode: string): Coeffs {
  return (ratio) => {
    if (Number.isInteger(ratio)) return [0, 1];
    switch (mode) {
      case "round_prefer_floor":
        return [ratio <= 0.5 ? 1 : 0, ratio > 0.5 ? 1 : 0];
      case "round_prefer_ceil":
        return [ratio < 0.5 ? 1 : 0, ratio >= 0.5 ? 1 : 0];
      case "floor":
        return [1, 0];
      default:
        return [0, 1];
    }
  };
}

const linearCoeffs: Coeffs = (ratio) => [1 - ratio, ratio];

function linearAntialias(ratio: number, scale: number): number[] {
  const s = Math.min(scale, 1);
  const start = Math.floor(-1 / s) + 1;
  const footprint = 2 - 2 * start;
  const c: number[] = [];
  for (let i = 0; i < footprint; i++) c.push(Math.min(Math.max(1 - Math.abs((start + i - ratio) * s), 0), 1));
  const total = c.reduce((p, q) => p + q, 0);
  return c.map((v) => v / total);
}

function cubicCoeffs(A: number): Coeffs {
  return (r) => [
    ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
    ((A + 2) * r - (A + 3)) * r * r + 1,
    ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
    ((A * (1 - r + 1) - 5 * A) * (1 - r + 1) + 8 * A) * (1 - r + 1) - 4 * A,
  ];
}

function cubicAntialias(A: number): Coeffs {
  return (ratio, scale) => {
    const s = Math.min(scale, 1);
    const coeff = (x0: number): number => {
      const x = Math.abs(x0);
      if (x <= 1) return (A + 2) * x ** 3 - (A + 3) * x * x + 1;
      if (x < 2) return A * x ** 3 - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0;
    };
    const iStart = Math.floor(-2 / s) + 1;
    const iEnd = 2 - iStart;
    const c: number[] = [];
    for (let i = iStart; i < iEnd; i++) c.push(coeff(s * (i - ratio)));
    const total = c.reduce((p, q) => p + q, 0);
    return c.map((v) => v / total);
  };
}

interface AxisPlan {
  /** [out][tap] source index (clamped) and weight. */
  idx: number[][];
  w: number[][];
  /** Output positions whose source is outside the input (tf_crop_and_resize), or null. */
  outside: boolean[] | null;
}

/** The taps of a 1-D resize of `inW` elements to `outW` with `scale` (as ONNX's reference computes them). */
function planAxis(n: NodeContext, inW: number, outW: number, scale: number, coeffs: Coeffs, mode: string, roi: [number, number] | null, excludeOutside: boolean): AxisPlan {
  const outF = scale * inW;
  const idx: number[][] = [];
  const w: number[][] = [];
  const outside: boolean[] = [];
  let anyOutside = false;
  for (let y = 0; y < outW; y++) {
    let x: number;
    switch (mode) {
      case "align_corners":
        x = outF === 1 ? 0 : (y * (inW - 1)) / (outF - 1);
        break;
      case "asymmetric":
        x = y / scale;
        break;
      case "tf_crop_and_resize": {
        if (roi === null) throw n.fail("tf_crop_and_resize needs roi");
        x = outF === 1 ? ((roi[1] - roi[0]) * (inW - 1)) / 2 : (y * (roi[1] - roi[0]) * (inW - 1)) / (outF - 1);
        x += roi[0] * (inW - 1);
        break;
      }
      case "pytorch_half_pixel":
        x = outF === 1 ? -0.5 : (y + 0.5) / scale - 0.5;
        break;
      case "half_pixel":
        x = (y + 0.5) / scale - 0.5;
        break;
      case "half_pixel_symmetric": {
        const adjustment = outW / outF;
        x = (inW / 2) * (1 - adjustment) + (y + 0.5) / scale - 0.5;
        break;
      }
      default:
        throw n.fail(`unknown coordinate_transformation_mode ${JSON.stringify(mode)}`);
    }
    const out = mode === "tf_crop_and_resize" && (x < 0 || x > inW - 1);
    outside.push(out);
    anyOutside ||= out;
    const xi = Math.floor(x);
    const ratio = x === xi ? 1 : x - xi;
    let c = coeffs(ratio, scale);
    const taps = c.length;
    const pad = Math.ceil(taps / 2);
    const xp = x + pad;
    const p = Math.floor(xp);
    const frac = xp - p;
    const offset = taps % 2 === 0 ? (frac === 0 ? -(taps / 2) : -(taps / 2) + 1) : frac <= 0.5 ? -((taps - 1) / 2) : -((taps - 1) / 2) + 1;
    const start = p + offset - pad;
    const neighbours = Array.from({ length: taps }, (_, k) => start + k);
    if (excludeOutside) {
      c = c.map((v, k) => (neighbours[k]! < 0 || neighbours[k]! >= inW ? 0 : v));
      const total = c.reduce((a, b) => a + b, 0) || 1;
      c = c.map((v) => v / total);
    }
    idx.push(neighbours.map((i) => Math.min(Math.max(i, 0), inW - 1)));
    w.push(c);
  }
  return { idx, w, outside: anyOutside ? outside : null };
}

/** Applies an axis plan: sum over taps of gather(x, idx[:, k], axis) * w[:, k]. */
function applyPlan(x: Tensor, axis: number, plan: AxisPlan, extrapolation: number): Tensor {
  const outW = plan.idx.length;
  const taps = plan.idx[0]?.length ?? 0;
  const shape = x.shape.map((d, i) => (i === axis ? outW : 1));
  let y: Tensor | null = null;
  for (let k = 0; k < taps; k++) {
    const ws = plan.w.map((row) => row[k]!);
    if (ws.every((v) => v === 0)) continue;
    const g = ops.gather(x, ops.tensor(plan.idx.map((row) => row[k]!), "int32"), axis);
    const term = ws.every((v) => v === 1) ? g : ops.mul(g, ops.tensor(ws, x.dtype, shape));
    y = y === null ? term : ops.add(y, term);
  }
  if (y === null) y = ops.full(x.shape.map((d, i) => (i === axis ? outW : d)), 0, x.dtype);
  if (plan.outside !== null) y = ops.where(ops.tensor(plan.outside, "bool", shape), extrapolation, y);
  return y;
}

function resize(n: NodeContext, x: Tensor, scalesIn: number[] | null, sizesIn: number[] | null, roiIn: number[] | null, mode: string, coordMode: string, nearestDefault = "round_prefer_floor"): Tensor {
  const r = x.rank;
  const axes = (n.ints("axes") ?? [...Array(r).keys()]).map((a) => (a < 0 ? a + r : a));
  let scales: number[] = new Array(r).fill(1);
  let sizes: number[] = x.shape.slice();
  let roi: number[] | null = null;
  if (roiIn !== null && roiIn.length > 0) {
    roi = [...new Array(r).fill(0), ...new Array(r).fill(1)];
    axes.forEach((d, i) => {
      roi![d] = roiIn[i]!;
      roi![r + d] = roiIn[axes.length + i]!;
    });
  }
  if (sizesIn !== null && sizesIn.length > 0) {
    if (sizesIn.length !== axes.length) throw n.fail(`sizes has ${sizesIn.length} entries for ${axes.length} axes`);
    axes.forEach((d, i) => (sizes[d] = sizesIn[i]!));
    scales = sizes.map((s, i) => s / x.shape[i]!);
    const policy = n.string("keep_aspect_ratio_policy", "stretch");
    if (policy !== "stretch") {
      const chosen = axes.map((d) => scales[d]!);
      const s = policy === "not_larger" ? Math.min(...chosen) : Math.max(...chosen);
      scales = scales.map((v, i) => (axes.includes(i) ? s : 1));
      sizes = x.shape.map((d, i) => (axes.includes(i) ? Math.floor(s * d + 0.5) : d));
    }
  } else if (scalesIn !== null && scalesIn.length > 0) {
    if (scalesIn.length !== axes.length) throw n.fail(`scales has ${scalesIn.length} entries for ${axes.length} axes`);
    axes.forEach((d, i) => (scales[d] = scalesIn[i]!));
    sizes = x.shape.map((d, i) => Math.floor(scales[i]! * d));
  } else throw n.fail("needs scales or sizes");
  if (scales.some((s) => !(s > 0))) throw n.fail(`scales must be positive, got [${scales.join(", ")}]`);
  n.checkShape(sizes);
  const antialias = n.int("antialias", 0) !== 0;
  const A = n.float("cubic_coeff_a", -0.75);
  const coeffs: Coeffs =
    mode === "nearest" ? nearestCoeffs(n.string("nearest_mode", nearestDefault)) : mode === "linear" ? (antialias ? linearAntialias : linearCoeffs) : mode === "cubic" ? (antialias ? cubicAntialias(A) : cubicCoeffs(A)) : (() => {
          throw n.fail(`unknown mode ${JSON.stringify(mode)}`);
        })();
  const excludeOutside = n.int("exclude_outside", 0) !== 0;
  const extrapolation = n.float("extrapolation_value", 0);
  const float = isFloat(x.dtype);
  let y = float ? x : ops.cast(x, "float32");
  for (const d of axes) {
    const axisRoi: [number, number] | null = roi === null ? null : [roi[d]!, roi[d + r]!];
    const identity = Math.abs(scales[d]! - 1) < 1e-9 && sizes[d] === y.shape[d] && (axisRoi === null || (axisRoi[0] === 0 && axisRoi[1] === 1));
    if (identity) continue;
    y = applyPlan(y, d, planAxis(n, y.shape[d]!, sizes[d]!, scales[d]!, coeffs, coordMode, axisRoi, excludeOutside), extrapolation);
  }
  if (float) return y === x ? ops.identity(x) : y;
  const [lo, hi] = dtypeRange(x.dtype);
  return ops.cast(ops.clip(y, lo, hi), x.dtype);
}

onnxOp("Resize", {
  constInputs: [1, 2, 3],
  run(n) {
    const x = n.input(0);
    const mode = n.string("mode", "nearest");
    if (n.opset < 11) return resize(n, x, n.knownNumbers(1, "scales"), null, null, mode, "asymmetric");
    const roi = n.hasInput(1) ? n.knownNumbers(1, "roi") : null;
    const scales = n.hasInput(2) ? n.knownNumbers(2, "scales") : null;
    const sizes = n.hasInput(3) ? n.knownInts(3, "sizes") : null;
    return resize(n, x, scales, sizes, roi, mode, n.string("coordinate_transformation_mode", "half_pixel"));
  },
});

onnxOp("Upsample", {
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const scales = n.hasInput(1) ? n.knownNumbers(1, "scales") : n.floats("scales");
    if (scales === undefined) throw n.fail("needs scales");
    // (Upsample's nearest neighbour is the one below: floor)
    return resize(n, x, scales, null, null, n.string("mode", "nearest"), "asymmetric", "floor");
  },
});
