/**
 * Linear algebra: matmul (batch broadcasting, transpose flags), dot, outer, einsum.
 *
 * `matmul` is the one registry op here. Its operands have rank >= 2 at the op level
 * ([...batch, m, k] x [...batch, k, n], batch dims broadcast NumPy-style); the public function
 * promotes rank-1 operands as NumPy does (a vector on the left is a row, on the right a
 * column, and that dimension is dropped from the result), so the op itself, its VJP and
 * exporters only ever see matrices. The VJP is matmul with transpose flags (no explicit
 * transposes), summed over broadcast batch dims back to each input's shape.
 *
 * `dot`, `outer` and `einsum` are compositions of registry ops (matmul, mul, sum, reshape,
 * transpose, broadcastTo): they need no VJP of their own and are differentiable, to any order,
 * through those ops.
 */
import { promoteTypes, type DType, type TypedArray } from "../core/dtype.js";
import { DtypeError, ShapeError, ValueError } from "../core/errors.js";
import { broadcastShapes, broadcastStrides, dimsCompatible, fmtShape, shapesEqual, sizeOf, type Shape } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { matmul as matmulKernel, productStorage } from "../backends/cpu/matmul.js";
import { applyOp1, defineOp, needsCotangent } from "./registry.js";
import { toTensor } from "./convert.js";
import { installMethods } from "./methods.js";
import { cast } from "./cast.js";
import { mul } from "./binary.js";
import { sum, sumTo } from "./reduce.js";
import { broadcastTo, expandDims, reshape, squeeze, transpose } from "./shape.js";
import { eye } from "./creation.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { mathGpu } from "../backends/webgpu/op-kernels/math.js";
import { matmulBatch } from "./batching.js";

// ---------------------------------------------------------------------------------------
// matmul

export interface MatmulAttrs {
  transposeA: boolean;
  transposeB: boolean;
}

export interface MatmulOptions {
  /** Use the transpose of the last two dims of `a` (ignored for a rank-1 `a`). */
  transposeA?: boolean;
  /** Use the transpose of the last two dims of `b` (ignored for a rank-1 `b`). */
  transposeB?: boolean;
}

const MATMUL_OPTIONS = optionKeys<MatmulOptions>()("transposeA", "transposeB");
const MATMUL_DTYPES: readonly DType[] = ["float32", "float64", "int32", "int64"];

/** The dtype products are computed in: bool and integers narrower than 32 bits as int32, unsigned 32/64-bit as int64. */
function productDtype(d: DType): DType {
  if (d === "bool" || d === "uint8" || d === "int8" || d === "int16" || d === "uint16") return "int32";
  if (d === "uint32" || d === "uint64") return "int64";
  return d;
}

function flagsText(tA: boolean, tB: boolean): string {
  const f = [tA ? "transposeA" : "", tB ? "transposeB" : ""].filter(Boolean);
  return f.length > 0 ? ` (with ${f.join(", ")})` : "";
}

/** Infers [...batch, m, n] for op(A) @ op(B); names both shapes in errors. */
function matmulShape(a: Shape, b: Shape, tA: boolean, tB: boolean, shownA: Shape = a, shownB: Shape = b): number[] {
  if (a.length < 2 || b.length < 2) {
    throw new ShapeError(`operands must have rank >= 2 at the op level, got ${fmtShape(a)} and ${fmtShape(b)}`, "matmul");
  }
  const ra = a.length,
    rb = b.length;
  const m = tA ? a[ra - 1]! : a[ra - 2]!;
  const ka = tA ? a[ra - 2]! : a[ra - 1]!;
  const kb = tB ? b[rb - 1]! : b[rb - 2]!;
  const n = tB ? b[rb - 2]! : b[rb - 1]!;
  if (!dimsCompatible(ka, kb)) {
    throw new ShapeError(
      `inner dimensions do not match: ${fmtShape(shownA)} @ ${fmtShape(shownB)}${flagsText(tA, tB)} contracts ${ka} with ${kb}`,
      "matmul",
    );
  }
  const batch = broadcastBatch(a.slice(0, ra - 2), b.slice(0, rb - 2), shownA, shownB);
  return [...batch, m, n];
}

