/**
 * What stands in front of the "auto" engine (api/wiring.ts installs `gatedAuto(auto, ours)` as
 * "auto"): a call runs on our executor instead of auto's measured choice
 * - while the determinism switch is on (core/determinism.ts): auto's choice is made by timing and
 *   its plan rounds float32 differently, so neither would be bit-identical to eager code;
 * - when the call's tensors are on a device other than the CPU (a WebGPU tensor): onnxruntime's
 *   segments run on the host, so a plan would bring the values back from the device (and hand
 *   back host tensors).
 * Both are read at every call (one flag, the inputs' device), so the switch holds for functions
 * staged before it was set. Auto's own state for a graph is left as it was and used again when
 * the switch is turned off.
 */
import type { Tensor } from "../../core/tensor.js";
import { HOST_DEVICE, opDevice } from "../../core/device.js";
import { isDeterministic } from "../../core/determinism.js";
import type { Executor, PreparedRun } from "../../staging/concrete-function.js";

const onOurs = (inputs: Tensor[]): boolean => isDeterministic() || opDevice(inputs) !== HOST_DEVICE;

export function gatedAuto(auto: Executor, ours: Executor): Executor {
  const execute: Executor = (graph, inputs, library, numArgInputs) => (onOurs(inputs) ? ours : auto)(graph, inputs, library, numArgInputs);
  execute.prepare = (graph, library, numArgInputs) => {
    // (each side prepared when first needed: a deterministic process never prepares auto's)
    let autoRun: PreparedRun | null = null;
    let oursRun: PreparedRun | null = null;
    const prepared = (e: Executor): PreparedRun => e.prepare?.(graph, library, numArgInputs) ?? ((inputs) => e(graph, inputs, library, numArgInputs));
    return (inputs) => (onOurs(inputs) ? (oursRun ??= prepared(ours))(inputs) : (autoRun ??= prepared(auto))(inputs));
  };
  return execute;
}
