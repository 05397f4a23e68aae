/**
 * Loops for fused elementwise chains (the `fusedElementwise` op, graph/passes/fusion.ts).
 *
 * A fused node's attributes list steps over its inputs: step k applies registry op
 * `steps[k].op` (an elementwise op: its scalar template, ops/registry.ts ElementwiseTemplate)
 * to `args` (index < numInputs: fused input; otherwise step index + numInputs), with numeric
 * attributes substituted for `$name` placeholders. One generated loop computes every step for
 * one output element at a time and writes the steps listed in `outputs`.
 *
 * Bit-exactness with unfused execution: each step's value is rounded exactly as storing it
 * in its dtype's typed array would round it (float32: Math.fround; int32: `| 0`; uint8 and
 * bool (Uint8Array): `& 255`; float64 and int64 (Float64Array): unary `+`), before the next
 * step reads it; integer and float32 outputs use the template's `intExpr`/`f32Expr` as the
 * eager kernel does (ops/registry.ts templateExpression).
 *
 * Code is generated once per (attributes, input dtypes, broadcast pattern) and cached;
 * `fusedKernel` binds it to concrete shapes. Patterns: each input is read contiguously
 * (its size equals the output's: the index maps one to one), as a hoisted scalar (size 1),
 * or strided with NumPy broadcasting (0 strides on broadcast dims). When no input is strided
 * the loop is one flat pass. Reads of an element happen before any write of that element,
 * so an output may share storage with a same-sized input (in-place update).
 */
import { isDType, type DType, type TypedArray } from "../../core/dtype.js";
import { ValueError } from "../../core/errors.js";
import { broadcastStrides, fmtShape, shapesEqual, sizeOf, type Shape } from "../../core/shape.js";
import { getOp, templateExpression, type TensorType } from "../../ops/registry.js";
import { bindAttrs } from "../../ops/define-elementwise.js";
import { SCALAR_PRELUDE } from "./scalar-math.js";

export interface FusedStep {
  /** A registry op with an elementwise template. */
  op: string;
  /** Operand k: < numInputs is fused input k; otherwise step k - numInputs. */
  args: number[];
  /** Numeric attributes substituted into the template's `$name` placeholders. */
  attrs: Record<string, number>;
}

export interface FusedAttrs {
  numInputs: number;
  steps: FusedStep[];
  /** The steps whose values are the node's outputs, in output order. */
  outputs: number[];
}

export type FusedKernel = (inputs: TypedArray[], outputs: TypedArray[]) => void;

const OP = "fusedElementwise";

function fail(msg: string): never {
  throw new ValueError(msg, OP);
}

/** Checks the attributes' structure (not the dtypes or shapes: see fusedStepTypes). */
export function checkFusedAttrs(attrs: FusedAttrs, numInputs: number): void {
  if (attrs === null || typeof attrs !== "object") fail(`attributes must be {numInputs, steps, outputs}, got ${String(attrs)}`);
  if (attrs.numInputs !== numInputs) fail(`attrs.numInputs is ${String(attrs.numInputs)} but the node has ${numInputs} inputs`);
  if (!Array.isArray(attrs.steps) || attrs.steps.length === 0) fail(`attrs.steps must be a non-empty array`);
  attrs.steps.forEach((s, k) => {
    if (!s || typeof s.op !== "string") fail(`step ${k} has no op name`);
    const def = getOp(s.op);
    if (!def.elementwise) fail(`step ${k} (${s.op}) is not an elementwise op`);
    if (!Array.isArray(s.args) || s.args.length !== def.inputs.length) fail(`step ${k} (${s.op}) takes ${def.inputs.length} operands, got ${JSON.stringify(s.args)}`);
    for (const a of s.args) {
      if (!Number.isInteger(a) || a < 0 || a >= numInputs + k) fail(`step ${k} (${s.op}) reads operand ${a}, but only inputs 0..${numInputs - 1} and steps before ${k} exist`);
    }
    if (s.attrs === null || typeof s.attrs !== "object") fail(`step ${k} (${s.op}) attrs must be an object of numbers`);
    for (const [name, v] of Object.entries(s.attrs)) if (typeof v !== "number") fail(`step ${k} (${s.op}) attribute ${name} must be a number, got ${JSON.stringify(v)}`);
  });
  if (!Array.isArray(attrs.outputs) || attrs.outputs.length === 0) fail(`attrs.outputs must list at least one step`);
  for (const o of attrs.outputs) if (!Number.isInteger(o) || o < 0 || o >= attrs.steps.length) fail(`output step ${o} is out of range (${attrs.steps.length} steps)`);
}

