/**
 * Typed errors. Every error raised on bad user input names the op, the offending
 * shapes/dtypes/values, and the caller's own file:line:column (the first stack frame
 * outside Stagecraft's sources).
 */
import { callSites, displayPath, isLibraryFile, originalPosition, readSourceText, toFilePath } from "./platform/node.js";

/** Where a frame's code comes from. */
type FrameOwner = "library" | "dependency" | "user";

function ownerOf(file: string | null | undefined): FrameOwner {
  // (code made by `new Function` without a sourceURL, as the compiled executor's, has no file)
  if (!file || file === "eval" || file.includes("<anonymous>")) return "library";
  if (file.startsWith("node:") || file.startsWith("internal/")) return "library";
  if (isLibraryFile(file)) return "library";
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

/**
 * The first stack frame outside the library: where the user called us from (a frame of a
 * dependency only when no frame of the user's own is on the stack), mapped through source maps
 * where Node has them.
 */
export function userLocation(): SourceLocation | null {
  let dependency: SourceLocation | null = null;
  for (const site of callSites(userLocation)) {
    const file = site.file;
    const owner = ownerOf(file);
    if (owner === "library") continue;
    const line = site.line;
    const column = site.column;
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
  return `${displayPath(loc.file)}:${loc.line}:${loc.column}`;
}

const sourceCache = new Map<string, string[] | null>();

/** The user's source line at `loc`, with a caret under the column (null when unreadable). */
export function sourceExcerpt(loc: SourceLocation | null): string | null {
  if (!loc || loc.file.startsWith("<") || loc.file.startsWith("node:")) return null;
  const file = loc.file;
  let lines = sourceCache.get(file);
  if (lines === undefined) {
    lines = readSourceText(file)?.split(/\r?\n/) ?? null;
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
    // (a message passed on with its op's prefix already in front is not prefixed again: "Loop: Loop: ...")
    const named = op !== undefined && op !== "" && message.startsWith(`${op}: `);
    super(`${op && !named ? `${op}: ` : ""}${message}${note}${where ? ` (at ${where})` : ""}`);
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
