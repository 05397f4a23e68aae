/**
 * The determinism switch (`sc.config.setDeterministic`, STAGECRAFT_DETERMINISTIC): while it is on,
 * nothing chooses how a staged function runs by timing, so float32 results are bit-identical to
 * eager code and from run to run. Today that means the "auto" engine (the default where
 * onnxruntime-node is installed: onnx/partition/) runs every graph on our executor, as
 * TensorFlow's `enable_op_determinism()` turns cuDNN's autotuning off. It is read at every call,
 * so it holds for functions staged before it was set too.
 */
import { config } from "./config.js";
import { ValueError } from "./errors.js";

const ON = ["1", "true"];
const OFF = ["", "0", "false"];

/** STAGECRAFT_DETERMINISTIC's value, or why it is not one (reported by stage(): see envError). */
function fromEnvironment(): { on: boolean; error: string | null } {
  const raw = config.deterministic;
  if (raw === undefined) return { on: false, error: null };
  const v = raw.trim().toLowerCase();
  if (ON.includes(v)) return { on: true, error: null };
  if (OFF.includes(v)) return { on: false, error: null };
  // (a value we cannot read: on, the safe side, and stage() says so)
  return { on: true, error: `the environment variable STAGECRAFT_DETERMINISTIC is ${JSON.stringify(raw)}; it takes 1 or true (on), 0 or false (off)` };
}

const initial = fromEnvironment();
let deterministic = initial.on;

/** Whether the determinism switch is on. */
export function isDeterministic(): boolean {
  return deterministic;
}

/**
 * Turns the determinism switch on or off (it takes effect at the next call of any staged
 * function); returns the previous setting.
 */
export function setDeterministic(on: boolean): boolean {
  if (typeof on !== "boolean") throw new ValueError(`expected true or false, got ${typeof on === "string" ? JSON.stringify(on) : String(on)}`, "config.setDeterministic");
  const before = deterministic;
  deterministic = on;
  return before;
}

/** The error STAGECRAFT_DETERMINISTIC's value is, or null (stage() throws it: the variable's value is the user's). */
export function deterministicEnvError(): ValueError | null {
  return initial.error === null ? null : new ValueError(initial.error, "stage");
}
