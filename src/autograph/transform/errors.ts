/**
 * Conversion errors: syntax or usage the transform cannot handle. They name the user's
 * original file:line:column and show the original source line with a caret.
 */
import { formatLocation, type SourceLocation } from "../../core/errors.js";
import { AutoGraphError } from "../operators/state.js";

export interface ConversionLocation {
  file: string;
  /** 1-based line. */
  line: number;
  /** 0-based column (as Babel reports it). */
  column: number;
}

/** A source excerpt: the line and a caret under the column. */
export function codeFrame(lines: Map<number, string> | undefined, line: number, column: number): string {
  const text = lines?.get(line);
  if (text === undefined) return "";
  const gutter = String(line);
  const shown = text.replace(/\t/g, " ");
  return `\n  ${gutter} | ${shown}\n  ${" ".repeat(gutter.length)} | ${" ".repeat(Math.max(0, column))}^`;
}

export class ConversionError extends AutoGraphError {
  /** Where in the original source the problem is (1-based line and column). */
  readonly sourceLocation: SourceLocation;
  constructor(message: string, where: ConversionLocation, lines?: Map<number, string>) {
    const loc: SourceLocation = { file: where.file, line: where.line, column: where.column + 1 };
    super(`autograph: ${message} (at ${formatLocation(loc)})${codeFrame(lines, where.line, where.column)}`, `${where.file}:${where.line}:${where.column + 1}`);
    this.name = "ConversionError";
    this.sourceLocation = loc;
  }
}
