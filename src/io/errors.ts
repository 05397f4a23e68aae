/** Errors reading, writing and matching checkpoints. */
import { StagecraftError } from "../core/errors.js";

export interface CheckpointErrorDetails {
  /** The checkpoint file. */
  path?: string;
  /** The entry (tensor name or object path) concerned. */
  entry?: string;
  /** The API that raised it ("decodeSafetensors"); "checkpoint" when not given. */
  op?: string;
  /** The underlying error (an I/O error of the file system). */
  cause?: unknown;
}

/**
 * A checkpoint that cannot be read (truncated, corrupted, not safetensors) or does not match
 * the objects restored into it (a missing entry, a wrong shape or dtype). The message names
 * the file and the entry; `path` and `entry` hold them.
 */
export class CheckpointError extends StagecraftError {
  readonly path: string | undefined;
  readonly entry: string | undefined;
  constructor(message: string, details: CheckpointErrorDetails = {}) {
    const where = [details.path ? `${details.path}` : "", details.entry ? `entry ${JSON.stringify(details.entry)}` : ""].filter(Boolean).join(", ");
    super(`${where ? `${where}: ` : ""}${message}`, details.op ?? "checkpoint");
    this.path = details.path;
    this.entry = details.entry;
    if (details.cause !== undefined) Object.defineProperty(this, "cause", { value: details.cause, enumerable: false, configurable: true, writable: true });
  }
}
