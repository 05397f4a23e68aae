/**
 * The device options and limits the public WebGPU types name, apart from gpu-api.ts (which names
 * @webgpu/types' GPUDevice), so the emitted declarations a consumer reads need no @webgpu/types.
 */
export interface DeviceLimits {
  maxStorageBuffersPerShaderStage: number;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxComputeWorkgroupSizeY: number;
  maxComputeWorkgroupsPerDimension: number;
  minUniformBufferOffsetAlignment: number;
}

/** What the adapter says it is. */
export interface AdapterInfo {
  vendor: string;
  architecture: string;
  description: string;
  device: string;
}

export interface GpuOptions {
  /** Dawn toggles for the Node binding (e.g. "enable-dawn-features=allow_unsafe_apis"). */
  dawnFlags?: string[];
  powerPreference?: "high-performance" | "low-power";
}
