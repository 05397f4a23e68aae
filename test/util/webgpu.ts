/**
 * WebGPU in tests: opens the device once per test file (Mesa's lavapipe under `npm test`, see
 * scripts/lavapipe.mjs) and gives the reason to skip when there is none. Tests that need the GPU
 * pass `{ skip: gpuSkip }` so a missing driver shows up as a visible skip with its reason, never a
 * silent pass.
 */
import * as sc from "../../src/api/index.js";

const info = await sc.initWebGPU();

/** Why the WebGPU tests are skipped (false when the device is open). */
export const gpuSkip: string | false = info
  ? false
  : `WebGPU unavailable: ${process.env.STAGECRAFT_WEBGPU_UNAVAILABLE ?? sc.webgpuUnavailable() ?? "no adapter"}` +
    (process.env.VK_ICD_FILENAMES ? "" : ' (run the file through `npm test -- FILE`, or `eval "$(node scripts/lavapipe.mjs)"` first, to use the software driver)');

export const gpuInfo = info;

/** Runs fn with ops on the webgpu device. */
export function onGpu<T>(fn: () => T): T {
  return sc.device("webgpu", fn);
}