/**
 * The type of every step, by the steps' own shape rules over the input types. Every step
 * must have the shape of the whole loop (the broadcast of everything), so the loop writes
 * each output once per element.
 */
export function fusedStepTypes(attrs: FusedAttrs, inputs: readonly TensorType[]): TensorType[] {
  checkFusedAttrs(attrs, inputs.length);
  const types: TensorType[] = [...inputs];
  for (const s of attrs.steps) {
    const [t] = getOp(s.op).infer(
      s.args.map((a) => types[a]!),
      s.attrs,
    );
    types.push(t!);
  }
  const steps = types.slice(inputs.length);
  const loop = steps[attrs.steps.length - 1]!.shape;
  steps.forEach((t, k) => {
    if (t.shape.length !== loop.length || t.shape.some((d, i) => d !== loop[i])) {
      fail(`step ${k} (${attrs.steps[k]!.op}) has shape ${fmtShape(t.shape)}, but the fused loop runs over ${fmtShape(loop)}; every step must have the loop's shape`);
    }
  });
  return steps;
}

/** `expr` rounded as a store into `dtype`'s storage rounds it. */
function rounded(expr: string, dtype: DType): string {
  switch (dtype) {
    case "float32":
      return `Math.fround(${expr})`;
    case "float16":
      return `roundF16(Math.fround(${expr}))`;
    case "int32":
      return `((${expr}) | 0)`;
    case "uint32":
      return `((${expr}) >>> 0)`;
    case "int16":
      return `(((${expr}) << 16) >> 16)`;
    case "uint16":
      return `((${expr}) & 65535)`;
    case "int8":
      return `(((${expr}) << 24) >> 24)`;
    case "uint8":
    case "bool":
      return `((${expr}) & 255)`;
    case "float64":
    case "int64":
    case "uint64":
      return `(+(${expr}))`;
  }
}

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

const NAMES = ["a", "b", "c"];

/**
 * Source of the loop function `(inputs, outputs, n, outShape, strides) => void` for the
 * given attributes, step dtypes and input patterns (expects SCALAR_PRELUDE's helpers in
 * scope; `fusedKernelSource` includes them). `strides[k]` is input k's broadcast strides
 * (only read for "b" inputs).
 */
