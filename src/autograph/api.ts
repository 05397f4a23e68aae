/**
 * sc.autograph(fn, { scope }): the converted version of a function (native control flow and
 * operators dispatched on the values they meet; see docs/autograph.md).
 *
 * - A function converted at load time (the `stagecraft/register` loader or the `stagecraft/babel`
 *   plugin) has a registered twin: that is returned.
 * - Otherwise the function's source (`fn.toString()`) is converted now. Its free variables must
 *   be globals or given in `scope` (their current values are used); any other free variable is
 *   an error naming it and recommending the loader, which converts closures in place.
 * Results are cached. `sc.autograph.toSource(fn)` gives the generated code.
 *
 * convertForStage(fn) is what sc.stage uses: the converted function when possible, else the
 * original and (once) a note naming the free variables and the fix when the body has
 * constructs that need conversion (the package entry, api/wiring.ts, installs it into stage()).
 * Importing this module installs the on-demand converter the runtime uses for functions called
 * from converted code (`ag.call`).
 */
import { LIB_ROOT, PLATFORM, path, readFileSync } from "../core/platform/node.js";
import { ag, getConverted, isConvertedTwin, passArgumentsThrough, registerConverted, setConverter, setLibraryCheck, AutoGraphError } from "./operators/index.js";
import { convertFunctionSource, type ConvertFunctionSourceResult } from "./transform/convert.js";
import { ConversionError } from "./transform/errors.js";
import { inlineSourceMapComment, type RawSourceMap } from "./transform/generate.js";
import { boundParts, closureValues, inspectFunction, isLibraryFile, locateFunction, type FunctionSite } from "./transform/locate.js";
import { constantBindings, type ConstantBinding } from "./transform/bindings.js";
import { formatLocation } from "../core/errors.js";
import { checkOptions, optionKeys } from "../core/options.js";

type AnyFunction = (...args: any[]) => any;
/** `new Function(...names, agName, body)`: called with the values, it makes one twin. */
type TwinFactory = (...values: unknown[]) => AnyFunction;

export interface AutographOptions {
  /** Values of the function's free variables that are not globals (read now, by value). */
  scope?: Record<string, unknown>;
}


// ---------------------------------------------------------------------------------------------
// conversion of a function's source

interface Conversion {
  fn: AnyFunction;
  source: string;
  site: FunctionSite | null;
  result: ConvertFunctionSourceResult;
  /** Executable code (original line numbers kept) and its source map. */
  code: string;
  map: RawSourceMap | null;
  /** Free variables that are neither globals nor the operators, nor resolved. */
  free: string[];
  /** Values of the free variables bound to bindings that never change (imports, consts...). */
  resolved: Record<string, unknown>;
  lexical: string[];
  strict: boolean;
  pretty?: string;
  /**
   * Twin factories by their parameter names (joined), shared by every conversion of the same
   * code: a factory is compiled once and called once per twin, with that closure's values.
   */
  factories: Map<string, TwinFactory>;
}

/**
 * What closures made from the same code share: the same text at the same place of the same
 * running script (and the same strictness) converts to the same code. Closures made again and
 * again (one per trace, one per loop iteration) reuse it instead of running the transform anew.
 * What each closure has of its own is read per closure and never cached: the values of the
 * constants it captures (closureValues, below), the names its scopes bind, and which free
 * names are globals.
 */
interface SharedConversion {
  result: ConvertFunctionSourceResult;
  /** The bindings that never change among the names asked (by those names, joined). */
  constants: Map<string, ConstantBinding[]>;
  factories: Map<string, TwinFactory>;
}
const sharedConversions = new Map<string, SharedConversion>();
const MAX_SHARED_CONVERSIONS = 2000;

const stats = { inspections: 0, transforms: 0, factories: 0 };
/**
 * How often conversion at run time asked the inspector about a function, ran the transform and
 * compiled a twin factory, since the process started (for tests of the caches: closures of one
 * piece of code share the transform and the factory).
 */
export function conversionStats(): { inspections: number; transforms: number; factories: number } {
  return { ...stats };
}

const conversions = new WeakMap<AnyFunction, Conversion | ConversionError>();
/** Functions this module made (converted twins): converting them again returns them. */
const made = new WeakSet<AnyFunction>();
/** The original of each function this module made. */
const madeFrom = new WeakMap<AnyFunction, AnyFunction>();
let scriptCounter = 0;

