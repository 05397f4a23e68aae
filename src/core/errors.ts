/**
 * Typed errors. Every error raised on bad user input names the op, the offending
 * shapes/dtypes/values, and the caller's own file:line:column (the first stack frame
 * outside Stagecraft's sources).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import * as path from "node:path";
import { readFileSync } from "node:fs";
import { findSourceMap } from "node:module";

/** The folder this module was loaded from, one up: src/ (run from source) or dist/ (built). */
const LIB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/**
 * Stagecraft's own code, as it may appear in a stack: the folder it runs from, and its sources
 * (src/ beside dist/), which are where source maps of dist/ point (`--enable-source-maps`, or a
 * loader that turns source maps on for everyone, as `stagecraft/register` does).
 */
const LIB_DIRS = [...new Set([LIB_ROOT, path.join(path.dirname(LIB_ROOT), "src")])].map((d) => d + path.sep);
const LIB_URLS = LIB_DIRS.map((d) => pathToFileURL(d).href.replace(/\/?$/, "/"));

/** Where a frame's code comes from. */
type FrameOwner = "library" | "dependency" | "user";

function ownerOf(file: string | null | undefined): FrameOwner {
  // (code made by `new Function` without a sourceURL, as the compiled executor's, has no file)
  if (!file || file === "eval" || file.includes("<anonymous>")) return "library";
  if (file.startsWith("node:") || file.startsWith("internal/")) return "library";
  if (file.startsWith("file://") ? LIB_URLS.some((u) => file.startsWith(u)) : LIB_DIRS.some((d) => file.startsWith(d))) return "library";
  return /[\\/]node_modules[\\/]/.test(file) ? "dependency" : "user";
}

export interface SourceLocation {
  file: string;
  line: number;
  column: number;
  /**
   * On a node that graph AD traced for a gradient: the staged function whose gradient it
   * computes. An error raised where it runs says so, as errors raised while tracing it do.
   */
  gradientOf?: string;
}

/** A file name as a stack shows it (a path, a file URL, or a sourceURL with a query) as a path. */
function toFilePath(file: string): string {
  let f = file;
  if (f.startsWith("file://")) {
    try {
      f = fileURLToPath(f);
    } catch {
      return f;
    }
  }
  // (functions AutoGraph converts at run time are named `<file>?autograph=N`)
  return f.replace(/\?[^\\/]*$/, "");
}

/**
 * A position in generated code mapped to the original source, where Node holds a source map
 * for it (`--enable-source-maps`, `process.setSourceMapsEnabled(true)`: tsx and
 * `stagecraft/register` turn it on); otherwise the position itself.
 */
function originalPosition(file: string, line: number, column: number): SourceLocation {
  try {
    const map = findSourceMap(file);
    if (map) {
      const e = map.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
      if (e && typeof e.originalSource === "string" && typeof e.originalLine === "number") {
        return { file: toFilePath(e.originalSource), line: e.originalLine + 1, column: (e.originalColumn ?? 0) + 1 };
      }
    }
  } catch {
    /* an unreadable map: the generated position */
  }
  return { file: toFilePath(file), line, column };
}

/**
 * The call sites of the current stack, innermost first, below `below` (V8's structured stack
 * trace API). Call sites carry the position in the code that ran, before any source map: which
 * code is Stagecraft's own is then known from the file it was loaded from, whatever source maps
 * would show.
 */
