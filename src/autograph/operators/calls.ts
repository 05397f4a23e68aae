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
import { AutoGraphError, TensorList, describeValue, isWeak, markWeak, readIfVariable, weakOperands } from "./state.js";
import { DEFAULT_FLOAT, isFloat } from "../../core/dtype.js";
import { cast } from "../../ops/cast.js";
import { concreteTruth } from "./logical.js";
import { print } from "./logging.js";
import { math } from "./math.js";
import { builtinStandIns } from "./globals.js";

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

/** Whether `fn` is a converted twin (registered for some original). */
export function isConvertedTwin(fn: AnyFunction): boolean {
  return isTwin.has(fn);
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
  const standIn = builtinStandIns.get(f);
  if (standIn) return standIn as F;
  if (converter === null || isTwin.has(f) || library.has(f) || unconvertible.has(f)) return f;
  // (a bound function's source is native; the converter looks through it to its target)
  const bound = typeof f.name === "string" && f.name.startsWith("bound ");
  if ((!bound && isNativeOrClass(f)) || Object.prototype.hasOwnProperty.call(f, "stagedName")) {
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

// ---------------------------------------------------------------------------------------------
// callbacks

/** Built-in methods that call the functions they are given (their callbacks are converted). */
const CALLBACK_TAKERS: ReadonlySet<unknown> = (() => {
  const out = new Set<unknown>();
  const names = ["map", "forEach", "filter", "reduce", "reduceRight", "some", "every", "find", "findIndex", "findLast", "findLastIndex", "flatMap", "sort", "toSorted"];
  const typedArrayProto = Object.getPrototypeOf(Int8Array.prototype) as Record<string, unknown>;
  for (const proto of [Array.prototype as unknown as Record<string, unknown>, typedArrayProto]) for (const n of names) if (typeof proto[n] === "function") out.add(proto[n]);
  out.add(Map.prototype.forEach);
  out.add(Set.prototype.forEach);
  out.add(Array.from);
  return out;
})();

/** Whether a function is Stagecraft's own (installed by autograph/api.ts: by its source file). */
let libraryCheck: ((f: AnyFunction) => boolean) | null = null;
const libraryVerdicts = new WeakMap<AnyFunction, boolean>();

/** @internal Installs the test for Stagecraft's own functions (sc.grad, sc.cond, ...). */
export function setLibraryCheck(check: ((f: AnyFunction) => boolean) | null): void {
  libraryCheck = check;
}

/** Functions called as they are, their arguments untouched (transpiler helpers such as esbuild's `__name`). */
const passThrough = new WeakSet<AnyFunction>();

/** Marks a function to be called as it is, with its arguments as they are (no callback conversion). */
export function passArgumentsThrough<F extends AnyFunction>(fn: F): F {
  passThrough.add(fn);
  return fn;
}

function isLibraryFunction(f: AnyFunction): boolean {
  if (library.has(f)) return true;
  if (!libraryCheck || isTwin.has(f) || passThrough.has(f)) return false;
  let v = libraryVerdicts.get(f);
  if (v === undefined) libraryVerdicts.set(f, (v = libraryCheck(f)));
  return v;
}

/**
 * Whether the callbacks given to `f` are converted: array methods (`xs.map(v => v * x)`) and
 * Stagecraft's own functions (`sc.cond(p, () => ..., () => ...)`, `sc.grad(f)`, `tape.record`),
 * which call them; as AutoGraph's converted_call, the callback is converted when the call is
 * made from converted code. Other functions get the functions they are given as they are
 * (their identity may matter: `emitter.off(handler)`).
 */
function convertsCallbacks(f: AnyFunction, args: readonly unknown[]): boolean {
  let any = false;
  for (let i = 0; i < args.length; i++) if (typeof args[i] === "function") any = true;
  return any && !passThrough.has(f) && (CALLBACK_TAKERS.has(f) || isLibraryFunction(f));
}

/** Built-in methods that take the truth of what their callback returns (a tensor is always truthy to them). */
const PREDICATE_TAKERS: ReadonlyMap<unknown, string> = (() => {
  const out = new Map<unknown, string>();
  const names = ["filter", "some", "every", "find", "findIndex", "findLast", "findLastIndex"];
  const typedArrayProto = Object.getPrototypeOf(Int8Array.prototype) as Record<string, unknown>;
  for (const proto of [Array.prototype as unknown as Record<string, unknown>, typedArrayProto]) for (const n of names) if (typeof proto[n] === "function") out.set(proto[n], n);
  return out;
})();

/**
 * A predicate for `filter`, `some`, ...: a concrete tensor result is read (as a condition is);
 * a symbolic one is an error, since the method needs a JavaScript boolean while tracing.
 */
function truthOf(cb: AnyFunction, method: string): AnyFunction {
  return function (this: unknown, ...a: unknown[]): unknown {
    const r = Reflect.apply(cb, this, a);
    if (!(r instanceof Tensor)) return r;
    const t = readIfVariable(r) as Tensor;
    if (t.isSymbolic) {
      throw new AutoGraphError(
        `the callback given to ${method} returned a symbolic tensor: ${method} needs a JavaScript boolean for each element while tracing, which a staged value is not; ` +
          `compute on the whole tensor instead (a boolean mask with sc.where, or sc.any / sc.all)`,
      );
    }
    return concreteTruth(t, method);
  };
}

/** The arguments with each function replaced by the function converted code would call. */
function convertedCallbacks(f: AnyFunction, args: readonly unknown[]): unknown[] {
  const predicate = PREDICATE_TAKERS.get(f);
  return args.map((a) => {
    if (typeof a !== "function") return a;
    const g = resolveCallee(a as AnyFunction);
    return predicate ? truthOf(g, predicate) : g;
  });
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
  // A staged function (and the library's own) handles its own recursion.
  if (!(h instanceof TraceContext) || library.has(g) || Object.prototype.hasOwnProperty.call(g, "stagedName")) return Reflect.apply(g, thisArg, args);
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
  const list = g === f && convertsCallbacks(g, args) ? convertedCallbacks(g, args) : args;
  if (!isTracing()) return Reflect.apply(g, thisArg, list);
  // (weak tensors, standing for JS numbers, exist only while staging)
  const weak = g === f && (library.has(g) || isLibraryFunction(g)) ? weakLibraryArgs(thisArg, list) : null;
  return weak ? invoke(g, weak[0], weak.slice(1), f as AnyFunction) : invoke(g, thisArg, list, f as AnyFunction);
}

/**
 * A Stagecraft function given weak tensors (JS numbers a staged construct carried) gets them as
 * it would get the JS numbers: meeting strongly typed tensors (the receiver or other arguments)
 * they take the dtype the number would (`x.mul(j * 0.1)` stays float32 for a float32 x); alone,
 * a weak float becomes DEFAULT_FLOAT as a JS number would. Null when there is none.
 */
function weakLibraryArgs(thisArg: unknown, args: readonly unknown[]): unknown[] | null {
  const all = [thisArg, ...args];
  // Only weak floats: a weak integer may be an index (and meets a float tensor as one anyway).
  const isWeakFloat = (a: unknown): boolean => a instanceof Tensor && isWeak(a) && isFloat(a.dtype);
  if (!all.some(isWeakFloat)) return null;
  const strong = all.some((a) => a instanceof Tensor && !isWeak(a));
  const adjusted = strong ? weakOperands(all) : all;
  return all.map((a, i) => {
    if (!isWeakFloat(a)) return a;
    const b = adjusted[i] as Tensor;
    return markWeak(strong || b.dtype === DEFAULT_FLOAT ? b : cast(b, DEFAULT_FLOAT));
  });
}

const FN_CALL = Function.prototype.call;
const FN_APPLY = Function.prototype.apply;
const FN_BIND = Function.prototype.bind;

/** `f.call(t, ...a)`, `f.apply(t, a)`, `f.bind(t, ...a)` from converted code: with f's converted twin. */
function callFunctionMethod(fn: AnyFunction, method: unknown, list: readonly unknown[]): unknown {
  if (method === FN_BIND) return Reflect.apply(FN_BIND, resolveCallee(fn), list);
  if (method === FN_CALL) return call(fn, list[0], list.slice(1));
  const spread = list[1];
  if (spread !== null && spread !== undefined && typeof spread !== "object" && typeof spread !== "function") throw new TypeError("CreateListFromArrayLike called on non-object");
  return call(fn, list[0], spread === null || spread === undefined ? [] : Array.from(spread as ArrayLike<unknown>));
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
  if (g === f && !passThrough.has(g) && (CALLBACK_TAKERS.has(g) || isLibraryFunction(g))) return (...args: unknown[]) => call(g, undefined, args);
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
  if (typeof o === "function" && (f === FN_CALL || f === FN_APPLY || f === FN_BIND)) return callFunctionMethod(o as AnyFunction, f, list);
  return call(f, o, list);
}
