/**
 * `sc.io`: object-based checkpoints in safetensors files (save, restore, Checkpoint), and
 * reading/writing plain safetensors files.
 */
import { readFileSync } from "../core/platform/node.js";
import type { Tensor } from "../core/tensor.js";
import { CheckpointError } from "./errors.js";
import { decodeSafetensors, encodeSafetensors, type SafetensorsFile } from "./safetensors.js";
import { writeFileAtomic } from "./checkpoint.js";

export { save, restore, Checkpoint, CheckpointStatus, writeFileAtomic } from "./checkpoint.js";
export { CheckpointError } from "./errors.js";
export { Trackable } from "./trackable.js";
export { encodeSafetensors, decodeSafetensors, type SafetensorsFile, type SafetensorsEntry } from "./safetensors.js";

/** Reads a safetensors file (written by any library): its tensors by name and its metadata. */
export function readSafetensors(path: string): SafetensorsFile {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new CheckpointError(`cannot read the file: ${(e as Error).message}`, { path });
  }
  return decodeSafetensors(bytes, path);
}

/** Writes named tensors (and string metadata) as a safetensors file, atomically. */
export function writeSafetensors(path: string, tensors: Record<string, Tensor> | ReadonlyMap<string, Tensor>, metadata: Record<string, string> = {}): void {
  const map = tensors instanceof Map ? tensors : new Map(Object.entries(tensors));
  writeFileAtomic(path, encodeSafetensors(map as ReadonlyMap<string, Tensor>, metadata));
}
