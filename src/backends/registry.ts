/** The backends, by kind: the CPU is always there; others are registered (api/ wiring does it for the ones it finds). */
import { addDevice } from "../core/device.js";
import { ValueError } from "../core/errors.js";
import type { Backend } from "./backend.js";
import { cpuBackend } from "./cpu/backend.js";

export { cpuBackend };

const backends = new Map<string, Backend>([[cpuBackend.kind, cpuBackend]]);

/** Makes a backend's devices available (their kind names the backend). */
export function registerBackend<S>(backend: Backend<S>): void {
  const b = backend as Backend;
  const known = backends.get(b.kind);
  if (known === b) return;
  if (known) throw new ValueError(`a backend of kind ${JSON.stringify(b.kind)} is registered already`, "registerBackend");
  backends.set(b.kind, b);
  for (const d of b.devices) addDevice({ name: d.name, kind: b.kind, description: d.description });
}

/** The backend of a device kind ("cpu"), or an error naming the registered ones. */
export function backendOfKind(kind: string): Backend {
  const b = backends.get(kind);
  if (!b) throw new ValueError(`no backend of kind ${JSON.stringify(kind)} is registered (registered: ${[...backends.keys()].join(", ")})`, "backend");
  return b;
}

/** The backend running a device ("cpu:0" runs on the "cpu" backend). */
export function backendOf(device: string): Backend {
  const i = device.indexOf(":");
  return backendOfKind(i < 0 ? device : device.slice(0, i));
}