export function fusedLoopSource(attrs: FusedAttrs, stepDtypes: readonly DType[], patterns: readonly InputPattern[]): string {
  const ni = attrs.numInputs;
  const strided = patterns.includes("b");
  const operand = (a: number) => (a < ni ? `x${a}` : `t${a - ni}`);
  const lines: string[] = [];
  for (let k = 0; k < ni; k++) lines.push(`const in${k} = inputs[${k}];`);
  attrs.outputs.forEach((_, j) => lines.push(`const out${j} = outputs[${j}];`));
  patterns.forEach((p, k) => {
    if (p === "s") lines.push(`const x${k} = in${k}[0];`);
  });
  const idx = strided ? "o" : "i";
  const reads = patterns
    .map((p, k) => (p === "f" ? `const x${k} = in${k}[${idx}];` : p === "b" ? `const x${k} = in${k}[off${k} + j * inc${k}];` : ""))
    .filter(Boolean);
  const steps = attrs.steps.map((s, k) => {
    const def = getOp(s.op);
    const expr = bindAttrs(templateExpression(def.elementwise!, stepDtypes[k]!), s.attrs);
    const binds = s.args.map((a, i) => `${NAMES[i]} = ${operand(a)}`).join(", ");
    return `let t${k}; { const ${binds}; t${k} = ${rounded(expr, stepDtypes[k]!)}; }`;
  });
  const writes = attrs.outputs.map((o, j) => `out${j}[${idx}] = t${o};`);
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
const kernelCache = new Map<string, FusedKernel>();
const KERNEL_CACHE_LIMIT = 4096;

/**
 * The complete source of the loop for these attributes and input dtypes and patterns, as a
 * JavaScript program that evaluates to the loop function (prelude helpers included).
 */
export function fusedKernelSource(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): string {
  const stepDtypes = stepDtypesOf(attrs, inputShapes, outShape, inputDtypes);
  return `${SCALAR_PRELUDE}\nreturn ${fusedLoopSource(attrs, stepDtypes, inputPatterns(inputShapes, outShape))};`;
}

function stepDtypesOf(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): DType[] {
  if (inputShapes.length !== inputDtypes.length) fail(`got ${inputShapes.length} input shapes but ${inputDtypes.length} input dtypes`);
  inputDtypes.forEach((d, k) => {
    if (!isDType(d)) fail(`input ${k} has unknown dtype ${JSON.stringify(d)}`);
  });
  const types = fusedStepTypes(
    attrs,
    inputShapes.map((s, k) => ({ shape: s, dtype: inputDtypes[k]! })),
  );
  const loop = types[types.length - 1]!.shape;
  if (!shapesEqual(loop, outShape)) fail(`the steps compute shape ${fmtShape(loop)}, but the output shape is ${fmtShape(outShape)}`);
  return types.map((t) => t.dtype);
}

/**
 * A loop computing a fused node for inputs of `inputShapes` / `inputDtypes` into outputs of
 * `outShape` (one typed array per entry of attrs.outputs, of that step's dtype's storage).
 * The generated code is cached per (attributes, dtypes, broadcast pattern); the returned
 * function is cached per shapes too, and may be called any number of times.
 */
export function fusedKernel(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): FusedKernel {
  const shapeKey = `${JSON.stringify(attrs)}|${inputDtypes.join(",")}|${inputShapes.map((s) => s.join("x")).join(",")}|${outShape.join("x")}`;
  const cached = kernelCache.get(shapeKey);
  if (cached) return cached;
  const stepDtypes = stepDtypesOf(attrs, inputShapes, outShape, inputDtypes);
  const patterns = inputPatterns(inputShapes, outShape);
  const codeKey = `${JSON.stringify(attrs)}|${inputDtypes.join(",")}|${patterns.join("")}`;
  let loop = loopCache.get(codeKey);
  if (!loop) {
    const src = `${SCALAR_PRELUDE}\nreturn ${fusedLoopSource(attrs, stepDtypes, patterns)};`;
    loop = new Function(src)() as Loop;
    loopCache.set(codeKey, loop);
  }
  const n = sizeOf(outShape);
  const strides = inputShapes.map((s, k) => (patterns[k] === "b" ? broadcastStrides(s, outShape) : null));
  const shape = outShape.slice();
  const body = loop;
  const numOut = attrs.outputs.length;
  const numIn = attrs.numInputs;
  const kernel: FusedKernel = (inputs, outputs) => {
    if (inputs.length !== numIn || outputs.length !== numOut) fail(`the loop takes ${numIn} inputs and ${numOut} outputs, got ${inputs.length} and ${outputs.length}`);
    body(inputs, outputs, n, shape, strides);
  };
  if (kernelCache.size >= KERNEL_CACHE_LIMIT) kernelCache.clear();
  kernelCache.set(shapeKey, kernel);
  return kernel;
}
