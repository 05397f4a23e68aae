/**
 * Where a function was defined, for conversion at run time: the file, the line and column where
 * its source text (`fn.toString()`) starts, and a mapping of positions back to the original file
 * when the running code was itself generated (TypeScript transpiled by a loader, with an inline
 * source map); and which names its closure binds (so that a free variable is not mistaken for a
 * global of the same name). Uses V8's inspector (`[[FunctionLocation]]`, `[[Scopes]]`),
 * synchronously, in this process. Nulls when it cannot tell (no inspector, eval'd code).
 */
import * as inspector from "node:inspector";
import { SourceMap } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as path from "node:path";

export interface FunctionSite {
  /** The file (absolute path, or URL when not a file). */
  file: string;
  /** 1-based line and 0-based column where the function's source text starts (in the running code). */
  line: number;
  column: number;
  /** Maps a position of the running code to the original file (1-based line, 0-based column). */
  mapPosition?: (line: number, column: number) => { line: number; column: number } | null;
  /** The original file's text, when known. */
  originalSource?: string;
  /** The running code's text (where line/column point), when known. */
  scriptSource?: string;
}

interface ScriptInfo {
  url: string;
  source?: string;
  map?: { map: SourceMap; file: string; content?: string } | null;
}

let session: inspector.Session | null = null;
let broken = false;
const scripts = new Map<string, ScriptInfo>();
const GLOBAL_KEY = "__stagecraft_autograph_locate__";

function post<T>(method: string, params?: object): T | undefined {
  let out: T | undefined;
  let err: unknown = null;
  session!.post(method, params ?? {}, (e: unknown, r: unknown) => {
    err = e;
    out = r as T;
  });
  if (err) throw err;
  return out;
}

function connect(): boolean {
  if (session) return true;
  if (broken) return false;
  try {
    session = new inspector.Session();
    session.connect();
    session.on("Debugger.scriptParsed", (m: { params: { scriptId: string; url: string } }) => {
      if (!scripts.has(m.params.scriptId)) scripts.set(m.params.scriptId, { url: m.params.url });
    });
    return true;
  } catch {
    broken = true;
    session = null;
    return false;
  }
}

interface FunctionFacts {
  location: { scriptId: string; lineNumber: number; columnNumber: number } | null;
  /** Names bound in the function's closure scopes (all but the global one). */
  closureNames: Set<string> | null;
}

type Internal = { name: string; value?: { objectId?: string; description?: string; value?: { scriptId: string; lineNumber: number; columnNumber: number } } };

function functionFacts(fn: Function): FunctionFacts {
  const g = globalThis as Record<string, unknown>;
  g[GLOBAL_KEY] = fn;
  try {
    const r = post<{ result: { objectId?: string } }>("Runtime.evaluate", { expression: `globalThis.${GLOBAL_KEY}`, objectGroup: GLOBAL_KEY });
    const objectId = r?.result.objectId;
    if (!objectId) return { location: null, closureNames: null };
    const p = post<{ internalProperties?: Internal[] }>("Runtime.getProperties", { objectId, ownProperties: true });
    const location = p?.internalProperties?.find((q) => q.name === "[[FunctionLocation]]")?.value?.value ?? null;
    let closureNames: Set<string> | null = null;
    const scopesId = p?.internalProperties?.find((q) => q.name === "[[Scopes]]")?.value?.objectId;
    if (scopesId) {
      closureNames = new Set();
      const list = post<{ result: Internal[] }>("Runtime.getProperties", { objectId: scopesId, ownProperties: true });
      for (const sc of list?.result ?? []) {
        const id = sc.value?.objectId;
        if (!id || sc.value?.description === "Global") continue;
        const vars = post<{ result: { name: string }[] }>("Runtime.getProperties", { objectId: id, ownProperties: true });
        for (const v of vars?.result ?? []) closureNames.add(v.name);
      }
    }
    return { location, closureNames };
  } finally {
    delete g[GLOBAL_KEY];
    try {
      post("Runtime.releaseObjectGroup", { objectGroup: GLOBAL_KEY });
    } catch {
      /* ignore */
    }
  }
}

/**
 * Fills url and source of a script. The debugger domain is enabled only for this (it replays
 * every parsed script when enabled, so code made by `new Function` is never looked up: see
 * inspectFunction).
 */