const ALWAYS_GLOBAL = new Set(["undefined", "NaN", "Infinity", "globalThis", "eval", "arguments"]);

/**
 * Helpers that transpilers (esbuild, as used by tsx) insert into functions' code and define
 * at the top of the module: supplied when a converted function's source uses them.
 */
const TRANSPILER_HELPERS: Record<string, unknown> = {
  __name: passArgumentsThrough((target: object, value: string) => Object.defineProperty(target, "name", { value, configurable: true })),
};

/**
 * Whether a free name can be left to the global scope: not bound by a closure or module scope of
 * the function (when the inspector tells which names those bind: then a name bound nowhere is an
 * undeclared global, and behaves the same converted); otherwise a name of the global object.
 */
function isGlobalName(name: string, closureNames: Set<string> | null): boolean {
  if (Object.prototype.hasOwnProperty.call(TRANSPILER_HELPERS, name)) return true;
  if (closureNames) return !closureNames.has(name);
  return ALWAYS_GLOBAL.has(name) || name in globalThis;
}

function kindOf(fn: AnyFunction): string | null {
  const ctor = Object.getPrototypeOf(fn)?.constructor?.name as string | undefined;
  if (ctor === "AsyncFunction") return "async functions";
  if (ctor === "GeneratorFunction") return "generator functions";
  if (ctor === "AsyncGeneratorFunction") return "async generator functions";
  return null;
}

function isNativeSource(src: string): boolean {
  return /\{\s*\[native code\]\s*\}\s*$/.test(src);
}

