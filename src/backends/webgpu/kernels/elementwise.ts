/**
 * Elementwise kernels from op templates: one op, or a fused chain of them (the fusedElementwise op
 * and the executor's fusion), in one WGSL kernel with one thread per output element.
 *
 * Each input is read one of three ways, decided per call: contiguous (its shape is the output's),
 * a scalar (one element), or strided with NumPy broadcasting (0 strides on broadcast dimensions).
 * Shapes and strides are kernel parameters, so one pipeline serves every shape of a pattern; the
 * kernel source depends only on the templates, dtypes, rank and read patterns.
 *
 * A step's value is stored and reloaded as its dtype would be (as the CPU's fused loops round each
 * step), so a fused chain gives the unfused chain's values.
 */
import type { DType } from "../../../core/dtype.js";
import { exprKey, type ElementwiseStep } from "../../../core/expr.js";
import type { KernelDevice } from "../device.js";
import { allocArray, bindings, grid, launch, lazy, linearMain, Params, SCALAR_HELPERS, sizeOf, storageType, WG, type GpuArray } from "./common.js";
import { loadedValue, MATH_HELPERS, renderStore, renderTyped, type Rendered } from "../wgsl/render.js";

export type { ElementwiseStep };

type Read = "c" | "s" | "b"; // contiguous, scalar, broadcast (strided)

function readPattern(shape: readonly number[], out: readonly number[]): Read {
  const n = sizeOf(shape);
  if (n === 1 && sizeOf(out) !== 1) return "s";
  if (shape.length === out.length && shape.every((d, i) => d === out[i])) return "c";
  if (n === sizeOf(out) && n !== 0) {
    // Same size, different shape (only leading/trailing 1s differ): the same flat order.
    const a = shape.filter((d) => d !== 1);
    const b = out.filter((d) => d !== 1);
    if (a.length === b.length && a.every((d, i) => d === b[i])) return "c";
  }
  return "b";
}

/** Strides of `shape` broadcast against `out` (right-aligned, 0 on broadcast dims). */
function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const r = out.length;
  const s = new Array<number>(r).fill(0);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    const od = r - shape.length + d;
    s[od] = shape[d] === 1 ? 0 : acc;
    acc *= shape[d]!;
  }
  return s;
}

/** WGSL source of an elementwise kernel (exported for tests and the executor's fusion). */
export function elementwiseSource(inputs: readonly { dtype: DType; read: Read }[], steps: readonly ElementwiseStep[], outputs: readonly number[], rank: number, label: string): { source: string; layout: string } {
  const decl: [string, "r" | "w", string][] = [];
  inputs.forEach((x, k) => decl.push([`in${k}`, "r", storageType(x.dtype, label)]));
  outputs.forEach((s, k) => decl.push([`out${k}`, "w", storageType(steps[s]!.dtype, label)]));
  const b = bindings(decl);
  const params = new Params().u32("n", 0);
  const broadcast = inputs.some((x) => x.read === "b");
  if (broadcast) for (let d = 0; d < rank; d++) params.u32(`d${d}`, 0);
  inputs.forEach((x, k) => {
    if (x.read === "b") for (let d = 0; d < rank; d++) params.u32(`s${k}_${d}`, 0);
  });
  let body = `  if (i >= p.n) { return; }\n`;
  if (broadcast) {
    body += `  var rem = i;\n`;
    inputs.forEach((x, k) => {
      if (x.read === "b") body += `  var o${k} = 0u;\n`;
    });
    for (let d = rank - 1; d >= 0; d--) {
      body += `  { let c = rem % p.d${d}; rem = rem / p.d${d};`;
      inputs.forEach((x, k) => {
        if (x.read === "b") body += ` o${k} += c * p.s${k}_${d};`;
      });
      body += ` }\n`;
    }
  }
  const values: Rendered[] = inputs.map((x, k) => {
    const idx = x.read === "c" ? "i" : x.read === "s" ? "0u" : `o${k}`;
    body += `  let x${k} = in${k}[${idx}];\n`;
    return loadedValue(`x${k}`, storageType(x.dtype));
  });
  steps.forEach((s, j) => {
    const r = renderTyped(s.expr, s.args.map((a) => values[a]!));
    const st = storageType(s.dtype, label);
    body += `  let v${j}: ${st} = ${renderStore(r, s.dtype)};\n`;
    values.push(loadedValue(`v${j}`, st));
  });
  outputs.forEach((s, k) => (body += `  out${k}[i] = v${s};\n`));
  const source = `${SCALAR_HELPERS}${MATH_HELPERS}${b.wgsl}${params.wgsl(decl.length)}${linearMain(WG, body)}`;
  return { source, layout: b.layout + "u" };
}

