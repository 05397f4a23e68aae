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
import { currentHandler, isTracing } from "../../core/context.js";
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

/** How many times each converted function is executing right now (to detect recursion). */
const activeCalls = new Map<AnyFunction, number>();
/** Nesting of staged recursive calls, to report recursion that never closes. */
let stagedRecursionDepth = 0;
/** How deep staged recursion may nest before it is reported (each level a new signature). */
export const MAX_STAGED_RECURSION = 100;
const stagedVersions = new WeakMap<AnyFunction, (...args: unknown[]) => unknown>();

function hasSymbolicTensor(x: unknown): boolean {
  if (x instanceof Tensor) return x.isSymbolic;
  if (Array.isArray(x)) return x.some(hasSymbolicTensor);
  if (x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype) return Object.values(x).some(hasSymbolicTensor);
  return false;
}

/**
 * A function that calls itself with symbolic tensors while it is being staged is staged as
 * a recursive graph function (Snek's rep_fun): the recursive call goes through a staged
 * version of the function, whose call with the signature being traced becomes a call node
 * to the graph under construction.
 */
function invoke(g: AnyFunction, thisArg: unknown, args: readonly unknown[], original: AnyFunction): unknown {
  const h = currentHandler();
  if (!(h instanceof TraceContext)) return Reflect.apply(g, thisArg, args);
  if ((activeCalls.get(g) ?? 0) > 0 && thisArg === undefined && args.some(hasSymbolicTensor)) {
    let staged = stagedVersions.get(g);
    if (!staged) stagedVersions.set(g, (staged = stage(g, { name: original.name || "recursive", autograph: false }) as (...a: unknown[]) => unknown));
    if (++stagedRecursionDepth > MAX_STAGED_RECURSION) {
      stagedRecursionDepth = 0;
      throw new AutoGraphError(
        `function ${original.name || "(anonymous)"} keeps calling itself with new argument signatures while staged (more than ${MAX_STAGED_RECURSION} levels), ` +
          `so its recursion never closes into a recursive graph function; keep the arguments' shapes and JS values the same across recursive calls, or write it as a loop`,
      );
    }
    try {
      return staged(...args);
    } finally {
      stagedRecursionDepth--;
    }
  }
  activeCalls.set(g, (activeCalls.get(g) ?? 0) + 1);
  try {
    return Reflect.apply(g, thisArg, args);
  } finally {
    const n = activeCalls.get(g)! - 1;
    if (n === 0) activeCalls.delete(g);
    else activeCalls.set(g, n);
  }
}

/**
 * `f(...args)` with `this` = thisArg (undefined for plain calls). Outside staging it is one
 * frame besides the callee's (recursion in converted code goes nearly as deep as native).
 */
export function call(f: unknown, thisArg: unknown, args: readonly unknown[]): unknown {
  if (typeof f !== "function") throw new TypeError(`${describeValue(f)} is not a function`);
  const g = twins.get(f as AnyFunction) ?? resolveCallee(f as AnyFunction);
  if (!isTracing()) return Reflect.apply(g, thisArg, args);
  return invoke(g, thisArg, args, f as AnyFunction);
}

/**
 * The function a plain call `f(...)` in converted code calls: `ag.callee(f)(...args)`. The
 * call itself is the generated code's own (JavaScript's argument evaluation, `this` and error
 * for a non-function), so outside staging a converted call adds no frame to the stack.
 * While staging, the returned function also detects staged recursion.
 */
export function callee(f: unknown): unknown {
  if (typeof f !== "function") return f;
  const g = twins.get(f as AnyFunction) ?? resolveCallee(f as AnyFunction);
  if (!isTracing()) return g;
  return (...args: unknown[]) => invoke(g, undefined, args, f as AnyFunction);
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
  const g = twins.get(f as AnyFunction) ?? resolveCallee(f as AnyFunction);
  if (!isTracing()) return Reflect.apply(g, o, list);
  return invoke(g, o, list, f as AnyFunction);
}
