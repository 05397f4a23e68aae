/**
 * Devices. Every tensor knows its device; ops run on the device of the innermost
 * `device(name, fn)` scope (default: the CPU), and inputs that live elsewhere are copied there
 * transparently. A device's kind names the backend that runs it (backends/backend.ts); a
 * backend adds its devices when it is registered. The CPU is always there.
 */
import { ValueError } from "./errors.js";

export interface DeviceInfo {
  /** Full name, e.g. "cpu:0". */
  name: string;
  /** Kind of backend, e.g. "cpu". */
  kind: string;
  description: string;
}

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

/** The device new tensors are placed on. */
export function currentDevice(): string {
  return scope.length > 0 ? scope[scope.length - 1]! : devices[0]!.name;
}

/** Runs `fn` with ops placed on device `name`. */
export function device<T>(name: string, fn: () => T): T {
  scope.push(resolveDevice(name));
  try {
    return fn();
  } finally {
    scope.pop();
  }
}
