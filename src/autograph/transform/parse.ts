/**
 * Parsing for AutoGraph (Babel's parser). Positions are those of the user's original file:
 * a function's source text (`fn.toString()`) is parsed with the line and column where it
 * starts, so every node's `loc` (and so every `loc` string and source-map entry) points at
 * the original code.
 */
import type * as t from "@babel/types";
import { babelParser } from "./babel.js";
import { ConversionError } from "./errors.js";

export interface SourcePosition {
  /** File name shown in locations and source maps. */
  filename: string;
  /** 1-based line where the source text starts in that file (default 1). */
  line?: number;
  /** 0-based column where the source text starts in that file (default 0). */
  column?: number;
}

export type ParsedFunction = t.FunctionExpression | t.ArrowFunctionExpression | t.ClassMethod | t.ClassPrivateMethod;

function parserError(e: unknown, source: string, pos: SourcePosition, what: string): ConversionError {
  const err = e as { loc?: { line: number; column: number }; reasonCode?: string; message?: string };
  const line = err.loc?.line ?? pos.line ?? 1;
  const column = err.loc?.column ?? 0;
  const message = String(err.message ?? e).replace(/\s*\(\d+:\d+\)\s*$/, "");
  return new ConversionError(`cannot parse ${what}: ${message}`, { file: pos.filename, line, column }, sourceLines(source, pos));
}

/** The source split in lines, keyed by original line number (for error excerpts). */
export function sourceLines(source: string, pos: SourcePosition): Map<number, string> {
  const first = pos.line ?? 1;
  const col = pos.column ?? 0;
  const m = new Map<number, string>();
  source.split(/\r\n|\r|\n/).forEach((text, i) => m.set(first + i, i === 0 ? " ".repeat(col) + text : text));
  return m;
}

/**
 * Parses the text of one function as `Function.prototype.toString` gives it: a function or
 * arrow expression, a function declaration, or a method (`m(x) { ... }`, `#p() {}`, `get x()`).
 */
export function parseFunctionSource(source: string, pos: SourcePosition): ParsedFunction {
  const line = pos.line ?? 1;
  const column = pos.column ?? 0;
  let firstError: unknown;
  try {
    const e = babelParser().parseExpression(source, {
      sourceType: "module",
      startLine: line,
      startColumn: column,
      sourceFilename: pos.filename,
      errorRecovery: false,
    });
    if (e.type === "FunctionExpression" || e.type === "ArrowFunctionExpression") return e;
    if (e.type === "ClassExpression") {
      throw new ConversionError("classes are not converted (convert their methods, or call them from converted code)", locOf(e, pos), sourceLines(source, pos));
    }
    throw new ConversionError(`expected a function, got ${e.type}`, locOf(e, pos), sourceLines(source, pos));
  } catch (e) {
    if (e instanceof ConversionError) throw e;
    firstError = e;
  }
  // A method: parse it inside a class body, padded so its positions stay the original ones.
  const wrapped = "(class{\n" + " ".repeat(column) + source + "\n})";
  try {
    const e = babelParser().parseExpression(wrapped, { sourceType: "module", startLine: line - 1, sourceFilename: pos.filename });
    if (e.type === "ClassExpression" && e.body.body.length === 1) {
      const m = e.body.body[0]!;
      if (m.type === "ClassMethod" || m.type === "ClassPrivateMethod") return m;
    }
  } catch {
    /* report the first error */
  }
  throw parserError(firstError, source, pos, "the function's source");
}

export function locOf(node: t.Node, pos: SourcePosition): { file: string; line: number; column: number } {
  return { file: pos.filename, line: node.loc?.start.line ?? pos.line ?? 1, column: node.loc?.start.column ?? 0 };
}
