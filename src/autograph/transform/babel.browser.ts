/**
 * babel.ts for browsers (package.json's "browser" field puts this file in its place): a bundle
 * must carry Babel's run-time packages and has no `require`, so they are imported statically.
 */
import * as types from "@babel/types";
import * as parser from "@babel/parser";
import traverseModule from "@babel/traverse";
import generatorModule from "@babel/generator";
import type { GenerateFn, Traverse } from "./babel.js";

export type { GenerateFn, NodePath, Traverse } from "./babel.js";

const defaultOf = <F>(m: unknown): F => ((m as { default?: F }).default ?? m) as F;
const traverse = defaultOf<Traverse>(traverseModule);
const generate = defaultOf<GenerateFn>(generatorModule);

export function babelTypes(): typeof types {
  return types;
}
export function babelParser(): typeof parser {
  return parser;
}
export function babelTraverse(): Traverse {
  return traverse;
}
export function babelGenerate(): GenerateFn {
  return generate;
}
