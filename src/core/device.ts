/**
 * Devices. Every tensor knows its device; ops run on the device of the innermost
 * `device(name, fn)` scope, or outside scopes on their inputs' device (opDevice; default: the CPU),
 * and inputs that live elsewhere are copied there transparently. A device's kind names the
 * backend that runs it (backends/backend.ts); a backend adds its devices when it is registered.
 * The CPU is always there.
 */
import { ValueError } from "./errors.js";
import { isTracing } from "./context.js";

export interface DeviceInfo {
  /** Full name, e.g. "cpu:0". */
  name: string;
  /** Kind of backend, e.g. "cpu". */
  kind: string;
  description: string;
}

/** The kind of the devices of remote workers (src/remote/), listed but not placeable with device(). */
export const REMOTE_KIND = "remote";

/** The device of host memory: a tensor made from host data (typed arrays) lives here until an op moves it. */
export const HOST_DEVICE = "cpu:0";

const devices: DeviceInfo[] = [{ name: HOST_DEVICE, kind: "cpu", description: "CPU (TypeScript kernels, WebAssembly SIMD, worker threads)" }];
const scope: string[] = [];

/** Adds a device (backends/backend.ts registerBackend does, for each device of a backend). */
export function addDevice(d: DeviceInfo): void {
  const known = devices.find((x) => x.name === d.name);
  if (known && known.kind !== d.kind) throw new ValueError(`device ${d.name} is of kind ${known.kind}, not ${d.kind}`, "device");
  if (!known) devices.push({ ...d });
}

/**
 * Removes a device that is not the CPU (the remote layer does, for a worker's devices when its
 * connection closes). Returns whether it was there.
 */
export function removeDevice(name: string): boolean {
  const i = devices.findIndex((x) => x.name === name);
  if (i <= 0) return false;
  devices.splice(i, 1);
  return true;
}

export function listDevices(): DeviceInfo[] {
  return devices.map((d) => ({ ...d }));
}

/** Resolves "cpu", "cpu:0", "/device:CPU:0" to a registered device name. */
export function resolveDevice(name: string): string {
  const n = name.toLowerCase().replace(/^\/?device:/, "");
  const full = n.includes(":") ? n : `${n}:0`;
  const d = devices.find((x) => x.name === full);
  if (!d) throw new ValueError(`unknown device ${JSON.stringify(name)}; available: ${devices.map((x) => x.name).join(", ")}`, "device");
  return d.name;
}

/** The device of the innermost `device(name, fn)` scope, or null outside every scope. */
export function scopedDevice(): string | null {
  return scope.length > 0 ? scope[scope.length - 1]! : null;
}

/**
 * The device an op on `inputs` runs on: the innermost scope's; outside every scope, the device of
 * its inputs (an accelerator's when they are mixed: a CPU input is copied there), else the default.
 * So `x.to("webgpu").mul(2)` stays on the GPU; `sc.device("cpu", ...)` brings work back.
 */
export function opDevice(inputs: readonly { readonly device: string }[]): string {
  if (scope.length > 0) return scope[scope.length - 1]!;
  const dflt = devices[0]!.name;
  for (let i = 0; i < inputs.length; i++) {
    const d = inputs[i]!.device;
    if (d !== dflt && devices.some((x) => x.name === d)) return d;
  }
  return dflt;
}

/** The device new tensors are placed on. */
export function currentDevice(): string {
  return scope.length > 0 ? scope[scope.length - 1]! : devices[0]!.name;
}

/** Whether ops may be placed on remote devices one by one (the remote layer says so when it installs its op runner). */
let remotePlacement = false;
export function enableRemotePlacement(): void {
  remotePlacement = true;
}

/** Whether `name` is a remote worker's device ("/job:worker/task:0/device:cpu:0"): the only names that start with "/". */
export function isRemoteDevice(name: string): boolean {
  return name.charCodeAt(0) === 47;
}

/** Runs `fn` with ops placed on device `name`. */
export function device<T>(name: string, fn: () => T): T {
  const resolved = resolveDevice(name);
  // (without the remote layer's op runner a worker's device holds no tensor: ops cannot be placed there one by one)
  if (!remotePlacement && devices.find((x) => x.name === resolved)!.kind === REMOTE_KIND) {
    throw new ValueError(`${resolved} is a remote worker's device: ops are not placed there one by one; run a staged function there with sc.remote.device(${JSON.stringify(resolved)}, fn)`, "device");
  }
  // (a graph being traced has no per-op placement on workers: its ops would silently run here)
  if (isTracing() && isRemoteDevice(resolved)) {
    throw new ValueError(`device(${JSON.stringify(resolved)}) inside a function being staged: a staged graph is not placed on a worker op by op; run the staged function there with sc.remote.device(${JSON.stringify(resolved)}, fn)`, "device");
  }
  scope.push(resolved);
  try {
    return fn();
  } finally {
    scope.pop();
  }
}