/**
 * Runs `steps` over `inputs` broadcast to `outShape`; returns the outputs (the steps `outputs`
 * lists), in `into` when given (else new arrays). `label` names the op(s) in errors and debuggers.
 */
export function elementwise(dev: KernelDevice, inputs: readonly GpuArray[], steps: readonly ElementwiseStep[], outputs: readonly number[], outShape: readonly number[], label: string, into?: readonly GpuArray[], stepsKey?: string): GpuArray[] {
  const n = sizeOf(outShape);
  if (steps.length > 1 && inputs.length + outputs.length > dev.limits.maxStorageBuffersPerShaderStage) {
    return stepByStep(dev, inputs, steps, outputs, outShape, label, into);
  }
  const outs = into ? [...into] : outputs.map((s) => allocArray(dev, outShape, steps[s]!.dtype));
  if (n === 0) return outs;
  const reads = inputs.map((x) => readPattern(x.shape, outShape));
  const rank = outShape.length;
  // The kernel is named by what determines its source (generated once per key).
  const key = `ew|${stepsKey ?? steps.map((st) => `${exprKey(st.expr)}@${st.args.join(",")}:${st.dtype}`).join(";")}|${inputs.map((x, k) => x.dtype + reads[k]).join(",")}|${outputs.join(",")}|${rank}`;
  const kernel = lazy(key, () => {
    const { source, layout } = elementwiseSource(
      inputs.map((x, k) => ({ dtype: x.dtype, read: reads[k]! })),
      steps,
      outputs,
      rank,
      label,
    );
    return { source, layout, label };
  });
  const params = new Params().u32("n", n);
  if (reads.includes("b")) for (let d = 0; d < rank; d++) params.u32(`d${d}`, outShape[d]!);
  inputs.forEach((x, k) => {
    if (reads[k] === "b") for (const s of broadcastStrides(x.shape, outShape)) params.u32(`s${k}`, s);
  });
  launch(dev, kernel, [...inputs.map((x) => x.id), ...outs.map((o) => o.id)], params, grid(n, WG, dev.limits.maxComputeWorkgroupsPerDimension));
  return outs;
}

/**
 * A group with more inputs and outputs than one kernel may bind: each step its own kernel (a step
 * reads at most three values), intermediates in buffers freed after their last use.
 */
function stepByStep(dev: KernelDevice, inputs: readonly GpuArray[], steps: readonly ElementwiseStep[], outputs: readonly number[], outShape: readonly number[], label: string, into?: readonly GpuArray[]): GpuArray[] {
  const values: GpuArray[] = [...inputs];
  const lastUse = new Map<number, number>();
  steps.forEach((st, j) => st.args.forEach((a) => lastUse.set(a, j)));
  steps.forEach((st, j) => {
    const k = outputs.indexOf(j);
    const target = k >= 0 && into ? [into[k]!] : undefined;
    const [y] = elementwise(dev, st.args.map((a) => values[a]!), [{ ...st, args: st.args.map((_, q) => q) }], [0], outShape, label, target);
    values.push(y!);
    for (const a of new Set(st.args)) {
      if (a >= inputs.length && lastUse.get(a) === j && !outputs.includes(a - inputs.length)) dev.free(values[a]!.id, 4 * sizeOf(outShape));
    }
  });
  return outputs.map((j) => values[inputs.length + j]!);
}
