/**
 * Code generation (Babel's generator) with source maps that point at the original source:
 * every node keeps the position it had in the user's file, and generated nodes take the
 * position of the construct they replace.
 */
import type * as t from "@babel/types";
import { utf8ToBase64 } from "../../core/platform/encoding.js";
import { babelGenerate } from "./babel.js";

export interface RawSourceMap {
  version: number;
  sources: string[];
  names: string[];
  mappings: string;
  file?: string;
  sourceRoot?: string;
  sourcesContent?: (string | null)[];
}

export interface GenerateOptions {
  /** The original file (the `sources` entry of the map). */
  filename: string;
  /** The original file's text, embedded in the map (sourcesContent). */
  sourceContent?: string;
  /** Keep original line numbers (so stack traces read right even without source maps). */
  retainLines?: boolean;
  /** Emit a source map (default true). */
  sourceMaps?: boolean;
}

export interface Generated {
  code: string;
  map: RawSourceMap | null;
}

export function generateCode(node: t.Node, opts: GenerateOptions): Generated {
  const wantMap = opts.sourceMaps !== false;
  const out = babelGenerate()(
    node,
    {
      sourceMaps: wantMap,
      sourceFileName: opts.filename,
      retainLines: !!opts.retainLines,
      comments: true,
      jsescOption: { minimal: true },
    },
    opts.sourceContent !== undefined ? { [opts.filename]: opts.sourceContent } : undefined,
  );
  let map = out.map ?? null;
  if (map) {
    map = { ...map };
    if (opts.sourceContent !== undefined) map.sourcesContent = map.sources.map((s) => (s === opts.filename ? opts.sourceContent! : null));
  }
  return { code: out.code, map };
}

/** `//# sourceMappingURL=data:...` for a map. */
export function inlineSourceMapComment(map: RawSourceMap): string {
  return `//# sourceMappingURL=data:application/json;charset=utf-8;base64,${utf8ToBase64(JSON.stringify(map))}`;
}