function broadcastBatch(a: Shape, b: Shape, shownA: Shape, shownB: Shape): number[] {
  return broadcastShapes("matmul", a, b, () => `batch dimensions ${fmtShape(a)} and ${fmtShape(b)} of ${fmtShape(shownA)} and ${fmtShape(shownB)} cannot be broadcast together`);
}

/** Start offset of each output batch's matrix in an operand of shape [...batch, r, c]. */
function batchOffsets(shape: Shape, outBatch: Shape): Float64Array {
  const batch = shape.slice(0, shape.length - 2);
  const matSize = shape[shape.length - 2]! * shape[shape.length - 1]!;
  const nb = sizeOf(outBatch);
  const offsets = new Float64Array(nb);
  const rank = outBatch.length;
  if (rank === 0 || nb === 0) return offsets;
  const strides = broadcastStrides(batch, outBatch);
  const counters = new Array<number>(rank).fill(0);
  let off = 0;
  for (let i = 0; i < nb; i++) {
    offsets[i] = off * matSize;
    for (let d = rank - 1; d >= 0; d--) {
      counters[d]!++;
      off += strides[d]!;
      if (counters[d]! < outBatch[d]!) break;
      off -= counters[d]! * strides[d]!;
      counters[d] = 0;
    }
  }
  return offsets;
}

/** Integer matmul (int32 wraps like int32 arithmetic; int64 is exact up to 2^53). */
function matmulInt(dtype: DType, a: TypedArray, aOff: ArrayLike<number>, b: TypedArray, bOff: ArrayLike<number>, out: TypedArray, m: number, k: number, n: number, tA: boolean, tB: boolean): void {
  const sai = tA ? 1 : k,
    sap = tA ? m : 1;
  const sbp = tB ? 1 : n,
    sbj = tB ? k : 1;
  const i32 = dtype === "int32";
  for (let t = 0; t < aOff.length; t++) {
    const ao = aOff[t]!,
      bo = bOff[t]!,
      oo = t * m * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        const ar = ao + i * sai,
          bc = bo + j * sbj;
        if (i32) for (let p = 0; p < k; p++) s = (s + Math.imul(a[ar + p * sap]!, b[bc + p * sbp]!)) | 0;
        else for (let p = 0; p < k; p++) s += a[ar + p * sap]! * b[bc + p * sbp]!;
        out[oo + i * n + j] = s;
      }
    }
  }
}

