/**
 * `sc.io`: object-based checkpoints in safetensors files (save, restore, Checkpoint), and
 * reading/writing plain safetensors files.
 */
import { readFileSync } from "../core/platform/node.js";
import { isPlainObject } from "../core/objects.js";
import type { Tensor } from "../core/tensor.js";
import { CheckpointError } from "./errors.js";
import { decodeSafetensors, encodeSafetensors, type SafetensorsFile } from "./safetensors.js";
import { checkPath, writeFileAtomic } from "./atomic-write.js";

export { save, restore, Checkpoint, CheckpointStatus, type RestoreOptions } from "./checkpoint.js";
export { writeFileAtomic } from "./atomic-write.js";
export { CheckpointError } from "./errors.js";
export { Trackable } from "./trackable.js";
export { encodeSafetensors, decodeSafetensors, type SafetensorsFile, type SafetensorsEntry } from "./safetensors.js";

/** Reads a safetensors file (written by any library): its tensors by name and its metadata. */
export function readSafetensors(path: string): SafetensorsFile {
  checkPath("readSafetensors", path);
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
  checkPath("writeSafetensors", path);
  if (tensors === null || typeof tensors !== "object" || !(tensors instanceof Map) && !isPlainObject(tensors)) {
    throw new CheckpointError(`takes a Map or an object from names to tensors, got ${tensors === null ? "null" : Array.isArray(tensors) ? "an array" : typeof tensors}`, { op: "writeSafetensors", path });
  }
  const map = tensors instanceof Map ? tensors : new Map(Object.entries(tensors));
  writeFileAtomic(path, encodeSafetensors(map as ReadonlyMap<string, Tensor>, metadata), "writeSafetensors");
}
