/**
 * Wiring of the WebGPU backend: `await sc.initWebGPU()` opens a device (Dawn's `webgpu` package in
 * Node, `navigator.gpu` in browsers), registers the backend (ops run their declared
 * `kernels.webgpu`), and `sc.listDevices()` shows "webgpu:0".
 * Without an adapter it resolves to null and `webgpuUnavailable()` says why.
 */
import type { DeviceInfo } from "../core/device.js";
import { listDevices } from "../core/device.js";
import { getOp, runtimeShapes } from "../ops/registry.js";
import { registerBackend } from "../backends/registry.js";
import type { Backend } from "../backends/backend.js";
import { GpuDevice, type WebGpuOpenOptions } from "../backends/webgpu/device.js";
import { WebGpuBackend, type HostKernel } from "../backends/webgpu/backend.js";
import { installedExecutor, setDefaultExecutor } from "../staging/concrete-function.js";
import { byDevice, webgpuExecutor } from "../exec/webgpu-executor.js";
import { tidy as gpuTidy } from "../backends/webgpu/storage.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";

const OPEN_OPTIONS = optionKeys<WebGpuOpenOptions>()("dawnFlags", "powerPreference", "thread");

let backend: WebGpuBackend | null = null;
let opening: Promise<DeviceInfo | null> | null = null;
let unavailable: string | null = null;

/**
 * Opens the WebGPU device (once) and makes it available as "webgpu:0": resolves to its DeviceInfo,
 * or to null when this runtime has no WebGPU adapter (then `webgpuUnavailable()` says why).
 * In Node the device lives in a worker thread so that synchronous reads (dataSync) can block on it;
 * `{ thread: "main" }` keeps it on this thread (as in a browser: only `await t.data()` reads).
 */
export function initWebGPU(options: WebGpuOpenOptions = {}): Promise<DeviceInfo | null> {
  try {
    checkOptions("initWebGPU", options, OPEN_OPTIONS);
    checkChoice("initWebGPU", "powerPreference", options.powerPreference, ["high-performance", "low-power"]);
    checkChoice("initWebGPU", "thread", options.thread, ["worker", "main"]);
  } catch (e) {
    return Promise.reject(e);
  }
  opening ??= (async () => {
    const dev = await GpuDevice.open(options);
    if (typeof dev === "string") {
      unavailable = dev;
      return null;
    }
    backend = new WebGpuBackend(dev, {
      cpuKernel: (op) => getOp(op).kernels.cpu as HostKernel | undefined,
      // run-time shapes a host kernel recorded (hostCall, stacks) belong to the storage made of its output
      onHostOutput: (data, storage) => {
        const shape = runtimeShapes.get(data);
        if (shape) runtimeShapes.set(storage, shape);
      },
    });
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