export const matmulOp = defineOp<MatmulAttrs>({
  name: "matmul",
  batch: matmulBatch,
  family: "linalg",
  inputs: ["a", "b"],
  product: (attrs) => ({ transposeA: !!attrs.transposeA, transposeB: !!attrs.transposeB }),
  infer(inputs, attrs) {
    const [a, b] = inputs as [(typeof inputs)[0], (typeof inputs)[0]];
    if (a!.dtype !== b!.dtype) throw new DtypeError(`operands must have the same dtype, got ${a!.dtype} and ${b!.dtype}`, "matmul");
    if (!MATMUL_DTYPES.includes(a!.dtype)) {
      throw new DtypeError(`supports ${MATMUL_DTYPES.join(", ")} operands, got ${a!.dtype}`, "matmul");
    }
    return [{ shape: matmulShape(a!.shape, b!.shape, attrs.transposeA, attrs.transposeB), dtype: a!.dtype }];
  },
  kernels: {
    webgpu: mathGpu.matmul,
    cpu(inputs, attrs, outs) {
      const [a, b] = inputs as [Tensor, Tensor];
      const o = outs[0]!;
      const rank = o.shape.length;
      const m = o.shape[rank - 2]!,
        n = o.shape[rank - 1]!;
      const k = attrs.transposeA ? a.shape[a.rank - 2]! : a.shape[a.rank - 1]!;
      const outBatch = o.shape.slice(0, rank - 2);
      const aOff = batchOffsets(a.shape, outBatch);
      const bOff = batchOffsets(b.shape, outBatch);
      const d = o.dtype;
      // (every kernel below writes every element, so a large output is not cleared first; int64 is stored as float64)
      const out = d === "int32" ? new Int32Array(sizeOf(o.shape)) : productStorage(d === "float32" ? "float32" : "float64", sizeOf(o.shape));
      if (out.length === 0) return [out];
      if (d === "float32" || d === "float64") {
        matmulKernel(d, a.concrete(), aOff, b.concrete(), bOff, out, m, k, n, attrs.transposeA, attrs.transposeB);
      } else {
        matmulInt(d, a.concrete(), aOff, b.concrete(), bOff, out, m, k, n, attrs.transposeA, attrs.transposeB);
      }
      return [out];
    },
  },
  vjp(ctx, cts) {
    const [a, b] = ctx.inputs as [Tensor, Tensor];
    const dc = cts[0]!;
    const { transposeA: tA, transposeB: tB } = ctx.attrs;
    const mm = (x: Tensor, y: Tensor, ta: boolean, tb: boolean) => applyOp1(matmulOp, [x, y], { transposeA: ta, transposeB: tb });
    // each computed only where its cotangent is used (ctx.needs)
    const da = (): Tensor =>
      !tA && !tB ? mm(dc, b, false, true) // dC B^T
      : tA && !tB ? mm(b, dc, false, true) // (dC B^T)^T = B dC^T
      : !tA && tB ? mm(dc, b, false, false) // dC B
      : mm(b, dc, true, true); // (dC B)^T = B^T dC^T
    const db = (): Tensor =>
      !tA && !tB ? mm(a, dc, true, false) // A^T dC
      : tA && !tB ? mm(a, dc, false, false) // A dC
      : !tA && tB ? mm(dc, a, true, false) // (A^T dC)^T = dC^T A
      : mm(dc, a, true, true); // (A dC)^T = dC^T A^T
    return [needsCotangent(ctx, 0) ? sumTo(da(), a) : null, needsCotangent(ctx, 1) ? sumTo(db(), b) : null];
  },
});

/**
 * Matrix product op(a) @ op(b) with NumPy semantics: operands of rank >= 1; batch dims
 * (all but the last two) broadcast; a rank-1 `a` is a row vector and a rank-1 `b` a column
 * vector, and that dimension is dropped from the result. float32/float64/int32/int64
 * (bool and uint8 promote to int32; mixed dtypes promote).
 */
export function matmul(a: TensorLike, b: TensorLike, options: MatmulOptions = {}): Tensor {
  checkOptions("matmul", options, MATMUL_OPTIONS);
  let A = toTensor(a, "matmul");
  let B = toTensor(b, "matmul");
  if (A.rank === 0 || B.rank === 0) {
    throw new ShapeError(`operands must have rank >= 1 (use mul for scalars), got shapes ${fmtShape(A.shape)} and ${fmtShape(B.shape)}`, "matmul");
  }
  let dtype = promoteTypes(A.dtype, B.dtype);
  // float16 multiplies in float32 and rounds the result (as onnxruntime's CPU kernels do).
  if (dtype === "float16") return cast(matmul(cast(A, "float32"), cast(B, "float32"), options), "float16");
  dtype = productDtype(dtype);
  A = cast(A, dtype);
  B = cast(B, dtype);
  const shownA = A.shape,
    shownB = B.shape;
  const aVec = A.rank === 1,
    bVec = B.rank === 1;
  const tA = !aVec && !!options.transposeA;
  const tB = !bVec && !!options.transposeB;
  const aShape = aVec ? [1, A.shape[0]!] : A.shape;
  const bShape = bVec ? [B.shape[0]!, 1] : B.shape;
  const outShape = matmulShape(aShape, bShape, tA, tB, shownA, shownB); // validates with the user's shapes
  // Vector promotion with expandDims/squeeze (not reshape): no static sizes, so unknown dims work.
  if (aVec) A = expandDims(A, 0);
  if (bVec) B = expandDims(B, 1);
  const y = applyOp1(matmulOp, [A, B], { transposeA: tA, transposeB: tB });
  if (!aVec && !bVec) return y;
  const r = outShape.length;
  return squeeze(y, [...(aVec ? [r - 2] : []), ...(bVec ? [r - 1] : [])]);
}

// ---------------------------------------------------------------------------------------
// dot, outer

