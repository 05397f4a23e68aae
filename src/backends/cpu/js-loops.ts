/**
 * JavaScript source generators for the compiled executor (exec/): elementwise loops (one op or
 * a fused chain of them: their expressions rendered by js-expr.ts) specialized for concrete
 * shapes, small matrix products and reductions. They reproduce the eager kernels' arithmetic
 * exactly: every intermediate is rounded to its dtype as the eager kernel's store would round
 * it (Math.fround for float32, ToInt32 for int32, ToUint8 for uint8/bool), so a fused chain
 * gives bit-identical results to running its ops one by one.
 */
import { config } from "../../core/config.js";
import type { DType } from "../../core/dtype.js";
import type { ElementwiseStep, ReductionForm } from "../../core/expr.js";
import { broadcastStrides, sizeOf } from "../../core/shape.js";
import { jsSource, storeConversion } from "./js-expr.js";
import { combineExpr, firstExpr, REDUCTION_INIT } from "./reduce.js";

/** One scalar step of an elementwise loop (an expression for its dtype, attributes bound). */
export type LoopStep = ElementwiseStep;

export interface LoopInput {
  /** JS expression for the input's typed array. */
  array: string;
  shape: readonly number[];
}

export interface LoopOutput {
  /** JS expression for the output's typed array (assignable element-wise). */
  array: string;
  /** Loop value written: index < numInputs is an input, otherwise a step. */
  value: number;
}

/**
 * Generates a block computing `steps` elementwise over `outShape` (NumPy broadcasting of the
 * inputs) and storing the requested values. `id` makes local names unique.
 */
export function elementwiseSource(id: string, outShape: readonly number[], inputs: LoopInput[], steps: readonly LoopStep[], outputs: LoopOutput[]): string {
  const n = sizeOf(outShape);
  const numIn = inputs.length;
  if (n === 0) return "";
  const lines: string[] = [];
  // Which values need a local (used by a later step) and a conversion (steps used later).
  const usedLater = new Set<number>();
  for (const s of steps) for (const a of s.args) usedLater.add(a);
  const arr = (i: number) => `A${id}_${i}`;
  for (let i = 0; i < numIn; i++) lines.push(`const ${arr(i)} = ${inputs[i]!.array};`);
  const outArr = (k: number) => `O${id}_${k}`;
  outputs.forEach((o, k) => lines.push(`const ${outArr(k)} = ${o.array};`));
  const scalarIn = inputs.map((x) => sizeOf(x.shape) === 1);
  const sameIn = inputs.map((x) => sizeOf(x.shape) === n && sameShapeModuloOnes(x.shape, outShape));
  const flat = inputs.every((_, i) => scalarIn[i] || sameIn[i]);
  const val = (i: number) => (i < numIn ? `x${id}_${i}` : `s${id}_${i - numIn}`);
  // Scalar inputs are read once.
  for (let i = 0; i < numIn; i++) if (scalarIn[i]) lines.push(`const ${val(i)} = ${arr(i)}[0];`);
  const stepLines = (): string[] => {
    const out: string[] = [];
    steps.forEach((s, k) => {
      const v = val(numIn + k);
      const expr = jsSource(s.expr, s.args.map(val));
      // (float16 storage is a Float32Array, which does not round to float16: stored values convert too)
      const needConv = usedLater.has(numIn + k) || s.dtype === "float16";
      out.push(`const ${v} = ${needConv ? storeConversion(s.dtype, expr) : `(${expr})`};`);
    });
    return out;
  };
  if (flat) {
    const reads = inputs.map((_, i) => (scalarIn[i] ? "" : `const ${val(i)} = ${arr(i)}[i];`)).join(" ");
    const stores = outputs.map((o, k) => `${outArr(k)}[i] = ${val(o.value)};`).join(" ");
    lines.push(`for (let i = 0; i < ${n}; i++) { ${reads} ${stepLines().join(" ")} ${stores} }`);
    return `{\n${lines.join("\n")}\n}`;
  }
  // General broadcasting: nested loops with constant strides over collapsed dimensions.
  const { dims, strides } = collapse(outShape, inputs.map((x) => broadcastStrides(x.shape, outShape)));
  const r = dims.length;
  lines.push(`let o${id} = 0;`);
  let open = "";
  let close = "";
  for (let d = 0; d < r; d++) {
    const offs = inputs
      .map((_, i) => {
        if (scalarIn[i]) return "";
        const prev = d === 0 ? "0" : `p${id}_${i}_${d - 1}`;
        const st = strides[i]![d]!;
        return `const p${id}_${i}_${d} = ${prev} + i${d} * ${st};`;
      })
      .join(" ");
    open += `for (let i${d} = 0; i${d} < ${dims[d]}; i${d}++) { ${offs}\n`;
    close += "}";
  }
  const reads = inputs.map((_, i) => (scalarIn[i] ? "" : `const ${val(i)} = ${arr(i)}[p${id}_${i}_${r - 1}];`)).join(" ");
  const stores = outputs.map((o, k) => `${outArr(k)}[o${id}] = ${val(o.value)};`).join(" ");
  lines.push(`${open}${reads} ${stepLines().join(" ")} ${stores} o${id}++;\n${close}`);
  return `{\n${lines.join("\n")}\n}`;
}

