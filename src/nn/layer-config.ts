/**
 * The constructor arguments each built-in layer was made with, for `saveModel` (save-model.ts):
 * a layer's config is exactly its arguments, so `new Class(...args)` rebuilds it. Each built-in
 * constructor records its own arguments after `super()`, so the most derived class records last
 * and wins; saveModel checks that the recording class is the instance's own class (a subclass
 * that records nothing is refused, not saved as its parent). Kept apart from model-config.ts,
 * which imports the layers: the layers import only this.
 */
import { isPlainObject } from "../core/objects.js";

export interface RecordedConfig {
  /** The class whose constructor recorded the arguments. */
  readonly cls: Function;
  readonly args: readonly unknown[];
}

const records = new WeakMap<object, RecordedConfig>();

/** Records `args` as the constructor arguments of `layer`, made by `cls` (options objects copied: a later change to the caller's object does not change the config). */
export function recordConfig(layer: object, cls: Function, args: readonly unknown[]): void {
  records.set(layer, { cls, args: args.map((a) => (isPlainObject(a) ? { ...a } : a)) });
}

export function recordedConfig(layer: object): RecordedConfig | undefined {
  return records.get(layer);
}
