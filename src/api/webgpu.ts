/**
 * Wiring of the WebGPU backend: `await sc.initWebGPU()` opens a device (Dawn's `webgpu` package in
 * Node, `navigator.gpu` in browsers), installs every op's WebGPU entry into the op declarations
 * (backends/webgpu/op-kernels), registers the backend, and `sc.listDevices()` shows "webgpu:0".
 * Without an adapter it resolves to null and `webgpuUnavailable()` says why.
 */
import type { DeviceInfo } from "../core/device.js";
import { listDevices } from "../core/device.js";
import { bindAttrs, formFor, hasAttrs, type ElementwiseStep } from "../core/expr.js";
import { listOps, runtimeShapes, type OpDef } from "../ops/registry.js";
import { registerBackend } from "../backends/registry.js";
import type { Backend } from "../backends/backend.js";
import { GpuDevice, type WebGpuOpenOptions } from "../backends/webgpu/device.js";
import { WebGpuBackend, type WebGpuEntry } from "../backends/webgpu/backend.js";
import { elementwise } from "../backends/webgpu/kernels/elementwise.js";
import { GPU_KERNELS, HOST_OPS, WIDE_OPS } from "../backends/webgpu/op-kernels/index.js";
import type { WebGpuKernel } from "../backends/webgpu/op-kernels/types.js";
import { installedExecutor, setDefaultExecutor } from "../staging/concrete-function.js";
import { byDevice, webgpuExecutor } from "../exec/webgpu-executor.js";
import { tidy as gpuTidy } from "../backends/webgpu/storage.js";

let backend: WebGpuBackend | null = null;
let opening: Promise<DeviceInfo | null> | null = null;
let unavailable: string | null = null;

/** The kernel of an elementwise op: its expression (for the output's dtype, attributes bound) rendered as WGSL. */
function elementwiseEntry(def: OpDef): WebGpuKernel {
  const form = def.elementwise!;
  const withAttrs = hasAttrs(form.expr) || (form.f32 !== undefined && hasAttrs(form.f32));
  return (dev, inputs, attrs, outs) => {
    const o = outs[0]!;
    const step: ElementwiseStep = { expr: bindAttrs(formFor(form, o.dtype), attrs as Record<string, unknown>), args: inputs.map((_, i) => i), dtype: o.dtype };
    // (the op's name, dtype and attribute values determine its expression)
    const key = `${def.name}:${o.dtype}${withAttrs ? JSON.stringify(attrs) : ""}`;
    return elementwise(dev, inputs, [step], [0], o.shape, def.name, undefined, key);
  };
}

/** An op computing a group of elementwise steps (fusedElementwise): the group as one WGSL kernel. */
function groupEntry(def: OpDef): WebGpuKernel {
  return (dev, inputs, attrs, outs) => {
    const group = def.group!(attrs, inputs);
    if (!group) throw new Error(`${def.name}: its attributes describe no elementwise group for these inputs`);
    return elementwise(dev, inputs, group.steps, group.outputs, outs[0]!.shape, def.name);
  };
}

/** Each registry op's WebGPU entry (ops with none are left without: using one is an error naming it). */
function installKernels(): void {
  for (const def of listOps()) {
    if (def.kernels.webgpu) continue;
    const cpu = def.kernels.cpu as WebGpuEntry["host"];
    const wide = WIDE_OPS.includes(def.name) ? cpu : undefined;
    let entry: WebGpuEntry | null = null;
    if (HOST_OPS.includes(def.name)) entry = { op: def.name, host: cpu };
    else if (GPU_KERNELS[def.name]) entry = { op: def.name, gpu: GPU_KERNELS[def.name], ...(wide ? { wide } : {}) };
    else if (def.group) entry = { op: def.name, gpu: groupEntry(def) };
    else if (def.elementwise) entry = { op: def.name, gpu: elementwiseEntry(def) };
    if (entry) def.kernels.webgpu = entry;
  }
}

/**
 * Opens the WebGPU device (once) and makes it available as "webgpu:0": resolves to its DeviceInfo,
 * or to null when this runtime has no WebGPU adapter (then `webgpuUnavailable()` says why).
 * In Node the device lives in a worker thread so that synchronous reads (dataSync) can block on it;
 * `{ thread: "main" }` keeps it on this thread (as in a browser: only `await t.data()` reads).
 */
export function initWebGPU(options: WebGpuOpenOptions = {}): Promise<DeviceInfo | null> {
  opening ??= (async () => {
    const dev = await GpuDevice.open(options);
    if (typeof dev === "string") {
      unavailable = dev;
      return null;
    }
    backend = new WebGpuBackend(dev, {
      // run-time shapes a host kernel recorded (hostCall, stacks) belong to the storage made of its output
      onHostOutput: (data, storage) => {
        const shape = runtimeShapes.get(data);
        if (shape) runtimeShapes.set(storage, shape);
      },
    });
    installKernels();
    registerBackend(backend as unknown as Backend);
    // staged functions called while the current device is webgpu run on it
    setDefaultExecutor(byDevice(installedExecutor(), webgpuExecutor(backend)));
    return listDevices().find((d) => d.name === "webgpu:0") ?? null;
  })();
  return opening;
}

/** Why initWebGPU found no device (null before it was tried, or when it found one). */
export function webgpuUnavailable(): string | null {
  return unavailable;
}

/** The open WebGPU backend, or null. */
export function webgpuBackend(): WebGpuBackend | null {
  return backend;
}

/**
 * Runs `fn` and frees the GPU memory of the webgpu tensors it made that its result does not hold
 * (any nesting of arrays and objects). Tensors are also freed when garbage collected, and by
 * `tensor.dispose()`.
 */
export function tidy<T>(fn: () => T): T {
  return gpuTidy(fn);
}

/**
 * The GPU's state: pipelines compiled so far and their compile time, predicates of staged loops and
 * branches read back, and the buffers (and bytes) tensors and plans hold.
 */
export async function webgpuStats(): Promise<{ compiled: number; compileMs: number; predicateReads: number; liveBuffers: number; liveBytes: number } | null> {
  if (!backend) return null;
  const s = await backend.dev.stats();
  return { ...s, liveBuffers: backend.dev.liveBuffers, liveBytes: backend.dev.liveBytes };
}

/** Resolves when the GPU has finished all work sent so far (for timing). */
export async function webgpuFinish(): Promise<void> {
  await backend?.dev.finish();
}