/**
 * NumPy's dot: a scalar operand multiplies; 1-D . 1-D is the inner product (a scalar); ranks
 * up to 2 follow matmul; otherwise the last axis of `a` is contracted with the second-to-last
 * of `b` (the last, if `b` is 1-D), giving a.shape[:-1] + b.shape[:-2] + b.shape[-1:].
 */
export function dot(a: TensorLike, b: TensorLike): Tensor {
  const A = toTensor(a, "dot");
  const B = toTensor(b, "dot");
  if (A.rank === 0 || B.rank === 0) return mul(A, B);
  const ka = A.shape[A.rank - 1]!;
  const kb = B.rank === 1 ? B.shape[0]! : B.shape[B.rank - 2]!;
  if (!dimsCompatible(ka, kb)) {
    throw new ShapeError(`shapes ${fmtShape(A.shape)} and ${fmtShape(B.shape)} are not aligned: ${ka} (last axis of a) != ${kb} (${B.rank === 1 ? "only" : "second-to-last"} axis of b)`, "dot");
  }
  if (A.rank <= 2 && B.rank <= 2) return matmul(A, B);
  if (A.rank + B.rank - 1 > LETTERS.length) throw new ShapeError(`operand ranks ${A.rank} and ${B.rank} are too large`, "dot");
  const la = LETTERS.slice(0, A.rank - 1);
  const lb = LETTERS.slice(A.rank - 1, A.rank + B.rank - 2);
  const k = "Z";
  const termB = B.rank === 1 ? k : lb.slice(0, B.rank - 2) + k + lb.slice(B.rank - 2);
  return einsum(`${la}${k},${termB}->${la}${lb}`, A, B);
}

/** Outer product of the flattened operands: out[i, j] = a[i] * b[j]. */
export function outer(a: TensorLike, b: TensorLike): Tensor {
  const A = toTensor(a, "outer");
  const B = toTensor(b, "outer");
  return mul(reshape(A, [-1, 1]), reshape(B, [1, -1]));
}

// ---------------------------------------------------------------------------------------
// einsum

const LETTERS = "abcdefghijklmnopqrstuvwxyABCDEFGHIJKLMNOPQRSTUVWXY"; // Z is kept free for dot

/** A label: a letter, or an internal name for one ellipsis dimension (e.g. "…0"). */
type Label = string;

interface Operand {
  t: Tensor;
  labels: Label[];
}

function einsumError(equation: string, message: string): ValueError {
  return new ValueError(`bad equation ${JSON.stringify(equation)}: ${message}`, "einsum");
}

/** Splits a term into letters and (at most one) ellipsis. */
function parseTerm(equation: string, term: string, what: string): (string | "...")[] {
  const out: (string | "...")[] = [];
  let i = 0;
  let sawEllipsis = false;
  while (i < term.length) {
    if (term.startsWith("...", i)) {
      if (sawEllipsis) throw einsumError(equation, `${what} ${JSON.stringify(term)} has more than one ellipsis`);
      sawEllipsis = true;
      out.push("...");
      i += 3;
      continue;
    }
    const c = term[i]!;
    if (!/^[a-zA-Z]$/.test(c)) throw einsumError(equation, `${what} ${JSON.stringify(term)} contains ${JSON.stringify(c)}; labels are letters a-z, A-Z (and "...")`);
    out.push(c);
    i++;
  }
  return out;
}

const ellipsisLabel = (i: number): Label => `\u2026${i}`;
const isEllipsisLabel = (l: Label): boolean => l.length > 1;

/**
 * Einstein summation over 1 or more operands, NumPy's notation: "ij,jk->ik" (matmul),
 * "bij,bjk->bik" (batched), "i,j->ij" (outer), "ii->" (trace), "ij->ji" (transpose),
 * "ij->i" (row sums), "i,i->" (dot), "...ij,...jk->...ik" (ellipsis batch dims, broadcast).
 * Without "->" the output is the labels used exactly once, in alphabetical order (after the
 * ellipsis dims). A label repeated within one operand takes its diagonal.
 *
 * Lowered to registry ops: diagonals are a mask multiply and a sum, labels only one operand
 * uses are summed first, then operands are contracted left to right, each pair by one
 * (batched) matmul, or a broadcast multiply when nothing is summed; so einsum is
 * differentiable through those ops.
 */