function isClassSource(src: string): boolean {
  return /^class[\s{]/.test(src);
}

/** Strict unless a plain sloppy function (those have own `caller`/`arguments`). */
function isStrict(fn: AnyFunction): boolean {
  return !Object.prototype.hasOwnProperty.call(fn, "caller");
}

function displayName(fn: AnyFunction): string {
  return fn.name ? `function ${fn.name}` : "this function";
}

/** The original position of a function site (through the running code's source map). */
function originalPosition(site: FunctionSite): { file: string; line: number; column: number } {
  const m = site.mapPosition?.(site.line, site.column);
  return { file: site.file, line: m?.line ?? site.line, column: m?.column ?? site.column };
}

function whereText(site: FunctionSite | null): string {
  if (!site) return "";
  const p = originalPosition(site);
  return ` (at ${formatLocation({ file: p.file, line: p.line, column: p.column + 1 })})`;
}

function locString(site: FunctionSite | null): string | null {
  if (!site) return null;
  const p = originalPosition(site);
  return `${p.file}:${p.line}:${p.column + 1}`;
}

function readFileText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The values of free variables bound to bindings that never change (imports, consts, and
 * declarations never reassigned), read from the function's closure: so that a function of an
 * ordinary module using `sc` or its imports converts at run time without a `scope`. A `let`
 * or `const` still in its TDZ reads as undefined: it is left unresolved.
 */
function resolveConstants(fn: AnyFunction, site: FunctionSite | null, names: readonly string[], shared: SharedConversion | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (names.length === 0 || !site?.scriptSource) return out;
  // (which names are constant bindings is a fact of the code, shared; their values are this closure's)
  const key = names.join(",");
  let constant = shared?.constants.get(key);
  if (constant === undefined) {
    constant = constantBindings(site.scriptSource, site.line, site.column, names);
    shared?.constants.set(key, constant);
  }
  if (constant.length === 0) return out;
  const values = closureValues(
    fn,
    constant.map((b) => b.name),
  );
  for (const b of constant) {
    if (!values.has(b.name)) continue;
    const v = values.get(b.name);
    if (v === undefined && (b.kind === "let" || b.kind === "const" || b.kind === "local" || b.kind === "module")) continue;
    out[b.name] = v;
  }
  return out;
}

/** Converts fn's source (cached); throws ConversionError for what the transform cannot handle. */
/**
 * Conversions of functions that use no free variable at all, by source text: closures made
 * again and again from one source (one per loop iteration) are converted once, without asking
 * the inspector each time. (Identical text elsewhere would share its error locations.)
 */
const closedConversions = new Map<string, Conversion>();
const MAX_CLOSED_CONVERSIONS = 2000;

function convert(fn: AnyFunction): Conversion {
  const cached = conversions.get(fn);
  if (cached instanceof ConversionError) throw cached;
  if (cached) return cached;
  const source = Function.prototype.toString.call(fn);
  const closed = closedConversions.get(source);
  if (closed && kindOf(fn) === null && isStrict(fn) === closed.strict) {
    const conv: Conversion = { ...closed, fn, pretty: undefined };
    // (shares closed.factories: the same code, no values of its own)
    conversions.set(fn, conv);
    return conv;
  }
  stats.inspections++;
  const { site, closureNames, scriptId } = inspectFunction(fn, source);
  const filename = site?.file ?? `<${fn.name || "anonymous"}>`;
  const kind = kindOf(fn);
  const where = site ? originalPosition(site) : { file: filename, line: 1, column: 0 };
  try {
    if (kind) throw new ConversionError(`${kind} are left unconverted; AutoGraph converts plain functions (stage or call the synchronous parts)`, where);
    if (isNativeSource(source)) throw new ConversionError(`${displayName(fn)} is native code and cannot be converted`, where);
    if (isClassSource(source)) throw new ConversionError("classes are not converted (convert their methods, or call them from converted code)", where);
    // (the code's identity: the script, where in it the text starts, the text, the strictness)
    const sharedKey = site && scriptId !== undefined ? `${scriptId}:${site.line}:${site.column}:${isStrict(fn) ? "strict" : "sloppy"}:${source}` : null;
    let shared = sharedKey !== null ? (sharedConversions.get(sharedKey) ?? null) : null;
    let result: ConvertFunctionSourceResult;
    if (shared !== null) result = shared.result;
    else {
      const sourceContent = site ? (site.originalSource ?? readFileText(site.file)) : undefined;
      stats.transforms++;
      result = convertFunctionSource(source, {
        filename,
        line: site?.line ?? 1,
        column: site?.column ?? 0,
        retainLines: true,
        mapPosition: site?.mapPosition,
        sourceContent: sourceContent ?? source,
        outerNames: [],
        strict: isStrict(fn),
      });
      if (sharedKey !== null && site) {
        shared = { result, constants: new Map(), factories: new Map() };
        if (sharedConversions.size >= MAX_SHARED_CONVERSIONS) sharedConversions.clear();
        sharedConversions.set(sharedKey, shared);
      }
    }
    const unresolved = [...result.freeNames].filter((n) => !isGlobalName(n, closureNames)).sort();
    const resolved = resolveConstants(fn, site, unresolved, shared);
    const free = unresolved.filter((n) => !Object.prototype.hasOwnProperty.call(resolved, n));
    const conv: Conversion = {
      fn,
      source,
      site,
      result,
      code: result.code,
      map: result.map,
      free,
      resolved,
      lexical: [...result.lexicalThisLike].sort(),
      strict: isStrict(fn),
      factories: shared?.factories ?? new Map(),
    };
    conversions.set(fn, conv);
    if (result.freeNames.size === 0 && result.lexicalThisLike.size === 0) {
      if (closedConversions.size >= MAX_CLOSED_CONVERSIONS) closedConversions.clear();
      closedConversions.set(source, conv);
    }
    return conv;
  } catch (e) {
    if (e instanceof ConversionError) conversions.set(fn, e);
    throw e;
  }
}

/** The body of `new Function(...)`: original line numbers kept, source map adjusted for the wrapper. */
function functionBody(conv: Conversion): string {
  // new Function puts the body on line 3; "return (" takes one more line.
  let code = conv.code;
  let map = conv.map;
  const lead = /^\n\n\n/.test(code);
  if (lead) code = code.slice(3);
  else if (map) map = { ...map, mappings: ";;;" + map.mappings };
  const file = conv.site?.file ?? `autograph-${conv.fn.name || "anonymous"}`;
  const url = `${file}?autograph=${++scriptCounter}`;
  return `${conv.strict ? '"use strict";' : ""}return (\n${code}\n);\n//# sourceURL=${url}\n${map ? inlineSourceMapComment(map) : ""}`;
}

function freeVariableError(conv: Conversion, missing: string[], lexical: string[], api: string): AutoGraphError {
  const name = displayName(conv.fn);
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`free variable${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
  if (lexical.length > 0) parts.push(`${lexical.map((l) => `\`${l}\``).join(", ")} of the enclosing function`);
  const scopeHint = missing.length > 0 ? `, or pass ${missing.length > 1 ? "them" : "it"}: sc.autograph(fn, { scope: { ${missing.join(", ")} } })` : "";
  const loc = locString(conv.site);
  return new AutoGraphError(
    `${api}: ${name} uses ${parts.join(" and ")}${whereText(conv.site)}, which conversion at run time cannot see: it converts a function from its source, ` +
      `where only globals${missing.length > 0 ? " and the given scope" : ""} are visible. ` +
      `Run with \`node --import stagecraft/register\` (or build with the Babel plugin \`stagecraft/babel\`; in bundles, \`stagecraft/esbuild\` or \`stagecraft/vite\`) so functions are converted where they are defined${scopeHint}.`,
    loc,
  );
}