function scriptInfo(scriptId: string): ScriptInfo | null {
  let info = scripts.get(scriptId);
  if (!info || info.source === undefined) {
    post("Debugger.enable");
    try {
      info = scripts.get(scriptId);
      if (info && info.source === undefined) {
        const s = info.url ? post<{ scriptSource: string }>("Debugger.getScriptSource", { scriptId }) : undefined;
        info.source = s?.scriptSource ?? "";
      }
    } finally {
      post("Debugger.disable");
    }
  }
  return info ?? null;
}

function toPath(url: string): string {
  if (url.startsWith("file://")) {
    try {
      return fileURLToPath(url);
    } catch {
      return url;
    }
  }
  return url;
}

const INLINE_MAP = /\/\/[#@] sourceMappingURL=data:application\/json(?:;charset=[^;,]+)?;base64,([A-Za-z0-9+/=]+)\s*$/;

function inlineMap(info: ScriptInfo): ScriptInfo["map"] {
  if (info.map !== undefined) return info.map;
  info.map = null;
  const m = INLINE_MAP.exec(info.source ?? "");
  if (!m) return null;
  try {
    const payload = JSON.parse(Buffer.from(m[1]!, "base64").toString("utf8")) as { sources: string[]; sourcesContent?: (string | null)[]; sourceRoot?: string };
    const base = info.url.startsWith("file://") ? info.url : pathToFileURL(info.url).href;
    const src = payload.sources[0] ?? "";
    const file = toPath(new URL(src, base).href);
    info.map = { map: new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]), file, content: payload.sourcesContent?.[0] ?? undefined };
  } catch {
    info.map = null;
  }
  return info.map;
}

export interface FunctionInfo {
  /** Where the function is defined, when known. */
  site: FunctionSite | null;
  /**
   * Names bound in scopes enclosing the function other than the global scope (closures,
   * module, script), when known: a free name among them is not a global.
   */
  closureNames: Set<string> | null;
  /**
   * The running script's id where `site` is known (V8's, unique in this process): with the
   * site's position and the text, it names the code a closure was made from.
   */
  scriptId?: string;
}

/** Where `fn` is defined and what its closure binds (nulls when the inspector cannot tell). */
export function inspectFunction(fn: Function, text: string = Function.prototype.toString.call(fn)): FunctionInfo {
  if (!connect()) return { site: null, closureNames: null };
  try {
    const facts = functionFacts(fn);
    // `new Function(...)` code has no file to point at.
    const made = text.startsWith("function anonymous(");
    const site = facts.location && !made ? siteOf(facts.location, text) : null;
    return { site, closureNames: facts.closureNames, ...(site ? { scriptId: facts.location!.scriptId } : {}) };
  } catch {
    return { site: null, closureNames: null };
  }
}

/** Where `fn` is defined, or null. */
export function locateFunction(fn: Function, text: string = Function.prototype.toString.call(fn)): FunctionSite | null {
  return inspectFunction(fn, text).site;
}

function siteOf(loc: { scriptId: string; lineNumber: number; columnNumber: number }, text: string): FunctionSite | null {
  const info = scriptInfo(loc.scriptId);
  if (!info || !info.source || !info.url) return null;
  const src = info.source;
  // Offset of the location, then the occurrence of the function's text that contains it.
  let offset = 0;
  for (let l = 0; l < loc.lineNumber; l++) {
    const nl = src.indexOf("\n", offset);
    if (nl < 0) break;
    offset = nl + 1;
  }
  offset += loc.columnNumber;
  const start = src.lastIndexOf(text, offset);
  if (start < 0 || start + text.length < offset) return null;
  const before = src.slice(0, start);
  const line = before.split("\n").length;
  const column = start - (before.lastIndexOf("\n") + 1);
  const file = toPath(info.url);
  const m = inlineMap(info);
  if (m) {
    const map = m.map;
    return {
      file: m.file,
      line,
      column,
      scriptSource: src,
      originalSource: m.content,
      mapPosition(l, c) {
        const e = map.findEntry(l - 1, c) as { originalLine?: number; originalColumn?: number };
        if (e && typeof e.originalLine === "number") return { line: e.originalLine + 1, column: e.originalColumn ?? 0 };
        return null;
      },
    };
  }
  return { file, line, column, scriptSource: src };
}

