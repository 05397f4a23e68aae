/**
 * Moving a tensor to another device: `x.to("webgpu")`, `sc.toDevice(x, "cpu")`. It is the identity
 * op run on the target device (the eager handler copies an input from another device), so tapes
 * differentiate through it (the gradient comes back through the same copy) and staged functions
 * trace it like any op.
 */
import { device, resolveDevice } from "../core/device.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { toTensor } from "./convert.js";
import { identity } from "./identity.js";
import { installMethods } from "./methods.js";

/** `x` on device `name` ("cpu", "webgpu", "webgpu:0"): itself when it is there already, else a copy. */
export function toDevice(x: TensorLike, name: string): Tensor {
  const t = toTensor(x, "to");
  const target = resolveDevice(name);
  if (t.device === target) return t;
  return device(target, () => identity(t));
}

declare module "../core/tensor.js" {
  interface Tensor {
    /** This tensor on device `name` (a copy when it lives elsewhere; see sc.listDevices()). */
    to(name: string): Tensor;
  }
}
installMethods({ to: toDevice });