function instantiate(conv: Conversion, scope: Record<string, unknown>): AnyFunction {
  const agName = conv.result.agName;
  const values: Record<string, unknown> = {};
  for (const h of Object.keys(TRANSPILER_HELPERS)) if (conv.result.freeNames.has(h)) values[h] = TRANSPILER_HELPERS[h];
  for (const k of Object.keys(conv.resolved)) values[k] = conv.resolved[k];
  for (const k of Object.keys(scope)) if (conv.result.freeNames.has(k)) values[k] = scope[k];
  const names = Object.keys(values).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== agName);
  // (one factory per code and parameter list; each call makes a fresh twin bound to its values)
  const factoryKey = names.join(",");
  let factory = conv.factories.get(factoryKey);
  if (factory === undefined) {
    stats.factories++;
    factory = new Function(...names, agName, functionBody(conv)) as TwinFactory;
    conv.factories.set(factoryKey, factory);
  }
  const twin = factory(...names.map((n) => values[n]), ag);
  try {
    if (twin.name !== conv.fn.name) Object.defineProperty(twin, "name", { value: conv.fn.name, configurable: true });
  } catch {
    /* keep */
  }
  made.add(twin);
  madeFrom.set(twin, conv.fn);
  return twin;
}

// ---------------------------------------------------------------------------------------------
// public API

const unscoped = new WeakMap<AnyFunction, AnyFunction>();
const scoped = new WeakMap<AnyFunction, WeakMap<object, AnyFunction>>();

function autographImpl<F extends AnyFunction>(fn: F, options: AutographOptions = {}): F {
  if (typeof fn !== "function") throw new TypeError(`sc.autograph expects a function, got ${fn === null ? "null" : typeof fn}`);
  checkOptions("autograph", options, optionKeys<AutographOptions>()("scope"));
  if (made.has(fn) || isConvertedTwin(fn)) return fn;
  const twin = getConverted(fn);
  if (twin) return twin;
  // Async functions and generators are left as they are (as the loader leaves them): their
  // bodies run after the call returns, outside anything a staged construct could capture.
  if (kindOf(fn)) return fn;
  const scope = options.scope;
  if (!scope) {
    const c = unscoped.get(fn);
    if (c) return c as F;
  } else {
    const c = scoped.get(fn)?.get(scope);
    if (c) return c as F;
  }
  const conv = convert(fn);
  const missing = conv.free.filter((n) => !(scope && Object.prototype.hasOwnProperty.call(scope, n)));
  if (missing.length > 0 || conv.lexical.length > 0) throw freeVariableError(conv, missing, conv.lexical, "sc.autograph");
  if (scope) shareScope(scope);
  const out = instantiate(conv, scope ?? {});
  if (!scope) {
    unscoped.set(fn, out);
    registerConverted(fn, out);
  } else {
    let m = scoped.get(fn);
    if (!m) scoped.set(fn, (m = new WeakMap()));
    m.set(scope, out);
  }
  return out as F;
}

/** The generated code of a function's conversion. */
function toSource(fn: AnyFunction): string {
  if (typeof fn !== "function") throw new TypeError(`sc.autograph.toSource expects a function, got ${typeof fn}`);
  const original = madeFrom.get(fn) ?? fn;
  // A twin made at load time (loader, Babel plugin) is the generated code itself.
  if (isConvertedTwin(original) && !made.has(original)) return Function.prototype.toString.call(original);
  const twin = getConverted(original);
  // A twin made at load time (loader, Babel plugin) is the generated code itself.
  if (twin && !made.has(twin)) return Function.prototype.toString.call(twin);
  const conv = convert(original);
  if (conv.pretty === undefined) {
    conv.pretty = convertFunctionSource(conv.source, {
      filename: conv.site?.file ?? `<${original.name || "anonymous"}>`,
      line: conv.site?.line ?? 1,
      column: conv.site?.column ?? 0,
      mapPosition: conv.site?.mapPosition,
      strict: conv.strict,
    }).code;
  }
  return conv.pretty;
}

