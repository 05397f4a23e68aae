/**
 * The AutoGraph conversion pipeline: parse -> (for each function, innermost first) convert ->
 * generate with a source map.
 *
 * convertFunctionSource(source, pos): one function's text (as `fn.toString()` gives it) to the
 * text of its converted version, a function expression; functions nested in it get converted
 * twins (twins.ts).
 * convertModule(code, { filename }): every function of a module gets a registered converted
 * twin (module.ts).
 */
import * as t from "./build.js";
import { childNodes, identifierNames } from "./ast.js";
import { NameGen } from "./names.js";
import { parseFunctionSource, sourceLines, type SourcePosition } from "./parse.js";
import { convertFunctionNode } from "./pipeline.js";
import { generateCode, type RawSourceMap } from "./generate.js";
import type { Feature } from "./converters/context.js";
import { addTwins, staticKeyName } from "./twins.js";

export { ConversionError } from "./errors.js";
export type { RawSourceMap } from "./generate.js";
export { convertModule, type ConvertModuleOptions, type ConvertModuleResult } from "./module.js";
export { addTwins, convertProgram, DEFAULT_RUNTIME } from "./twins.js";
export { PASSES, LOWERING, CONVERTERS } from "./pipeline.js";

// ---- one function ---------------------------------------------------------------------------

export interface ConvertFunctionSourceOptions extends SourcePosition {
  /** Identifier for the operators in the generated code (default "ag", or a fresh name if the function uses "ag"). */
  agName?: string;
  /** Names bound around the function (e.g. the `scope` given to sc.autograph). */
  outerNames?: Iterable<string>;
  /** Keep original line numbers in the generated code. */
  retainLines?: boolean;
  /**
   * Maps a position of `source` (1-based line, 0-based column, as placed by line/column) to
   * the original file (for source text that is itself generated, e.g. transpiled TypeScript).
   */
  mapPosition?: (line: number, column: number) => { line: number; column: number } | null;
  /** The whole original file's text (embedded in the source map, and shown in error excerpts). */
  sourceContent?: string;
  /** Whether the function is strict-mode code (default true). */
  strict?: boolean;
  /** Give `if` and `?:` a native copy for JS-valued conditions (default true; see converters/if-statements.ts). */
  nativeCopies?: boolean;
  /** The passes to run (default all; see pipeline.ts: for tests of one pass). */
  passes?: readonly string[];
}

export interface ConvertFunctionSourceResult {
  /** The converted function, as a function expression. */
  code: string;
  map: RawSourceMap | null;
  /** What the conversion rewrote. */
  features: Set<Feature>;
  /** Free names of the function (variables it uses but does not declare). */
  freeNames: Set<string>;
  /** `this`, `arguments`, `super`, `new.target` an arrow function takes from its enclosing scope. */
  lexicalThisLike: Set<string>;
  /** The function's name as written (function expressions and methods). */
  name: string | null;
  /** The identifier the generated code uses for the operators (a parameter to bind to `ag`). */
  agName: string;
}

function remapLocations(root: t.Node, map: (line: number, column: number) => { line: number; column: number } | null, filename: string): void {
  const fix = (p: t.SourceLocation["start"]): t.SourceLocation["start"] => {
    const m = map(p.line, p.column);
    return m ? { line: m.line, column: m.column, index: p.index } : p;
  };
  const visit = (n: t.Node): void => {
    if (n.loc) n.loc = { ...n.loc, start: fix(n.loc.start), end: fix(n.loc.end), filename, identifierName: n.loc.identifierName };
    for (const c of childNodes(n)) visit(c);
  };
  visit(root);
}

/**
 * Converts the text of one function (`fn.toString()`); `line`/`column` place it in its file so
 * that `loc` strings and the source map point at the original code.
 */
export function convertFunctionSource(source: string, opts: ConvertFunctionSourceOptions): ConvertFunctionSourceResult {
  // Excerpts for errors come from the original file when we have it (positions are original).
  const lines = opts.sourceContent !== undefined && opts.sourceContent !== source ? sourceLines(opts.sourceContent, { filename: opts.filename }) : sourceLines(source, opts);
  const fn = parseFunctionSource(source, opts);
  if (opts.mapPosition) remapLocations(fn, opts.mapPosition, opts.filename);
  const names = new NameGen(identifierNames(fn));
  // The operators' identifier: "ag" unless the function uses that name itself.
  const agName = opts.agName ?? names.fresh("ag");
  names.reserve(agName);
  const outer = new Set(opts.outerNames ?? []);
  const outerBinding = (n: string) => outer.has(n);
  addTwins(fn, { filename: opts.filename, agName, names, lines, outerBinding, skip: fn, strict: opts.strict, nativeCopies: opts.nativeCopies, passes: opts.passes });
  const conv = convertFunctionNode(fn, { filename: opts.filename, agName, outerBinding, lines, strict: opts.strict, nativeCopies: opts.nativeCopies, passes: opts.passes });
  const gen = generateCode(conv.node, { filename: opts.filename, sourceContent: opts.sourceContent ?? source, retainLines: opts.retainLines });
  const name = fn.type === "FunctionExpression" ? (fn.id?.name ?? null) : fn.type === "ClassMethod" ? staticKeyName(fn.key, fn.computed) : null;
  const freeNames = new Set([...conv.freeNames].filter((n) => n !== agName));
  return { code: gen.code, map: gen.map, features: conv.features, freeNames, lexicalThisLike: conv.lexicalThisLike, name, agName };
}

