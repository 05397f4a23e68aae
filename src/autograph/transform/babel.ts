/**
 * Babel's run-time packages (types, parser, traverse, generator), loaded at their first use:
 * AutoGraph converts functions only when asked, and loading Babel costs about half a second of
 * start-up that a program which never converts at run time should not pay (the package entry
 * imports this layer). Node's `require` loads them synchronously, so sc.autograph and sc.stage
 * stay synchronous. Browsers use babel.browser.ts instead (package.json's "browser" field), which
 * imports them statically: a bundle must carry them, and has no `require`.
 */
import { createRequire } from "../../core/platform/node.js";
import type * as BabelTypes from "@babel/types";
import type * as BabelParser from "@babel/parser";
import type { NodePath } from "@babel/traverse";
import type { RawSourceMap } from "./generate.js";

export type Traverse = (typeof import("@babel/traverse"))["default"];
export type { NodePath };
export type GenerateFn = (ast: BabelTypes.Node, opts?: Record<string, unknown>, code?: string | Record<string, string>) => { code: string; map: RawSourceMap | null };

const load = createRequire(import.meta.url);
let types: typeof BabelTypes | undefined;
let parser: typeof BabelParser | undefined;
let traverse: Traverse | undefined;
let generate: GenerateFn | undefined;

/** A CommonJS module's function export, whether it comes as `module.exports` or `.default`. */
const defaultOf = <F>(m: unknown): F => ((m as { default?: F }).default ?? m) as F;

export function babelTypes(): typeof BabelTypes {
  return (types ??= load("@babel/types") as typeof BabelTypes);
}
export function babelParser(): typeof BabelParser {
  return (parser ??= load("@babel/parser") as typeof BabelParser);
}
export function babelTraverse(): Traverse {
  return (traverse ??= defaultOf<Traverse>(load("@babel/traverse")));
}
export function babelGenerate(): GenerateFn {
  return (generate ??= defaultOf<GenerateFn>(load("@babel/generator")));
}
