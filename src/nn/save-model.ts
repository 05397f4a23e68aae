/**
 * `sc.nn.saveModel(model, dir)` / `sc.nn.loadModel(dir)`: a whole model, architecture and
 * weights, as Keras's `model.save`: `dir/model.json` holds the format, the layers' classes and
 * configs (model-config.ts) and the paths of frozen modules; `dir/weights.safetensors` is an
 * object-based checkpoint of the model (io/checkpoint.ts). loadModel rebuilds the model from
 * registered classes only, so the model's own code need not be at hand.
 *
 * Loading treats both files as hostile: the JSON is checked key by key (ModelConfigError,
 * UnknownLayerError); every weight the rebuilt layers make is counted against the size of the
 * weights file before it is allocated (a config cannot allocate more than the file holds); the
 * restore is strict, so a weight of the wrong shape, missing or extra is a CheckpointError that
 * lists them. Each file is written atomically (the weights first, then the config); the pair is
 * not one atomic write.
 */
import { mkdirSync, path as nodePath, readFileSync, statSync } from "../core/platform/node.js";
import { storageBytes, type DType } from "../core/dtype.js";
import { checkPath, writeFileAtomic } from "../io/atomic-write.js";
import { restore, save } from "../io/checkpoint.js";
import { CheckpointError } from "../io/errors.js";
import { isPlainObject } from "../core/objects.js";
import { Module, withWeightGuard } from "./module.js";
import { decodeLayer, describe, encodeLayer, exactKeys, ModelConfigError } from "./model-config.js";

export const MODEL_FORMAT = "stagecraft.model.v1";
export const CONFIG_FILE = "model.json";
export const WEIGHTS_FILE = "weights.safetensors";
/** model.json larger than this is refused unread. */
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/** Saves `model` (a registered layer, Sequential included) to the directory `dir` (made if missing). */
export function saveModel(model: Module, dir: string): void {
  if (!(model instanceof Module)) throw new ModelConfigError(`takes an sc.nn.Module, got ${describe(model)}`, "saveModel");
  checkPath("saveModel", dir);
  // The config first: a model that cannot be saved writes nothing.
  const config = { format: MODEL_FORMAT, model: encodeLayer(model), frozen: model.namedModules().filter(([, m]) => !m.trainable).map(([p]) => p) };
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw new CheckpointError(`cannot make the directory: ${(e as Error).message}`, { path: dir, op: "saveModel", cause: e });
  }
  save(model, nodePath.join(dir, WEIGHTS_FILE));
  writeFileAtomic(nodePath.join(dir, CONFIG_FILE), new TextEncoder().encode(`${JSON.stringify(config, null, 1)}\n`), "saveModel");
}

/** Loads a model saved by saveModel: its classes must be built-in or registered (registerLayer). */
export function loadModel(dir: string): Module {
  checkPath("loadModel", dir);
  const configPath = nodePath.join(dir, CONFIG_FILE);
  const weightsPath = nodePath.join(dir, WEIGHTS_FILE);
  const configSize = regularFileSize(configPath);
  if (configSize > MAX_CONFIG_BYTES) throw new ModelConfigError(`${configPath}: ${configSize} bytes, more than a model config may have (${MAX_CONFIG_BYTES})`);
  let top: unknown;
  try {
    top = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(configPath)));
  } catch (e) {
    throw new ModelConfigError(`${configPath} is not JSON: ${(e as Error).message}`);
  }
  if (!isPlainObject(top)) throw new ModelConfigError(`${configPath} must hold an object, got ${describe(top)}`);
  exactKeys(top, ["format", "model", "frozen"], configPath);
  const { format, model: layer, frozen } = top as { format: unknown; model: unknown; frozen: unknown };
  if (format !== MODEL_FORMAT) throw new ModelConfigError(`${configPath}: format must be ${JSON.stringify(MODEL_FORMAT)}, got ${describe(format)}`);
  if (!Array.isArray(frozen) || frozen.some((p) => typeof p !== "string")) throw new ModelConfigError(`${configPath}: frozen must be an array of module paths (strings), got ${describe(frozen)}`);

  // Every weight the config makes is counted against the file before it is allocated.
  const budget = regularFileSize(weightsPath);
  let used = 0;
  const guard = (shape: readonly number[], dtype: DType) => {
    let n = 1;
    for (const d of shape) {
      if (!Number.isSafeInteger(d) || d < 0) throw new ModelConfigError(`${configPath}: a layer makes a weight of shape [${shape.join(", ")}]`);
      n *= d;
    }
    used += n * (dtype === "float16" ? 2 : storageBytes(dtype));
    if (used > budget) throw new CheckpointError(`the model config makes more weights (${used} bytes so far) than the weights file holds (${budget} bytes): they do not belong together`, { path: weightsPath, op: "loadModel" });
  };
  const model = withWeightGuard(guard, () => decodeLayer(layer));

  const modules = new Map(model.namedModules());
  for (const p of frozen as string[]) {
    const m = modules.get(p);
    if (m === undefined) throw new ModelConfigError(`${configPath}: frozen names ${JSON.stringify(p)}, which is no module of the model`);
    m.trainable = false;
  }
  restore(model, weightsPath);
  return model;
}

function regularFileSize(file: string): number {
  let st;
  try {
    st = statSync(file);
  } catch (e) {
    throw new CheckpointError(`cannot read it: ${(e as Error).message}`, { path: file, op: "loadModel", cause: e });
  }
  if (!st.isFile()) throw new CheckpointError(`is not a regular file`, { path: file, op: "loadModel" });
  return st.size;
}
