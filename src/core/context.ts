/**
 * The context stack decides what an op call does: run a kernel now (eager), or record a
 * node in a graph under construction (staging). Gradient tapes observe op calls through
 * the recorder list, independently of which handler ran them.
 */
import type { Tensor } from "./tensor.js";
import type { Variable } from "./variable.js";

/** An op as the context stack sees it: its declaration (ops/registry.ts OpDef) says the rest. */
export interface OpRef {
  readonly name: string;
}

export interface OpHandler {
  /** Runs or records `def` on already-converted tensor inputs; returns its outputs. */
  run(def: OpRef, inputs: Tensor[], attrs: any): Tensor[];
  /** Staging: the value of a variable at this point of the graph (a read node). */
  readVariable?(v: Variable): Tensor;
  /** Staging: records an assignment of `value` to `v`. */
  assignVariable?(v: Variable, value: Tensor): void;
  /** Staging: called before a variable is created while this handler is active (may refuse). */
  createVariable?(name: string): void;
  /**
   * A handler that transforms the values ops see (vmap's levels) runs control flow itself:
   * staging's cond/whileLoop and AutoGraph's if/while hand it their callbacks, and a staged
   * function called under it runs its function inline (so the handler sees every op).
   */
  readonly controlFlow?: ControlFlowTransform;
}

/**
 * Control flow under a value transformation (vmap): `cond` with a predicate that is not a JS
 * value or a concrete tensor, and `whileLoop`. `select(pred, a, b)` merges the two branches'
 * results where the predicate differs per example (`where` leaf by leaf, as the caller's
 * construct merges its values); the loop's `cond` returns a bool scalar tensor per example.
 */
export interface ControlFlowTransform {
  cond<T>(pred: Tensor, thenFn: () => T, elseFn: () => T, select: (pred: Tensor, a: T, b: T) => T): T;
  /** `shapeInvariants`: per loop variable, the per-example shape it may take (null dims: any), or null. */
  whileLoop(
    cond: (...vars: Tensor[]) => Tensor,
    body: (...vars: Tensor[]) => Tensor[],
    vars: Tensor[],
    maxIterations: number,
    shapeInvariants?: readonly (readonly (number | null)[] | null)[],
  ): Tensor[];
  /** Whether `t` differs per example here (is batched at this transformation), rather than being shared by all. */
  batches(t: Tensor): boolean;
}

export interface OpRecorder {
  /** Called after every op; a recorder keeps what it needs to differentiate it. */
  recordOp(def: OpRef, inputs: Tensor[], attrs: any, outputs: Tensor[]): void;
  /** Whether gradients may be asked with respect to `t` (it is watched or derived from one). */
  tracks(t: Tensor): boolean;
}

/** Whether some active recorder may need gradients with respect to `t`. */
export function anyRecorderTracks(t: Tensor): boolean {
  for (let i = 0; i < recorders.length; i++) if (recorders[i]!.tracks(t)) return true;
  return false;
}

const handlers: OpHandler[] = [];
/** Active recorders (gradient tapes), innermost last. */
export const recorders: OpRecorder[] = [];

let eagerHandler: OpHandler | null = null;

export function setEagerHandler(h: OpHandler): void {
  eagerHandler = h;
}

export function currentHandler(): OpHandler {
  return handlers.length > 0 ? handlers[handlers.length - 1]! : eagerHandler!;
}

/** True while some function is being staged (a handler other than eager is active). */
export function isTracing(): boolean {
  return handlers.length > 0;
}

/**
 * Callbacks handed to Stagecraft functions (sc.grad's f, sc.cond's branches, whileLoop's body,
 * tape.record's function...) from plain code are converted by AutoGraph when they run while a
 * function staged with AutoGraph is being traced, as TF's control flow does with
 * `autograph.tf_convert`: `sc.stage(sc.grad(f))` in plain code converts f. The converter is
 * installed by the AutoGraph layer (api/wiring.ts); eager code keeps JavaScript's semantics.
 */
type CallbackConverter = <F extends (...args: any[]) => any>(f: F) => F;
let callbackConverter: CallbackConverter | null = null;
/** Whether the innermost staged function being traced converts with AutoGraph. */
let convertingCallbacks = false;

export function setCallbackConverter(c: CallbackConverter | null): void {
  callbackConverter = c;
}

/** Runs `fn` (a staged function's body) with callbacks converted (`on`) or left as written. */
export function withCallbackConversion<T>(on: boolean, fn: () => T): T {
  const saved = convertingCallbacks;
  convertingCallbacks = on;
  try {
    return fn();
  } finally {
    convertingCallbacks = saved;
  }
}

/** `f` as a Stagecraft function taking it as a callback should call it (converted while an AutoGraph trace runs). */
export function traceCallback<F extends (...args: any[]) => any>(f: F): F {
  return convertingCallbacks && callbackConverter !== null && handlers.length > 0 && typeof f === "function" ? callbackConverter(f) : f;
}

/** Runs `fn` eagerly, outside any graph being built (sc.initScope). */
export function withEagerContext<T>(fn: () => T): T {
  const saved = handlers.splice(0, handlers.length);
  try {
    return fn();
  } finally {
    handlers.splice(0, handlers.length, ...saved);
  }
}

/** Runs `fn` with `h` as the innermost handler. */
export function withHandler<T>(h: OpHandler, fn: () => T): T {
  handlers.push(h);
  try {
    return fn();
  } finally {
    handlers.pop();
  }
}

export function pushRecorder(r: OpRecorder): void {
  recorders.push(r);
}
export function removeRecorder(r: OpRecorder): void {
  const i = recorders.lastIndexOf(r);
  if (i >= 0) recorders.splice(i, 1);
}

/** Runs `fn` with no recorder active (for tape.stopRecording and gradient computations). */
export function withoutRecorders<T>(only: OpRecorder[] | null, fn: () => T): T {
  const removed: [number, OpRecorder][] = [];
  for (let i = recorders.length - 1; i >= 0; i--) {
    if (only === null || only.includes(recorders[i]!)) {
      removed.push([i, recorders[i]!]);
      recorders.splice(i, 1);
    }
  }
  try {
    return fn();
  } finally {
    for (let k = removed.length - 1; k >= 0; k--) recorders.splice(removed[k]![0], 0, removed[k]![1]);
  }
}