function callSites(below: Function): NodeJS.CallSite[] {
  const prepare = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  Error.prepareStackTrace = (_e, sites) => sites;
  Error.stackTraceLimit = 200;
  try {
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, below);
    return Array.isArray(holder.stack) ? (holder.stack as NodeJS.CallSite[]) : [];
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/**
 * The first stack frame outside the library: where the user called us from (a frame of a
 * dependency only when no frame of the user's own is on the stack), mapped through source maps
 * where Node has them.
 */
export function userLocation(): SourceLocation | null {
  let dependency: SourceLocation | null = null;
  for (const site of callSites(userLocation)) {
    const file = site.getFileName() ?? site.getScriptNameOrSourceURL();
    const owner = ownerOf(file);
    if (owner === "library") continue;
    const line = site.getLineNumber();
    const column = site.getColumnNumber();
    if (line === null || column === null) continue;
    const loc = originalPosition(file!, line, column);
    // (a bundle that inlines Stagecraft maps back to its sources)
    const mappedOwner = loc.file === toFilePath(file!) ? owner : ownerOf(loc.file);
    if (mappedOwner === "library") continue;
    if (mappedOwner === "user") return loc;
    dependency ??= loc;
  }
  return dependency;
}

/**
 * Where the graph node an executor is running was written (set around kernel calls), so an
 * error a kernel raises while a staged function runs names the user's line of that op
 * rather than the call of the staged function.
 */
export const executing: { at: SourceLocation | null } = { at: null };

/** Runs `fn` as the kernel of a node written at `loc`. */
export function atNode<T>(loc: SourceLocation | null, fn: () => T): T {
  const saved = executing.at;
  executing.at = loc;
  try {
    return fn();
  } finally {
    executing.at = saved;
  }
}

/** The staged function whose gradient is being traced now, if any (see withinGradientOf). */
let gradientTraced: string | null = null;

/**
 * Runs `fn` as part of tracing the gradient of staged function `name` (graph AD does): the
 * locations of nodes traced meanwhile (gradientLocation) carry the name.
 */
export function withinGradientOf<T>(name: string, fn: () => T): T {
  const saved = gradientTraced;
  gradientTraced = name;
  try {
    return fn();
  } finally {
    gradientTraced = saved;
  }
}

const marked = new WeakMap<SourceLocation, Map<string, SourceLocation>>();

/** `loc` as the location of a node traced now: marked with the gradient being traced, if any. */
export function gradientLocation(loc: SourceLocation | null): SourceLocation | null {
  const name = gradientTraced;
  if (loc === null || name === null || loc.gradientOf === name) return loc;
  let byName = marked.get(loc);
  if (!byName) marked.set(loc, (byName = new Map()));
  let m = byName.get(name);
  if (!m) byName.set(name, (m = { file: loc.file, line: loc.line, column: loc.column, gradientOf: name }));
  return m;
}

/** What an error raised in the gradient of staged function `name` adds to its message. */
export function gradientNote(name: string): string {
  return `(in the gradient of staged function "${name}")`;
}

export function formatLocation(loc: SourceLocation | null): string {
  if (!loc) return "";
  const rel = path.relative(process.cwd(), loc.file);
  const shown = rel && !rel.startsWith("..") ? rel : loc.file;
  return `${shown}:${loc.line}:${loc.column}`;
}

const sourceCache = new Map<string, string[] | null>();

/** The user's source line at `loc`, with a caret under the column (null when unreadable). */
export function sourceExcerpt(loc: SourceLocation | null): string | null {
  if (!loc || loc.file.startsWith("<") || loc.file.startsWith("node:")) return null;
  const file = path.resolve(loc.file);
  let lines = sourceCache.get(file);
  if (lines === undefined) {
    try {
      lines = readFileSync(file, "utf8").split(/\r?\n/);
    } catch {
      lines = null;
    }
    if (sourceCache.size < 256) sourceCache.set(file, lines);
  }
  const text = lines?.[loc.line - 1];
  if (text === undefined) return null;
  const gutter = String(loc.line);
  return `  ${gutter} | ${text}\n  ${" ".repeat(gutter.length)} | ${" ".repeat(Math.max(0, loc.column - 1))}^`;
}

export class StagecraftError extends Error {
  /** The op that raised the error, if any. */
  readonly op: string | undefined;
  /** Where in the user's code the failing call was made. */
  readonly location: SourceLocation | null;
  /** The user's source line (with a caret), shown in the stack under the message. */
  readonly sourceLine: string | null;
  constructor(message: string, op?: string, location?: SourceLocation | null) {
    const loc = location === undefined ? (executing.at ?? userLocation()) : location;
    const where = formatLocation(loc);
    const note = loc?.gradientOf ? ` ${gradientNote(loc.gradientOf)}` : "";
    super(`${op ? `${op}: ` : ""}${message}${note}${where ? ` (at ${where})` : ""}`);
    this.name = new.target.name;
    this.op = op;
    this.location = loc;
    this.sourceLine = sourceExcerpt(loc);
    if (this.sourceLine && this.stack) {
      const head = `${this.name}: ${this.message}`;
      if (this.stack.startsWith(head)) this.stack = `${head}\n${this.sourceLine}${this.stack.slice(head.length)}`;
    }
  }
}

/** Incompatible or invalid shapes, bad axes, non-integer dimensions. */
export class ShapeError extends StagecraftError {}
/** Unsupported or mismatched dtypes. */
export class DtypeError extends StagecraftError {}
/** Out-of-range indices or values. */
export class IndexError extends StagecraftError {}
/** Invalid values or arguments that are not about shape or dtype. */
export class ValueError extends StagecraftError {}
/** A tensor too large to allocate (more elements than a typed array holds, or out of memory). */
export class AllocationError extends StagecraftError {}
/** A staged function recursing past what the JavaScript stack holds (no symbolic base case, or too deep). */
export class RecursionDepthError extends StagecraftError {}
/**
 * Raised by the executors (exec/call-depth.ts) when graph-function calls nest deeper than their
 * limit; the staged function that was called reports it as a RecursionDepthError naming itself.
 */
export class CallDepthExceeded extends RecursionDepthError {
  constructor(
    readonly callee: string,
    readonly limit: number,
  ) {
    super(`graph function "${callee}" was called more than ${limit} calls deep`, callee);
  }
}
/** NaN or Inf found by checkNumerics. */
export class NumericsError extends StagecraftError {}
/** Misuse of gradient tapes and differentiation APIs. */
export class GradientError extends StagecraftError {}