export interface Autograph {
  <F extends AnyFunction>(fn: F, options?: AutographOptions): F;
  /** The code AutoGraph generates for `fn`. */
  toSource(fn: AnyFunction): string;
}

export const autograph: Autograph = Object.assign(autographImpl, { toSource });

export interface StageConversion<F> {
  fn: F;
  /** Said once per function: why it is staged unconverted and how to fix it. */
  note?: string;
}

/** Notes said, by source location (or by function when it has none). */
const stageNotes = {
  at: new Set<string>(),
  fns: new WeakSet<AnyFunction>(),
  has(k: AnyFunction | string): boolean {
    return typeof k === "string" ? this.at.has(k) : this.fns.has(k);
  },
  add(k: AnyFunction | string): void {
    if (typeof k === "string") this.at.add(k);
    else this.fns.add(k);
  },
};
const stageCache = new WeakMap<AnyFunction, AnyFunction>();

function needsConversion(conv: Conversion): boolean {
  for (const f of conv.result.features) if (f !== "call") return true;
  return false;
}

/**
 * What sc.stage traces: the converted function when it can be made; otherwise the original,
 * with a note (the first time only) when its body has constructs that need conversion.
 * Generators and async functions cannot be staged: an error says so.
 */
export function convertForStage<F extends AnyFunction>(fn: F): StageConversion<F> {
  if (made.has(fn) || isConvertedTwin(fn)) return { fn };
  const twin = getConverted(fn);
  if (twin) return { fn: twin };
  const cached = stageCache.get(fn);
  if (cached) return { fn: cached as F };
  const kind = kindOf(fn);
  if (kind) {
    const site = locateFunction(fn);
    throw new AutoGraphError(`sc.stage: ${kind} cannot be staged${whereText(site)}; stage a plain (synchronous, non-generator) function`, locString(site));
  }
  const src = Function.prototype.toString.call(fn);
  if (isNativeSource(src) || isClassSource(src)) return { fn };
  // Stagecraft's own functions (sc.grad(f), a staged function) are staged as they are.
  if (isOwnFunction(fn)) return { fn };
  let conv: Conversion;
  try {
    conv = convert(fn);
  } catch (e) {
    if (!(e instanceof ConversionError)) throw e;
    const key = noteKey(fn, null);
    if (stageNotes.has(key)) return { fn };
    stageNotes.add(key);
    return { fn, note: `stagecraft: ${displayName(fn)} is staged by tracing, without AutoGraph: ${e.message}` };
  }
  if (conv.free.length > 0 || conv.lexical.length > 0) {
    // Said once per source location, and only about the user's own code (not a dependency's).
    const key = noteKey(fn, conv.site);
    if (!needsConversion(conv) || stageNotes.has(key) || (conv.site && isLibraryFile(conv.site.file, LIB_ROOT))) return { fn };
    stageNotes.add(key);
    const err = freeVariableError(conv, conv.free, conv.lexical, "sc.stage");
    return {
      fn,
      note:
        `stagecraft: ${displayName(fn)} is staged by tracing, without AutoGraph: its control flow and operators run on the values seen while tracing ` +
        `(a tensor condition is an error, \`+\` on tensors is not an op). ${err.message.replace(/^sc\.stage: /, "")}`,
    };
  }
  const out = instantiate(conv, {});
  stageCache.set(fn, out);
  registerConverted(fn, out);
  return { fn: out as F };
}

/** What a note is said once for: the function's source location (closures made again share it), else the function. */
function noteKey(fn: AnyFunction, site: FunctionSite | null): AnyFunction | string {
  const s = site ?? conversionSite(fn);
  return s ? `${s.file}:${s.line}:${s.column}` : fn;
}

function conversionSite(fn: AnyFunction): FunctionSite | null {
  const c = conversions.get(fn);
  return c && !(c instanceof ConversionError) ? c.site : null;
}

const ownVerdicts = new WeakMap<AnyFunction, boolean>();
/** By source text too: closures made again and again (one per call) share it, and one look suffices. */
const ownVerdictsByText = new Map<string, boolean>();

