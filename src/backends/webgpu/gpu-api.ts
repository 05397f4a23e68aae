/**
 * Finding a WebGPU implementation and opening a device: `navigator.gpu` in browsers and Deno, the
 * `webgpu` package (Dawn's Node binding, an optional dependency) in Node. The device asks for the
 * adapter's own limits (more storage buffers per stage, larger bindings, larger workgroups than the
 * WebGPU defaults), because the kernels pick their tile sizes from them.
 */
import { loadDawn, PLATFORM, type DawnModule } from "../../core/platform/node.js";
import type { AdapterInfo, DeviceLimits, GpuOptions } from "./device-options.js";
export type { AdapterInfo, DeviceLimits, GpuOptions } from "./device-options.js";

export interface OpenedDevice {
  device: GPUDevice;
  /**
   * The GPU object and adapter the device came from. They must stay referenced while the device
   * lives: Dawn's Node binding frees its instance when the GPU object is collected, and a device
   * whose instance is gone crashes the process the next time events are processed.
   */
  keepAlive: [object, object];
  adapterInfo: AdapterInfo;
  /** What the kernels size themselves by (the device's granted limits). */
  limits: DeviceLimits;
  /** Features the device was opened with ("shader-f16", "timestamp-query", "subgroups"). */
  features: string[];
}


const LIMIT_NAMES: (keyof DeviceLimits)[] = [
  "maxStorageBuffersPerShaderStage",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupsPerDimension",
  "minUniformBufferOffsetAlignment",
];


/** True where this JavaScript runtime is Node (it can load Dawn and block a thread). */
export const IS_NODE = PLATFORM === "node";

/** The GPU entry point of this runtime, or the reason there is none. */
async function gpuEntry(options: GpuOptions): Promise<GPU | string> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  if (!IS_NODE) return "this JavaScript runtime has no navigator.gpu (WebGPU)";
  let mod: DawnModule;
  try {
    mod = await loadDawn();
  } catch (e) {
    return `the 'webgpu' package (Dawn's Node binding) could not be loaded: ${(e as Error).message.split("\n")[0]}; install it with npm install webgpu`;
  }
  // Dawn's binding defines the GPU* classes (GPUBufferUsage, GPUMapMode, ...) as its globals.
  for (const [k, v] of Object.entries(mod.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  return mod.create(options.dawnFlags ?? []) as GPU;
}

/** Opens a device on the first adapter, asking for the adapter's limits; a string says why not. */
export async function openDevice(options: GpuOptions = {}): Promise<OpenedDevice | string> {
  const gpu = await gpuEntry(options);
  if (typeof gpu === "string") return gpu;
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? "high-performance" });
  } catch (e) {
    return `requestAdapter failed: ${(e as Error).message}`;
  }
  if (!adapter) return "no WebGPU adapter (no GPU driver found; in Node, Dawn needs a Vulkan driver: see scripts/lavapipe.mjs)";
  const requiredLimits: Record<string, number> = {};
  for (const k of LIMIT_NAMES) if (k !== "minUniformBufferOffsetAlignment") requiredLimits[k] = adapter.limits[k] as number;
  const wanted = ["timestamp-query", "subgroups", "shader-f16"].filter((f) => adapter!.features.has(f)) as GPUFeatureName[];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures: wanted });
  } catch (e) {
    return `requestDevice failed: ${(e as Error).message}`;
  }
  const limits = {} as DeviceLimits;
  for (const k of LIMIT_NAMES) limits[k] = device.limits[k] as number;
  const info = adapter.info ?? ({} as GPUAdapterInfo);
  return {
    device,
    keepAlive: [gpu, adapter],
    adapterInfo: { vendor: info.vendor ?? "", architecture: info.architecture ?? "", description: info.description ?? "", device: info.device ?? "" },
    limits,
    features: wanted,
  };
}