/** Whether a file belongs to a dependency or to Stagecraft itself (not user code). */
export function isLibraryFile(file: string, libRoot: string): boolean {
  return /[\\/]node_modules[\\/]/.test(file) || file.startsWith(libRoot + path.sep);
}

// ---------------------------------------------------------------------------------------------
// values seen through the inspector

type RemoteObject = { type?: string; subtype?: string; value?: unknown; unserializableValue?: string; objectId?: string; description?: string };

const VALUE_KEY = "__stagecraft_autograph_value__";

/** The value a RemoteObject of this process stands for. */
function remoteValue(r: RemoteObject | undefined): unknown {
  if (!r || r.type === "undefined") return undefined;
  if (r.unserializableValue !== undefined) {
    const u = r.unserializableValue;
    if (u.endsWith("n")) return BigInt(u.slice(0, -1));
    return u === "-0" ? -0 : u === "NaN" ? NaN : u === "Infinity" ? Infinity : u === "-Infinity" ? -Infinity : Number(u);
  }
  if (r.objectId === undefined) return r.value;
  const g = globalThis as Record<string, unknown>;
  try {
    post("Runtime.callFunctionOn", { objectId: r.objectId, functionDeclaration: `function () { "use strict"; globalThis.${VALUE_KEY} = this; }` });
    return g[VALUE_KEY];
  } finally {
    delete g[VALUE_KEY];
  }
}

/** The internal properties of a function ([[Scopes]], [[TargetFunction]], ...) by name, or null. */
function withInternals<T>(fn: Function, use: (internals: Map<string, RemoteObject>) => T): T | null {
  if (!connect()) return null;
  const g = globalThis as Record<string, unknown>;
  g[GLOBAL_KEY] = fn;
  try {
    const r = post<{ result: { objectId?: string } }>("Runtime.evaluate", { expression: `globalThis.${GLOBAL_KEY}`, objectGroup: GLOBAL_KEY });
    const objectId = r?.result.objectId;
    if (!objectId) return null;
    const p = post<{ internalProperties?: { name: string; value?: RemoteObject }[] }>("Runtime.getProperties", { objectId, ownProperties: true, objectGroup: GLOBAL_KEY });
    const internals = new Map<string, RemoteObject>();
    for (const q of p?.internalProperties ?? []) if (q.value) internals.set(q.name, q.value);
    return use(internals);
  } catch {
    return null;
  } finally {
    delete g[GLOBAL_KEY];
    try {
      post("Runtime.releaseObjectGroup", { objectGroup: GLOBAL_KEY });
    } catch {
      /* ignore */
    }
  }
}

/**
 * The current values of `names` as `fn` sees them (each from the innermost enclosing scope that
 * binds it, the global scope excluded); names not found are absent from the result.
 */
export function closureValues(fn: Function, names: readonly string[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (names.length === 0) return out;
  withInternals(fn, (internals) => {
    const scopesId = internals.get("[[Scopes]]")?.objectId;
    if (!scopesId) return;
    const list = post<{ result: { value?: RemoteObject }[] }>("Runtime.getProperties", { objectId: scopesId, ownProperties: true, objectGroup: GLOBAL_KEY });
    const wanted = new Set(names);
    for (const sc of list?.result ?? []) {
      const id = sc.value?.objectId;
      if (!id || sc.value?.description === "Global") continue;
      const vars = post<{ result: { name: string; value?: RemoteObject }[] }>("Runtime.getProperties", { objectId: id, ownProperties: true, objectGroup: GLOBAL_KEY });
      for (const v of vars?.result ?? []) {
        if (!wanted.has(v.name)) continue;
        wanted.delete(v.name);
        out.set(v.name, remoteValue(v.value));
      }
      if (wanted.size === 0) break;
    }
  });
  return out;
}

/** A bound function's target, bound `this` and bound arguments (null for other functions). */
export function boundParts(fn: Function): { target: Function; thisArg: unknown; args: unknown[] } | null {
  return withInternals(fn, (internals) => {
    const target = internals.get("[[TargetFunction]]");
    if (!target) return null;
    const t = remoteValue(target);
    if (typeof t !== "function") return null;
    const args = remoteValue(internals.get("[[BoundArgs]]"));
    return { target: t, thisArg: remoteValue(internals.get("[[BoundThis]]")), args: Array.isArray(args) ? [...args] : [] };
  });
}
