/**
 * The `fusedElementwise` op: a chain of elementwise ops computed in one loop, made by the fusion
 * pass (graph/passes/fusion.ts). Its attributes are plain JSON:
 *   { numInputs, steps: [{ op, args, attrs }], outputs }
 * step k applies elementwise op `steps[k].op` to `args` (index < numInputs: fused input;
 * otherwise step index + numInputs) with numeric attributes `attrs`; `outputs` lists the steps
 * whose values are the node's outputs, in order. A backend computes it from the steps'
 * expressions (backends/backend.ts groupKernel), never seeing the ops.
 *
 * Fused nodes are NOT differentiable (no VJP): fusion runs last, after any AD, on a graph that
 * is about to be executed.
 */
import { allocStorage, isDType, type DType, type TypedArray } from "../core/dtype.js";
import { ValueError } from "../core/errors.js";
import { bindAttrs, formFor, type ElementwiseGroup } from "../core/expr.js";
import { fmtShape, shapesEqual, sizeOf, type Shape } from "../core/shape.js";
import { cpuBackend } from "../backends/registry.js";
import { groupLoopSource } from "../backends/cpu/fused.js";
import { defineOp, getOp, type TensorType } from "./registry.js";
import { groupGpu } from "../backends/webgpu/op-kernels/elementwise.js";
import { perExample } from "./batching.js";

export interface FusedStep {
  /** A registry op with an elementwise expression. */
  op: string;
  /** Operand k: < numInputs is fused input k; otherwise step k - numInputs. */
  args: number[];
  /** Numeric attributes of the op (bound into its expression). */
  attrs: Record<string, number>;
}

export interface FusedAttrs {
  numInputs: number;
  steps: FusedStep[];
  /** The steps whose values are the node's outputs, in output order. */
  outputs: number[];
}

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

/** The group a backend computes: each step's expression for its dtype, attributes bound. */
export function fusedGroup(attrs: FusedAttrs, stepDtypes: readonly DType[]): ElementwiseGroup {
  return {
    numInputs: attrs.numInputs,
    steps: attrs.steps.map((s, k) => ({ expr: bindAttrs(formFor(getOp(s.op).elementwise!, stepDtypes[k]!), s.attrs), args: s.args, dtype: stepDtypes[k]! })),
    outputs: attrs.outputs,
  };
}

function groupOf(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): ElementwiseGroup {
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
  return fusedGroup(
    attrs,
    types.map((t) => t.dtype),
  );
}

export type FusedKernel = (inputs: TypedArray[], outputs: TypedArray[]) => void;

const kernelCache = new Map<string, FusedKernel>();
const KERNEL_CACHE_LIMIT = 4096;

/**
 * The CPU loop computing a fused node for inputs of `inputShapes` / `inputDtypes` into outputs
 * of `outShape` (one typed array per entry of attrs.outputs, of that step's dtype's storage).
 * Cached per (attributes, dtypes, shapes); the returned function may be called any number of times.
 */
export function fusedKernel(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): FusedKernel {
  const shapeKey = `${JSON.stringify(attrs)}|${inputDtypes.join(",")}|${inputShapes.map((s) => s.join("x")).join(",")}|${outShape.join("x")}`;
  const cached = kernelCache.get(shapeKey);
  if (cached) return cached;
  const group = groupOf(attrs, inputShapes, outShape, inputDtypes);
  const loop = cpuBackend.groupKernel(
    group,
    inputShapes.map((s, k) => ({ shape: s, dtype: inputDtypes[k]! })),
    outShape,
  );
  const numOut = attrs.outputs.length;
  const numIn = attrs.numInputs;
  const kernel: FusedKernel = (inputs, outputs) => {
    if (inputs.length !== numIn || outputs.length !== numOut) fail(`the loop takes ${numIn} inputs and ${numOut} outputs, got ${inputs.length} and ${outputs.length}`);
    loop(inputs, outputs);
  };
  if (kernelCache.size >= KERNEL_CACHE_LIMIT) kernelCache.clear();
  kernelCache.set(shapeKey, kernel);
  return kernel;
}

/** The source of the CPU loop of a fused node (for inspection). */
export function fusedKernelSource(attrs: FusedAttrs, inputShapes: readonly Shape[], outShape: Shape, inputDtypes: readonly DType[]): string {
  return groupLoopSource(groupOf(attrs, inputShapes, outShape, inputDtypes), inputShapes, outShape);
}

export const fusedElementwiseOp = defineOp<FusedAttrs>({
  name: "fusedElementwise",
  batch: perExample,
  family: "fused",
  inputs: ["inputs"],
  variadic: true,
  infer(inputs, attrs) {
    const steps = fusedStepTypes(attrs, inputs);
    return attrs.outputs.map((k) => ({ dtype: steps[k]!.dtype, shape: steps[k]!.shape }));
  },
  group(attrs, inputs) {
    let types: TensorType[];
    try {
      types = fusedStepTypes(attrs, inputs);
    } catch {
      return null;
    }
    return fusedGroup(
      attrs,
      types.map((t) => t.dtype),
    );
  },
  kernels: {
    webgpu: groupGpu("fusedElementwise", (attrs: FusedAttrs, inputs): ElementwiseGroup | null => fusedElementwiseOp.group!(attrs, inputs)),
    cpu(inputs, attrs, outs) {
      const shape = outs[0]!.shape;
      const n = sizeOf(shape);
      const buffers = outs.map((o) => allocStorage(o.dtype, n));
      fusedKernel(
        attrs,
        inputs.map((t) => t.shape),
        shape,
        inputs.map((t) => t.dtype),
      )(
        inputs.map((t) => t.concrete()),
        buffers,
      );
      return buffers;
    },
  },
});
