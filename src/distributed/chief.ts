/**
 * Work done by one rank of a data-parallel job (rank 0, the chief): the ranks hold the same
 * weights, so checkpoints and logs are written once, not once per rank racing for one path.
 */
import { Callback, checkCallback, CALLBACK_KEYS, type FitCallbacks } from "../nn/callbacks.js";
import { save } from "../io/checkpoint.js";
import { isChief } from "./init.js";

/**
 * `sc.io.save` on the chief only. Returns whether this rank wrote the file. No rank waits for
 * the write: a rank that reads the file back must wait for the chief first (an all-reduce of a
 * dummy tensor is a barrier).
 */
export function saveOnChief(root: unknown, path: string): boolean {
  if (!isChief()) return false;
  save(root, path);
  return true;
}

/**
 * A fit callback whose hooks run on the chief only, and do nothing on the other ranks: for
 * callbacks that write files or print (a checkpoint every epoch, a CSV log). Not for callbacks
 * that decide (EarlyStopping stays on every rank: fit gives every rank the same epoch values).
 *
 *     callbacks: [sc.distributed.chiefOnly(new sc.nn.ModelCheckpoint({ path: "ckpt-{epoch}.safetensors" }))]
 */
export function chiefOnly(callback: FitCallbacks | Callback): Callback & FitCallbacks {
  const inner = checkCallback("distributed.chiefOnly", callback);
  const wrapped = new ChiefOnly();
  for (const k of CALLBACK_KEYS) {
    const hook = inner[k] as ((...args: unknown[]) => void) | undefined;
    if (hook) (wrapped as unknown as Record<string, unknown>)[k] = (...args: unknown[]) => (isChief() ? hook.apply(inner, args) : undefined);
  }
  return wrapped;
}

class ChiefOnly extends Callback {}
