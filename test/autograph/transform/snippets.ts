/**
 * Snippets through the transform for before/after tests: the whole pipeline, the lowering up to
 * one pass, or the lowering and one converter (the pass API: convertFunctionSource's `passes`).
 * Whitespace is collapsed; the staged form (without the native copies `if` and `?:` also get)
 * unless asked.
 */
import { convertFunctionSource, LOWERING } from "../../../src/autograph/transform/convert.js";

export const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** The generated code of a function's source: every pass. */
export function gen(src: string, nativeCopies = false): string {
  return squash(convertFunctionSource(src, { filename: "t.js", line: 1, column: 0, nativeCopies }).code);
}

/** The code after the lowering passes up to and including `last` (no converter runs). */
export function lowered(src: string, last: string): string {
  const names = LOWERING.map((p) => p.name);
  const upTo = names.indexOf(last);
  if (upTo < 0) throw new Error(`no lowering pass ${last}`);
  return squash(convertFunctionSource(src, { filename: "t.js", line: 1, column: 0, passes: names.slice(0, upTo + 1) }).code);
}

/** The code after the whole lowering and the converters named (in the pipeline's order). */
export function convertedBy(src: string, converters: readonly string[], nativeCopies = false): string {
  const passes = [...LOWERING.map((p) => p.name), ...converters];
  return squash(convertFunctionSource(src, { filename: "t.js", line: 1, column: 0, nativeCopies, passes }).code);
}
