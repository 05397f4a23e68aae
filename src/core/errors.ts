/**
 * Typed errors. Every error raised on bad user input names the op, the offending
 * shapes/dtypes/values, and the caller's own file:line:column (the first stack frame
 * outside Stagecraft's sources).
 */
import { fileURLToPath } from "node:url";
import * as path from "node:path";
import { readFileSync } from "node:fs";

const LIB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function isLibraryFrame(file: string): boolean {
  let f = file;
  if (f.startsWith("file://")) {
    try {
      f = fileURLToPath(f);
    } catch {
      return false;
    }
  }
  // (code the compiled executor generates has no file: "<anonymous>" or "eval")
  return f.startsWith(LIB_ROOT + path.sep) || f.startsWith("node:") || f.includes("/node_modules/tsx/") || f.startsWith("<anonymous>") || f === "eval";
}

export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

const FRAME_RE = /\(?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/;

/** The first stack frame outside the library: where the user called us from. */
export function userLocation(stack: string | undefined = deepStack()): SourceLocation | null {
  if (!stack) return null;
  for (const line of stack.split("\n").slice(1)) {
    const m = FRAME_RE.exec(line.trim());
    if (!m) continue;
    const file = m[1]!;
    if (isLibraryFrame(file)) continue;
    return { file: file.startsWith("file://") ? fileURLToPath(file) : file, line: Number(m[2]), column: Number(m[3]) };
  }
  return null;
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

export function formatLocation(loc: SourceLocation | null): string {
  if (!loc) return "";
  const rel = path.relative(process.cwd(), loc.file);
  const shown = rel && !rel.startsWith("..") ? rel : loc.file;
  return `${shown}:${loc.line}:${loc.column}`;
}

/** A stack deep enough to get past the library's own frames. */
export function deepStack(): string | undefined {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 100;
  const stack = new Error().stack;
  Error.stackTraceLimit = limit;
  return stack;
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
    const loc = location === undefined ? (executing.at ?? userLocation(deepStack())) : location;
    const where = formatLocation(loc);
    super(`${op ? `${op}: ` : ""}${message}${where ? ` (at ${where})` : ""}`);
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
/** NaN or Inf found by checkNumerics. */
export class NumericsError extends StagecraftError {}
/** Misuse of gradient tapes and differentiation APIs. */
export class GradientError extends StagecraftError {}