/** Whether a function is defined in Stagecraft's own sources (by the inspector; cached). */
function isOwnFunction(f: AnyFunction): boolean {
  let v = ownVerdicts.get(f);
  if (v === undefined) {
    const text = Function.prototype.toString.call(f);
    v = ownVerdictsByText.get(text);
    if (v === undefined) {
      const site = isNativeSource(text) ? null : locateFunction(f);
      v = !!site && site.file.startsWith(LIB_ROOT + path.sep);
      if (ownVerdictsByText.size >= MAX_TEXT_VERDICTS) ownVerdictsByText.clear();
      ownVerdictsByText.set(text, v);
    }
    ownVerdicts.set(f, v);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// the on-demand converter for ag.call

/** Converts a callee met by converted code, or null to call it as it is (never throws). */
/** Per source text: whether a function with that text could be converted here (no position needed). */
const textVerdicts = new Map<string, boolean>();
const MAX_TEXT_VERDICTS = 2000;

/**
 * A cheap first look at a callee's source (cached by text, since closures made again and again
 * share it): false when it has nothing to convert (its free variables are looked at later: the
 * ones bound to bindings that never change are resolved).
 */
function worthConverting(text: string): boolean {
  const cached = textVerdicts.get(text);
  if (cached !== undefined) return cached;
  let verdict = false;
  try {
    const r = convertFunctionSource(text, { filename: "<callee>", nativeCopies: false });
    verdict = r.lexicalThisLike.size === 0 && r.features.size > 0;
  } catch {
    verdict = false;
  }
  if (textVerdicts.size >= MAX_TEXT_VERDICTS) textVerdicts.clear();
  textVerdicts.set(text, verdict);
  return verdict;
}

/**
 * The scope given to sc.autograph for the functions it names: converted code calling one of
 * them converts it with that scope too (so mutual recursion over tensors is converted).
 */
const sharedScopes = new WeakMap<AnyFunction, Record<string, unknown>>();

function shareScope(scope: Record<string, unknown>): void {
  for (const v of Object.values(scope)) {
    if (typeof v === "function" && !made.has(v as AnyFunction) && !sharedScopes.has(v as AnyFunction)) sharedScopes.set(v as AnyFunction, scope);
  }
}

/**
 * A bound function made outside converted code (`obj.m.bind(obj)`): the same binding of its
 * target's converted twin (the target, `this` and arguments read through the inspector).
 */
function convertBound(fn: AnyFunction): AnyFunction | null {
  const parts = boundParts(fn);
  if (!parts) return null;
  const target = parts.target as AnyFunction;
  const twin = getConverted(target) ?? convertCallee(target);
  if (!twin || twin === target) return null;
  if (!getConverted(target)) registerConverted(target, twin);
  return Reflect.apply(Function.prototype.bind, twin, [parts.thisArg, ...parts.args]) as AnyFunction;
}

function convertCallee(fn: AnyFunction): AnyFunction | null {
  if (made.has(fn) || kindOf(fn)) return null;
  if (fn.name.startsWith("bound ") && isNativeSource(Function.prototype.toString.call(fn))) return convertBound(fn);
  const existing = unscoped.get(fn) ?? stageCache.get(fn);
  if (existing) return existing;
  const scope = sharedScopes.get(fn);
  // In a browser nothing tells Stagecraft's own functions (and a dependency's) from the user's
  // (there is no inspector, and a bundle is one file): callees are converted only when named in
  // a scope given to sc.autograph. User code is converted at build time there (stagecraft/esbuild,
  // stagecraft/vite), so its functions arrive converted.
  if (!scope && PLATFORM === "browser") return null;
  // (a function that only calls others is converted too, as converted_call does: its callees
  // are reached through it, and one of them may use control flow on tensors)
  if (!scope && !worthConverting(Function.prototype.toString.call(fn))) return null;
  let conv: Conversion;
  try {
    conv = convert(fn);
  } catch {
    return null;
  }
  const missing = scope ? conv.free.filter((n) => !Object.prototype.hasOwnProperty.call(scope, n)) : conv.free;
  if (missing.length > 0 || conv.lexical.length > 0 || conv.result.features.size === 0) return null;
  if (conv.site && isLibraryFile(conv.site.file, LIB_ROOT)) return null;
  try {
    const out = instantiate(conv, scope ?? {});
    unscoped.set(fn, out);
    return out;
  } catch {
    return null;
  }
}

setConverter(convertCallee);

/** Stagecraft's own functions (their callbacks are converted when converted code calls them). */
setLibraryCheck(isOwnFunction);