function sameShapeModuloOnes(a: readonly number[], b: readonly number[]): boolean {
  const x = a.filter((d) => d !== 1);
  const y = b.filter((d) => d !== 1);
  return x.length === y.length && x.every((d, i) => d === y[i]);
}

/** Merges adjacent output dimensions that every input traverses contiguously (or not at all). */
export function collapse(shape: readonly number[], strides: number[][]): { dims: number[]; strides: number[][] } {
  const dims: number[] = [];
  const st: number[][] = strides.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    const size = shape[d]!;
    if (size === 1) continue;
    const last = dims.length - 1;
    if (last >= 0 && strides.every((s, i) => st[i]![last] === s[d]! * size)) {
      dims[last] = dims[last]! * size;
      strides.forEach((s, i) => (st[i]![last] = s[d]!));
      continue;
    }
    dims.push(size);
    strides.forEach((s, i) => st[i]!.push(s[d]!));
  }
  if (dims.length === 0) {
    dims.push(1);
    st.forEach((s) => s.push(0));
  }
  return { dims, strides: st };
}

/** Which eager matmul path a product reproduces: the TypeScript loops or the WebAssembly sgemm. */
export type MatmulArith = "loop" | "sgemm";

/** Output columns computed together (independent accumulation chains keep the CPU busy). */
const MATMUL_COLUMNS = config.matmulColumns;

/** The k-block size of the WebAssembly sgemm (wasm/sgemm.ts KC): later blocks accumulate. */
const SGEMM_KC = 256;

/**
 * A rank-2 matrix product out (m x n) = op(A) op(B) reproducing an eager path exactly:
 * - "loop" (backends/cpu/matmul.ts TypeScript loops): without transposeB each element
 *   accumulates in the output dtype (rounded after every addition of an exact product); with
 *   transposeB a float64 dot product is rounded once;
 * - "sgemm" (float32 WebAssembly SIMD kernel): products and sums are float32 operations
 *   (Math.fround of a float64 result is the correctly rounded float32 result), summed in k
 *   order within blocks of 256, the block sums added to the output in order.
 */