export function einsum(equation: string, ...operands: TensorLike[]): Tensor {
  if (typeof equation !== "string") throw new ValueError(`the equation must be a string, got ${typeof equation}`, "einsum");
  const eq = equation.replace(/\s+/g, "");
  const parts = eq.split("->");
  if (parts.length > 2) throw einsumError(equation, `more than one "->"`);
  const terms = parts[0]!.split(",");
  if (operands.length === 0) throw einsumError(equation, `no operands were given`);
  if (terms.length !== operands.length) {
    throw einsumError(equation, `it has ${terms.length} input term${terms.length === 1 ? "" : "s"} but ${operands.length} operand${operands.length === 1 ? " was" : "s were"} given`);
  }
  const tensors = operands.map((x) => toTensor(x, "einsum"));
  let dtype = tensors.map((t) => t.dtype).reduce(promoteTypes);
  if (dtype === "float16") return cast(einsum(equation, ...tensors.map((t) => cast(t, "float32"))), "float16");
  dtype = productDtype(dtype);

  // Labels per operand (ellipsis expanded, aligned from the right) and label sizes.
  const parsed = terms.map((t, i) => parseTerm(equation, t, `input term ${i}`));
  let ellRank = 0;
  const ops: Operand[] = parsed.map((p, i) => {
    const t = tensors[i]!;
    const explicit = p.filter((l) => l !== "...").length;
    const hasEll = p.includes("...");
    if (hasEll ? explicit > t.rank : explicit !== t.rank) {
      throw new ShapeError(
        `equation ${JSON.stringify(equation)}: term ${JSON.stringify(terms[i])} has ${explicit} label${explicit === 1 ? "" : "s"} but operand ${i} has shape ${fmtShape(t.shape)} (rank ${t.rank})`,
        "einsum",
      );
    }
    if (hasEll) ellRank = Math.max(ellRank, t.rank - explicit);
    return { t: cast(t, dtype), labels: [] };
  });
  ops.forEach((op, i) => {
    const p = parsed[i]!;
    const e = op.t.rank - p.filter((l) => l !== "...").length;
    for (const l of p) {
      if (l === "...") for (let j = 0; j < e; j++) op.labels.push(ellipsisLabel(ellRank - e + j));
      else op.labels.push(l);
    }
  });
  const sizes = new Map<Label, number>();
  const shapesText = (): string => ops.map((o, i) => `operand ${i}: ${fmtShape(o.t.shape)}`).join(", ");
  for (const op of ops) {
    op.labels.forEach((l, d) => {
      const s = op.t.shape[d]!;
      const prev = sizes.get(l);
      if (prev === undefined || prev === s) sizes.set(l, s);
      else if (prev < 0 || s < 0) {
        // An unknown size (staging) matches any; a known one tells the size, except that an
        // ellipsis dim of 1 may broadcast to the unknown one.
        sizes.set(l, isEllipsisLabel(l) && (prev === 1 || s === 1) ? -1 : Math.max(prev, s));
      } else if (isEllipsisLabel(l) && (prev === 1 || s === 1)) sizes.set(l, Math.max(prev, s));
      else {
        const what = isEllipsisLabel(l) ? `the ellipsis dimensions cannot be broadcast (${prev} vs ${s})` : `label ${JSON.stringify(l)} has sizes ${prev} and ${s}`;
        throw new ShapeError(`equation ${JSON.stringify(equation)}: ${what} (${shapesText()})`, "einsum");
      }
    });
  }

  // Output labels.
  const ellLabels = Array.from({ length: ellRank }, (_, i) => ellipsisLabel(i));
  let outLabels: Label[];
  if (parts.length === 2) {
    const p = parseTerm(equation, parts[1]!, "output term");
    outLabels = [];
    for (const l of p) {
      if (l === "...") outLabels.push(...ellLabels);
      else {
        if (!sizes.has(l)) throw einsumError(equation, `output label ${JSON.stringify(l)} does not appear in any input term`);
        if (outLabels.includes(l)) throw einsumError(equation, `output label ${JSON.stringify(l)} appears more than once`);
        outLabels.push(l);
      }
    }
  } else {
    const counts = new Map<string, number>();
    for (const p of parsed) for (const l of p) if (l !== "...") counts.set(l, (counts.get(l) ?? 0) + 1);
    const once = [...counts.entries()].filter(([, c]) => c === 1).map(([l]) => l).sort();
    outLabels = [...ellLabels, ...once];
  }

  // Diagonals, then labels no one else needs are summed; then pairwise contraction.
  let cur = sumUnneeded(takeDiagonals(ops[0]!), needed(ops, 0, outLabels));
  for (let i = 1; i < ops.length; i++) {
    const next = sumUnneeded(takeDiagonals(ops[i]!), needed(ops, i, outLabels, cur.labels));
    cur = contract(cur, next, needed(ops, i, outLabels));
  }
  cur = sumUnneeded(cur, new Set(outLabels));
  // Ellipsis dims summed away in one operand may have been broadcast in another.
  const shapeOut = outLabels.map((l) => sizes.get(l)!);
  let r = cur.t;
  if (!sameLabels(cur.labels, outLabels)) r = transpose(r, outLabels.map((l) => cur.labels.indexOf(l)));
  if (!shapesEqual(r.shape, shapeOut)) r = broadcastTo(r, shapeOut);
  return r;
}

