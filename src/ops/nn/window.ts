/** Shared 2-D window geometry of convolution and pooling: padding modes, strides, dilations, output sizes. */
import { ShapeError, ValueError } from "../../core/errors.js";
import { dimsCompatible, fmtShape, type Shape } from "../../core/shape.js";

/** Zero padding of the two spatial dimensions: a mode, one number for all sides, [h, w], or [[top, bottom], [left, right]]. */
export type Padding2d = "valid" | "same" | number | readonly [number, number] | readonly [readonly [number, number], readonly [number, number]];

export type Pair = [number, number];
export type Pads = [number, number, number, number];

export function isInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v);
}

/** A number or a pair of integers >= min, as a pair. */
export function intPair(op: string, what: string, v: unknown, min: number): Pair {
  const pair = typeof v === "number" ? [v, v] : v;
  if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((d) => isInt(d) && d >= min)) {
    throw new ValueError(`${what} must be an integer >= ${min} or a pair of them, got ${JSON.stringify(v)}`, op);
  }
  return [pair[0], pair[1]];
}

export function checkRank4(op: string, what: string, shape: Shape, layout: string): void {
  if (shape.length !== 4) {
    throw new ShapeError(`${what} must be 4-D (${layout}), got shape ${fmtShape(shape)} of rank ${shape.length}`, op);
  }
}

export function checkSpatial(op: string, x: Shape): void {
  const small = (d: number) => d >= 0 && d < 1; // an unknown size (staging, -1) is checked when the graph runs
  if (small(x[2]!) || small(x[3]!)) throw new ShapeError(`input x has shape ${fmtShape(x)}: its spatial dimensions (H, W) must be at least 1`, op);
}

/** Effective extent of a dilated kernel. */
export const effective = (k: number, d: number): number => d * (k - 1) + 1;

/** Output size of a strided window over a padded dimension (the window must fit). */
export const windows = (size: number, before: number, after: number, keff: number, s: number): number =>
  size < 0 ? -1 : Math.floor((size + before + after - keff) / s) + 1;

/** The ShapeError of an op that needs a spatial (or other) size that is unknown while staging. */
export function unknownSizeError(op: string, what: string, shape: Shape): ShapeError {
  return new ShapeError(
    `${what} needs the size of every dimension it uses, but the input has shape ${fmtShape(shape)}, where -1 is a size unknown while the ` +
      `function is staged with null inputSignature dimensions; give the inputSignature concrete sizes for them`,
    op,
  );
}

/**
 * Resolves a padding spec to explicit [top, left, bottom, right]. "same" pads (as TensorFlow)
 * so that the output has ceil(in / stride) elements, the extra element (if any) after.
 */
export function resolvePads(op: string, padding: Padding2d | undefined, inHW: Pair, keff: Pair, strides: Pair, xShape: Shape): Pads {
  const p = padding ?? "valid";
  if (p === "valid") return [0, 0, 0, 0];
  if (p === "same") {
    if (inHW[0] < 0 || inHW[1] < 0) throw unknownSizeError(op, `padding "same" (whose pads depend on the input's height and width)`, xShape);
    const [t, b] = samePads(inHW[0], keff[0], strides[0]);
    const [l, r] = samePads(inHW[1], keff[1], strides[1]);
    return [t, l, b, r];
  }
  if (typeof p === "number" || (Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === "number"))) {
    const [h, w] = intPair(op, "padding", p, 0);
    return [h, w, h, w];
  }
  if (Array.isArray(p) && p.length === 2 && p.every((v) => Array.isArray(v) && v.length === 2 && v.every((d: unknown) => isInt(d) && d >= 0))) {
    const [[t, b], [l, r]] = p as [[number, number], [number, number]];
    return [t, l, b, r];
  }
  throw new ValueError(
    `padding must be "valid", "same", a non-negative integer, [h, w] or [[top, bottom], [left, right]], got ${JSON.stringify(padding)}`,
    op,
  );
}

export function samePads(size: number, keff: number, s: number): Pair {
  const out = Math.ceil(size / s);
  const total = Math.max(0, (out - 1) * s + keff - size);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

export function checkPads(op: string, pads: readonly number[]): void {
  if (!Array.isArray(pads) || pads.length !== 4 || !pads.every((d) => isInt(d) && d >= 0)) {
    throw new ValueError(`pads must be 4 non-negative integers [top, left, bottom, right], got ${JSON.stringify(pads)}`, op);
  }
}

export function checkPairAttr(op: string, what: string, v: readonly number[], min: number): void {
  if (!Array.isArray(v) || v.length !== 2 || !v.every((d) => isInt(d) && d >= min)) {
    throw new ValueError(`${what} must be a pair of integers >= ${min}, got ${JSON.stringify(v)}`, op);
  }
}

/** Throws unless the (dilated) kernel fits the padded input in both spatial dimensions. */
export function checkKernelFits(op: string, H: number, W: number, pads: Pads, keff: Pair, xShape: Shape, kernelDesc: string): void {
  const ph = H + pads[0] + pads[2], pw = W + pads[1] + pads[3];
  if ((H >= 0 && keff[0] > ph) || (W >= 0 && keff[1] > pw)) {
    throw new ShapeError(
      `${kernelDesc} (effective size ${keff[0]}x${keff[1]}) is larger than the padded input ` +
        `(${ph}x${pw}: input shape ${fmtShape(xShape)}, pads [top, left, bottom, right] = ${JSON.stringify(pads)})`,
      op,
    );
  }
}

export function shapesCompatible(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => dimsCompatible(d, b[i]!));
}