export function matmulSource(id: string, a: string, b: string, out: string, dtype: "float32" | "float64", m: number, k: number, n: number, transA: boolean, transB: boolean, arith: MatmulArith = "loop"): string {
  const f32 = dtype === "float32";
  const round = (x: string) => (f32 ? `Math.fround(${x})` : x);
  const sai = transA ? 1 : k;
  const sap = transA ? m : 1;
  const A = `MA${id}`,
    B = `MB${id}`,
    O = `MO${id}`;
  const aAt = (p: number | string) => `${A}[ar + ${typeof p === "number" ? p * sap : `${p} * ${sap}`}]`;
  // B(p, j + q)
  const bAt = (p: number | string, q = 0) =>
    transB ? `${B}[br${q} + ${p}]` : `${B}[${typeof p === "number" ? p * n : `${p} * ${n}`} + j${q === 0 ? "" : ` + ${q}`}]`;
  // one accumulation step of acc with the product at p
  const step = (acc: string, av: string, bv: string): string => {
    if (arith === "sgemm") return `Math.fround(${acc} + Math.fround(${av} * ${bv}))`;
    if (transB) return `${acc} + ${av} * ${bv}`;
    return round(`${acc} + ${av} * ${bv}`);
  };
  const blocks: [number, number][] = [];
  if (arith === "sgemm") for (let p0 = 0; p0 < k; p0 += SGEMM_KC) blocks.push([p0, Math.min(k, p0 + SGEMM_KC)]);
  else blocks.push([0, k]);
  /** Code computing output columns j .. j+width-1 of row i. */
  const columns = (width: number): string => {
    const q = Array.from({ length: width }, (_, x) => x);
    const body: string[] = [];
    if (transB) body.push(q.map((x) => `const br${x} = (j + ${x}) * ${k};`).join(" "));
    if (k === 0) {
      body.push(q.map((x) => `${O}[oi + j + ${x}] = 0;`).join(" "));
      return body.join(" ");
    }
    blocks.forEach(([p0, p1], bi) => {
      const acc = (x: number) => `s${bi}_${x}`;
      if (p1 - p0 <= 16) {
        // unrolled over p, the columns' accumulation chains interleaved
        body.push(`let ${q.map((x) => `${acc(x)} = 0`).join(", ")};`);
        for (let p = p0; p < p1; p++) body.push(`{ const av = ${aAt(p)}; ${q.map((x) => `${acc(x)} = ${step(acc(x), "av", bAt(p, x))};`).join(" ")} }`);
      } else {
        body.push(`let ${q.map((x) => `${acc(x)} = 0`).join(", ")};`);
        body.push(`for (let p = ${p0}; p < ${p1}; p++) { const av = ${aAt("p")}; ${q.map((x) => `${acc(x)} = ${step(acc(x), "av", bAt("p", x))};`).join(" ")} }`);
      }
    });
    for (const x of q) {
      // blocks after the first add their sum to the running output value (float32 adds)
      let total = `s0_${x}`;
      for (let bi = 1; bi < blocks.length; bi++) total = `Math.fround(s${bi}_${x} + ${total})`;
      body.push(`${O}[oi + j + ${x}] = ${total};`);
    }
    return body.join(" ");
  };
  const lines = [`const ${A} = ${a}, ${B} = ${b}, ${O} = ${out};`];
  // Several output columns at once when k is long: independent accumulation chains.
  const W = n >= MATMUL_COLUMNS ? MATMUL_COLUMNS : 1;
  const main = Math.floor(n / W) * W;
  lines.push(`for (let i = 0; i < ${m}; i++) { const ar = i * ${sai}; const oi = i * ${n};`);
  lines.push(`  for (let j = 0; j < ${main}; j += ${W}) { ${columns(W)} }`);
  if (main < n) lines.push(`  for (let j = ${main}; j < ${n}; j++) { ${columns(1)} }`);
  lines.push(`}`);
  return `{\n${lines.join("\n")}\n}`;
}

/**
 * A reduction of x viewed as [outer, red, inner] over the middle dimension (one contiguous run
 * of reduced axes), as the eager kernel computes it: accumulated in float64 from the first
 * element of each group in order, rounded once by the store (mean: rounded, then divided by
 * the count and rounded again).
 */
export function reduceSource(id: string, form: ReductionForm, x: string, out: string, outDtype: DType, outer: number, red: number, inner: number): string {
  const r = { first: firstExpr(form.combine), combine: combineExpr(form.combine), init: REDUCTION_INIT[form.combine], mean: form.mean };
  const X = `RX${id}`,
    O = `RO${id}`;
  const lines = [`const ${X} = ${x}, ${O} = ${out};`];
  if (outer * inner === 0) return "";
  if (red === 0) {
    const v = r.mean ? "NaN" : String(r.init);
    lines.push(`${O}.fill(${v});`);
    return `{\n${lines.join("\n")}\n}`;
  }
  let fin = r.mean ? `${storeConversion(outDtype, "acc")} / ${red}` : "acc";
  // float16 results are what the kernel gives (float32 arithmetic) rounded to float16 once.
  if (outDtype === "float16") fin = r.mean ? `roundF16(Math.fround(Math.fround(acc) / ${red}))` : storeConversion(outDtype, "acc");
  let loop: string;
  if (red <= 8) {
    const parts = [`let v = ${X}[b]; let acc = ${r.first};`];
    for (let k = 1; k < red; k++) parts.push(`v = ${X}[b + ${k * inner}]; acc = ${r.combine};`);
    loop = parts.join(" ");
  } else {
    loop = `let v = ${X}[b]; let acc = ${r.first}; for (let k = 1; k < ${red}; k++) { v = ${X}[b + k * ${inner}]; acc = ${r.combine}; }`;
  }
  if (inner === 1) lines.push(`for (let o = 0; o < ${outer}; o++) { const b = o * ${red}; ${loop} ${O}[o] = ${fin}; }`);
  else lines.push(`for (let o = 0; o < ${outer}; o++) for (let i = 0; i < ${inner}; i++) { const b = o * ${red * inner} + i; ${loop} ${O}[o * ${inner} + i] = ${fin}; }`);
  return `{\n${lines.join("\n")}\n}`;
}
