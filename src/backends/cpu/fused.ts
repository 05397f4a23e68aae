/**
 * Loops for elementwise groups (a fused chain: the `fusedElementwise` op, ops/fused.ts): one
 * generated loop computes every step for one output element at a time and writes the steps
 * listed as outputs. Each step is an expression (core/expr.ts) rendered as JavaScript
 * (js-expr.ts) over earlier values.
 *
 * Bit-exactness with unfused execution: each step's value is rounded exactly as storing it
 * in its dtype's typed array would round it (float32: Math.fround; int32: `| 0`; uint8 and
 * bool (Uint8Array): `& 255`; float64 and int64 (Float64Array): unary `+`), before the next
 * step reads it.
 *
 * Code is generated once per (steps, input dtypes, broadcast pattern) and cached;
 * `groupKernel` binds it to concrete shapes. Patterns: each input is read contiguously
 * (its size equals the output's: the index maps one to one), as a hoisted scalar (size 1),
 * or strided with NumPy broadcasting (0 strides on broadcast dims). When no input is strided
 * the loop is one flat pass. Reads of an element happen before any write of that element,
 * so an output may share storage with a same-sized input (in-place update).
 */
import type { TypedArray } from "../../core/dtype.js";
import { exprKey, type ElementwiseGroup } from "../../core/expr.js";
import { broadcastStrides, sizeOf, type Shape } from "../../core/shape.js";
import { jsSource, SCALAR_PRELUDE, storeConversion } from "./js-expr.js";

export type GroupLoop = (inputs: TypedArray[], outputs: TypedArray[]) => void;

/** Per input: "f" (one-to-one), "s" (scalar, hoisted) or "b" (strided, broadcast). */
export type InputPattern = "f" | "s" | "b";

export function inputPatterns(inputShapes: readonly Shape[], outShape: Shape): InputPattern[] {
  const n = sizeOf(outShape);
  return inputShapes.map((s) => {
    const k = sizeOf(s);
    if (k === n) return "f";
    if (k === 1) return "s";
    return "b";
  });
}

/**
 * Source of the loop function `(inputs, outputs, n, outShape, strides) => void` for a group and
 * input patterns (expects SCALAR_PRELUDE's helpers in scope; `groupLoopSource` includes them).
 * `strides[k]` is input k's broadcast strides (only read for "b" inputs).
 */
function loopFunctionSource(group: ElementwiseGroup, patterns: readonly InputPattern[]): string {
  const ni = group.numInputs;
  const strided = patterns.includes("b");
  const operand = (a: number) => (a < ni ? `x${a}` : `t${a - ni}`);
  const lines: string[] = [];
  for (let k = 0; k < ni; k++) lines.push(`const in${k} = inputs[${k}];`);
  group.outputs.forEach((_, j) => lines.push(`const out${j} = outputs[${j}];`));
  patterns.forEach((p, k) => {
    if (p === "s") lines.push(`const x${k} = in${k}[0];`);
  });
  const idx = strided ? "o" : "i";
  const reads = patterns
    .map((p, k) => (p === "f" ? `const x${k} = in${k}[${idx}];` : p === "b" ? `const x${k} = in${k}[off${k} + j * inc${k}];` : ""))
    .filter(Boolean);
  const steps = group.steps.map((s, k) => `const t${k} = ${storeConversion(s.dtype, jsSource(s.expr, s.args.map(operand)))};`);
  const writes = group.outputs.map((o, j) => `out${j}[${idx}] = t${o};`);
  const body = [...reads, ...steps, ...writes].map((l) => "    " + l).join("\n");
  if (!strided) {
    lines.push(`for (let i = 0; i < n; i++) {\n${body}\n}`);
  } else {
    const b = patterns.map((p, k) => (p === "b" ? k : -1)).filter((k) => k >= 0);
    lines.push(`if (n === 0) return;`);
    lines.push(`const rank = outShape.length;`);
    lines.push(`const inner = outShape[rank - 1];`);
    for (const k of b) lines.push(`const s${k} = strides[${k}]; const inc${k} = s${k}[rank - 1]; let off${k} = 0;`);
    lines.push(`const counters = new Int32Array(rank);`);
    lines.push(`const outer = n / inner;`);
    lines.push(`let o = 0;`);
    lines.push(`for (let q = 0; q < outer; q++) {`);
    lines.push(`  for (let j = 0; j < inner; j++, o++) {\n${body}\n  }`);
    lines.push(`  for (let d = rank - 2; d >= 0; d--) {`);
    lines.push(`    counters[d]++;`);
    lines.push(`    ${b.map((k) => `off${k} += s${k}[d];`).join(" ")}`);
    lines.push(`    if (counters[d] < outShape[d]) break;`);
    lines.push(`    ${b.map((k) => `off${k} -= s${k}[d] * outShape[d];`).join(" ")}`);
    lines.push(`    counters[d] = 0;`);
    lines.push(`  }`);
    lines.push(`}`);
  }
  return `function fusedLoop(inputs, outputs, n, outShape, strides) {\n${lines.join("\n")}\n}`;
}

type Loop = (inputs: TypedArray[], outputs: TypedArray[], n: number, outShape: Shape, strides: (number[] | null)[]) => void;

const loopCache = new Map<string, Loop>();

/**
 * The complete source of a group's loop for these input and output shapes, as a JavaScript
 * program that evaluates to the loop function (prelude helpers included).
 */
export function groupLoopSource(group: ElementwiseGroup, inputShapes: readonly Shape[], outShape: Shape): string {
  return `${SCALAR_PRELUDE}\nreturn ${loopFunctionSource(group, inputPatterns(inputShapes, outShape))};`;
}

/**
 * A loop computing `group` for inputs of `inputShapes` into outputs of `outShape` (one typed array
 * per group output, of that step's dtype's storage). The generated code is cached per (steps,
 * broadcast pattern); the returned function is bound to these shapes.
 */
export function groupLoop(group: ElementwiseGroup, inputShapes: readonly Shape[], outShape: Shape): GroupLoop {
  const patterns = inputPatterns(inputShapes, outShape);
  const codeKey = `${group.steps.map((s) => `${exprKey(s.expr)}:${s.args.join(",")}:${s.dtype}`).join(";")}|${group.outputs.join(",")}|${group.numInputs}|${patterns.join("")}`;
  let loop = loopCache.get(codeKey);
  if (!loop) {
    loop = new Function(`${SCALAR_PRELUDE}\nreturn ${loopFunctionSource(group, patterns)};`)() as Loop;
    loopCache.set(codeKey, loop);
  }
  const n = sizeOf(outShape);
  const strides = inputShapes.map((s, k) => (patterns[k] === "b" ? broadcastStrides(s, outShape) : null));
  const shape = outShape.slice();
  const body = loop;
  return (inputs, outputs) => body(inputs, outputs, n, shape, strides);
}
