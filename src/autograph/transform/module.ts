/**
 * convertModule: a whole module through Babel (TypeScript stripped in the same pass when the
 * file is TypeScript), with the AutoGraph plugin; the source map points at the original file.
 */
import type * as babel from "@babel/core";
import { createRequire } from "../../core/platform/node.js";
import { autographPlugin } from "./plugin.js";
import { DEFAULT_RUNTIME } from "./twins.js";
import type { RawSourceMap } from "./generate.js";
import { ConversionError } from "./errors.js";
import { sourceLines } from "./parse.js";

// (@babel/core and its TypeScript plugin load at the first module converted, as the rest of
// Babel does, babel.ts: importing the package entry does not pay for them; this file is Node's)
const load = createRequire(import.meta.url);
let babelCore: typeof babel | undefined;
let tsPlugin: babel.PluginItem | undefined;
function core(): typeof babel {
  return (babelCore ??= load("@babel/core") as typeof babel);
}
function typescriptPlugin(): babel.PluginItem {
  if (tsPlugin === undefined) {
    const m = load("@babel/plugin-transform-typescript") as { default?: unknown };
    tsPlugin = (m.default ?? m) as babel.PluginItem;
  }
  return tsPlugin;
}

export interface ConvertModuleOptions {
  filename: string;
  /** Where the generated `import { ag }` comes from (default "stagecraft/autograph-runtime"). */
  runtime?: string;
  /** Parse and strip TypeScript (default: by file extension .ts/.mts/.cts/.tsx). */
  typescript?: boolean;
  /** Append the source map as an inline comment too (for loaders). */
  inlineSourceMap?: boolean;
}

export interface ConvertModuleResult {
  code: string;
  map: RawSourceMap | null;
}

export function isTypeScriptFile(filename: string): boolean {
  return /\.(c|m)?tsx?$/.test(filename);
}

export function convertModule(code: string, opts: ConvertModuleOptions): ConvertModuleResult {
  const ts = opts.typescript ?? isTypeScriptFile(opts.filename);
  const tsx = /\.tsx$/.test(opts.filename);
  let result: babel.BabelFileResult | null;
  try {
    result = core().transformSync(code, {
      filename: opts.filename,
      babelrc: false,
      configFile: false,
      sourceType: "module",
      sourceMaps: opts.inlineSourceMap ? "both" : true,
      sourceFileName: opts.filename,
      comments: true,
      retainLines: false,
      parserOpts: { plugins: tsx ? ["jsx"] : [] },
      plugins: [
        ...(ts ? [[typescriptPlugin(), { allowDeclareFields: true, isTSX: tsx, onlyRemoveTypeImports: false }] as babel.PluginItem] : []),
        [autographPlugin, { runtime: opts.runtime ?? DEFAULT_RUNTIME, exclude: () => false }],
      ],
    });
  } catch (e) {
    if (e instanceof ConversionError) throw e;
    const err = e as { loc?: { line: number; column: number }; message?: string; code?: string };
    if (err.loc) {
      const msg = String(err.message ?? e).replace(/^[^:]*:\s*/, "").split("\n")[0]!.replace(/\s*\(\d+:\d+\)\s*$/, "");
      throw new ConversionError(`cannot parse ${opts.filename}: ${msg}`, { file: opts.filename, line: err.loc.line, column: err.loc.column }, sourceLines(code, { filename: opts.filename }));
    }
    throw e;
  }
  return { code: result?.code ?? "", map: (result?.map as RawSourceMap | null | undefined) ?? null };
}
