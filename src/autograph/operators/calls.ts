/**
 * Calls from converted code. `ag.call(f, thisArg, args)` and `ag.callMethod(o, name, args)`
 * call the converted twin of a user function when there is one: registered by the loader or
 * the Babel plugin (`registerConverted`), or made on demand by the converter the transform
 * installs (`setConverter`), cached either way. Native functions, classes, bound functions and
 * Stagecraft's own functions are called as they are. `console.log` and `Math.*` called as
 * methods dispatch to `ag.print` and `ag.math`.
 */
import { Tensor } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import * as ops from "../../ops/index.js";
import * as stagingControlFlow from "../../staging/control-flow.js";
import * as stagingHost from "../../staging/host.js";
import { stage } from "../../staging/stage.js";
import { currentHandler } from "../../core/context.js";
import { TraceContext } from "../../staging/trace-context.js";
import { AutoGraphError, TensorList, describeValue } from "./state.js";
import { print } from "./logging.js";
import { math } from "./math.js";

type AnyFunction = (...args: any[]) => any;
/** Returns the converted form of a function, or null when it cannot or should not be converted. */
export type Converter = (fn: AnyFunction) => AnyFunction | null;

const twins = new WeakMap<AnyFunction, AnyFunction>();
const isTwin = new WeakSet<AnyFunction>();
let unconvertible = new WeakSet<AnyFunction>();
const library = new WeakSet<AnyFunction>();
let converter: Converter | null = null;

/** Records `converted` as the converted twin of `original` (the loader and Babel plugin call this). */
export function registerConverted<F extends AnyFunction>(original: F, converted: F): F {
  twins.set(original, converted);
  isTwin.add(converted);
  return converted;
}

/** The registered (or already made) converted twin of `fn`, if any. */
export function getConverted<F extends AnyFunction>(fn: F): F | undefined {
  return twins.get(fn) as F | undefined;
}

/** Installs the on-demand converter used by `ag.call` for functions without a twin (null removes it). */
export function setConverter(c: Converter | null): void {
  converter = c;
  unconvertible = new WeakSet();
}

/** Marks a function as never to be converted (called as it is from converted code). */
export function doNotConvert<F extends AnyFunction>(fn: F): F {
  library.add(fn);
  return fn;
}

/** Marks every function of an object (and of the plain objects / namespaces in it) as library code. */
export function markLibrary(obj: object, depth = 1): void {
  for (const k of Object.getOwnPropertyNames(obj)) {
    let v: unknown;
    try {
      v = (obj as Record<string, unknown>)[k];
    } catch {
      continue;
    }
    if (typeof v === "function") {
      library.add(v as AnyFunction);
      if (depth > 0 && v.prototype && typeof v.prototype === "object") markLibrary(v.prototype as object, 0);
    } else if (depth > 0 && v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Tensor)) markLibrary(v, depth - 1);
  }
}

markLibrary(ops);
markLibrary(stagingControlFlow);
markLibrary(stagingHost);
markLibrary(Tensor.prototype, 0);
markLibrary(Variable.prototype, 0);
markLibrary(TensorList.prototype, 0);
library.add(stage as AnyFunction);

function isNativeOrClass(f: AnyFunction): boolean {
  let src: string;
  try {
    src = Function.prototype.toString.call(f);
  } catch {
    return true;
  }
  return /\{\s*\[native code\]\s*\}\s*$/.test(src) || /^class[\s{]/.test(src);
}

/** The function to call for `f`: its converted twin when there is (or can be made) one. */
export function resolveCallee<F extends AnyFunction>(f: F): F {
  const twin = twins.get(f);
  if (twin) return twin as F;
  if (converter === null || isTwin.has(f) || library.has(f) || unconvertible.has(f)) return f;
  if (isNativeOrClass(f) || Object.prototype.hasOwnProperty.call(f, "stagedName")) {
    unconvertible.add(f);
    return f;
  }
  const c = converter(f);
  if (c && c !== f) {
    registerConverted(f, c);
    return c as F;
  }
  unconvertible.add(f);
  return f;
}

/**
 * Calls in progress while staging made inside a staged branch or loop body, per function: the
 * region each was made in and how many distinct nested regions the recursion has gone through.
 */
const stagedCalls = new Map<AnyFunction, { ctx: TraceContext; depth: number }[]>();
/** How many nested staged regions a recursion may go through before it is reported. */
export const MAX_STAGED_RECURSION = 100;

function invoke(g: AnyFunction, thisArg: unknown, args: readonly unknown[], original: AnyFunction): unknown {
  const h = currentHandler();
  if (!(h instanceof TraceContext) || !h.isRegion) return Reflect.apply(g, thisArg, args);
  let frames = stagedCalls.get(g);
  if (!frames) stagedCalls.set(g, (frames = []));
  const prev = frames[frames.length - 1];
  const depth = prev ? (prev.ctx === h ? prev.depth : prev.depth + 1) : 1;
  if (depth > MAX_STAGED_RECURSION) {
    throw new AutoGraphError(
      `function ${original.name || "(anonymous)"} calls itself more than ${MAX_STAGED_RECURSION} levels deep inside staged branches: its base case depends on a tensor, ` +
        `so tracing never reaches it. Staging recursion as a recursive graph function is not supported yet; write the recursion as a loop (while or for...of)`,
    );
  }
  frames.push({ ctx: h, depth });
  try {
    return Reflect.apply(g, thisArg, args);
  } finally {
    frames.pop();
    if (frames.length === 0) stagedCalls.delete(g);
  }
}

/** `f(...args)` with `this` = thisArg (undefined for plain calls). */
export function call(f: unknown, thisArg: unknown, args: readonly unknown[]): unknown {
  if (typeof f !== "function") throw new TypeError(`${describeValue(f)} is not a function`);
  return invoke(resolveCallee(f as AnyFunction), thisArg, args, f as AnyFunction);
}

/**
 * `o[name](...args)`. `args` may be a thunk returning the arguments, which keeps JavaScript's
 * order exactly (the method is read before the arguments are evaluated).
 */
export function callMethod(o: unknown, name: PropertyKey, args: readonly unknown[] | (() => readonly unknown[])): unknown {
  const f = (o as Record<PropertyKey, unknown>)[name]; // null / undefined throw JavaScript's own TypeError
  const list = typeof args === "function" ? args() : args;
  if (typeof f !== "function") throw new TypeError(`${describeValue(o)}.${String(name)} is not a function`);
  if (o === console && name === "log") return print(...list);
  if (o === Math && typeof name === "string" && typeof math[name] === "function") return math[name](...list);
  return invoke(resolveCallee(f as AnyFunction), o, list, f as AnyFunction);
}