const sameLabels = (a: readonly Label[], b: readonly Label[]): boolean => a.length === b.length && a.every((l, i) => l === b[i]);

/** Labels needed after operand `from` is folded in: the output's and those of operands > from. */
function needed(ops: Operand[], from: number, outLabels: Label[], also: Label[] = []): Set<Label> {
  const s = new Set<Label>(outLabels);
  for (let i = from + 1; i < ops.length; i++) for (const l of ops[i]!.labels) s.add(l);
  for (const l of also) s.add(l);
  return s;
}

/** Replaces each label repeated within the operand by its diagonal. */
function takeDiagonals(op: Operand): Operand {
  let t = op.t;
  const labels = op.labels.slice();
  for (;;) {
    let p = -1,
      q = -1;
    for (let i = 0; i < labels.length && p < 0; i++) {
      const j = labels.indexOf(labels[i]!, i + 1);
      if (j >= 0) [p, q] = [i, j];
    }
    if (p < 0) return { t, labels };
    const n = t.shape[p]! >= 0 ? t.shape[p]! : t.shape[q]!;
    if (n < 0) {
      throw new ShapeError(
        `taking the diagonal of label ${JSON.stringify(labels[p])} needs its size, but both axes ${p} and ${q} of shape ${fmtShape(t.shape)} are unknown (-1) ` +
          `while the function is staged with null inputSignature dimensions; give the inputSignature a concrete size for them`,
        "einsum",
      );
    }
    const maskShape = t.shape.map((_, d) => (d === p || d === q ? n : 1));
    const mask = reshape(eye(n, n, t.dtype), maskShape);
    t = sum(mul(t, mask), q);
    labels.splice(q, 1);
  }
}

/** Sums the operand over labels not in `keep`. */
function sumUnneeded(op: Operand, keep: Set<Label>): Operand {
  const axes: number[] = [];
  op.labels.forEach((l, d) => {
    if (!keep.has(l)) axes.push(d);
  });
  if (axes.length === 0) return op;
  return { t: sum(op.t, axes), labels: op.labels.filter((l) => keep.has(l)) };
}

function permuteTo(op: Operand, order: Label[]): Tensor {
  if (sameLabels(op.labels, order)) return op.t;
  return transpose(op.t, order.map((l) => op.labels.indexOf(l)));
}

/** Product of the label sizes; -1 when one is unknown (staging). */
const prodOf = (shape: Shape, labels: Label[], all: Label[]): number =>
  labels.reduce((p, l) => (p < 0 || shape[all.indexOf(l)]! < 0 ? -1 : p * shape[all.indexOf(l)]!), 1);

/**
 * reshape, skipped when the shape is already right: within einsum, equal shapes (unknown dims
 * included) come from the same labels, so no reshape (which allows one unknown dim) is needed.
 */
function reshapeIfNeeded(t: Tensor, shape: number[]): Tensor {
  return shapesEqual(t.shape, shape) ? t : reshape(t, shape);
}

/** Contracts two operands (each label appearing once in each), keeping labels in `keep`. */
function contract(a: Operand, b: Operand, keep: Set<Label>): Operand {
  const inB = new Set(b.labels);
  const inA = new Set(a.labels);
  const batch = a.labels.filter((l) => inB.has(l) && keep.has(l));
  const contracted = a.labels.filter((l) => inB.has(l) && !keep.has(l));
  const freeA = a.labels.filter((l) => !inB.has(l));
  const freeB = b.labels.filter((l) => !inA.has(l));
  let A = a.t,
    B = b.t;
  // A contracted (ellipsis) dim of size 1 on one side and n on the other: sum the other side.
  // (An unknown size, while staging, is taken to match a known size other than 1; summing a
  // side whose size is unknown against a 1 is right whether it is 1 or not.)
  for (const l of contracted) {
    const da = a.labels.indexOf(l),
      db = b.labels.indexOf(l);
    const na = A.shape[da]!,
      nb = B.shape[db]!;
    if (na === nb) continue;
    if (na === 1) B = sum(B, db, true);
    else if (nb === 1) A = sum(A, da, true);
    else if (na >= 0 && nb >= 0) A = sum(A, da, true);
  }
  a = { t: A, labels: a.labels };
  b = { t: B, labels: b.labels };
  const sizeIn = (op: Operand, l: Label) => op.t.shape[op.labels.indexOf(l)]!;
  if (contracted.length === 0) {
    // Broadcast multiply: A as [batch, freeA, 1...], B as [batch, 1..., freeB].
    const ta = permuteTo(a, [...batch, ...freeA]);
    const tb = permuteTo(b, [...batch, ...freeB]);
    const ra = expandDims(ta, freeB.map((_, i) => ta.rank + i));
    const rb = expandDims(tb, freeA.map((_, i) => batch.length + i));
    return { t: mul(ra, rb), labels: [...batch, ...freeA, ...freeB] };
  }
  // One matmul: A as [batch, M, K] (or [batch, K, M] with transposeA), B as [batch, K, N] (or [batch, N, K]).
  const orderA1 = [...batch, ...freeA, ...contracted];
  const orderA2 = [...batch, ...contracted, ...freeA];
  const tA = !sameLabels(a.labels, orderA1) && sameLabels(a.labels, orderA2);
  const orderB1 = [...batch, ...contracted, ...freeB];
  const orderB2 = [...batch, ...freeB, ...contracted];
  const tB = !sameLabels(b.labels, orderB1) && sameLabels(b.labels, orderB2);
  const pa = permuteTo(a, tA ? orderA2 : orderA1);
  const pb = permuteTo(b, tB ? orderB2 : orderB1);
  const batchA = batch.map((l) => sizeIn(a, l));
  const batchB = batch.map((l) => sizeIn(b, l));
  const M = prodOf(a.t.shape, freeA, a.labels);
  const N = prodOf(b.t.shape, freeB, b.labels);
  const K = prodOf(a.t.shape, contracted, a.labels);
  const ma = reshapeIfNeeded(pa, [...batchA, ...(tA ? [K, M] : [M, K])]);
  const mb = reshapeIfNeeded(pb, [...batchB, ...(tB ? [N, K] : [K, N])]);
  const y = applyOp1(matmulOp, [ma, mb], { transposeA: tA, transposeB: tB });
  const outBatch = y.shape.slice(0, batch.length);
  const r = reshapeIfNeeded(y, [...outBatch, ...freeA.map((l) => sizeIn(a, l)), ...freeB.map((l) => sizeIn(b, l))]);
  return { t: r, labels: [...batch, ...freeA, ...freeB] };
}

declare module "../core/tensor.js" {
  interface Tensor {
    matmul(b: TensorLike, options?: MatmulOptions): Tensor;
    dot(b: TensorLike): Tensor;
  }
}
installMethods({ matmul, dot });
