/**
 * What the bundler plugins (stagecraft/esbuild, stagecraft/vite) share with the Node loader:
 * which files are user code to convert (register-hooks.ts decides, for both), and converting
 * one with the AutoGraph Babel plugin (transform/module.ts). They run under Node, at build time;
 * the bundle then holds converted code, so `if`/`while` and operators on tensors work in the
 * browser as they do under `node --import stagecraft/register`.
 */
import { pathToFileURL } from "node:url";
import { isUserFile } from "./register-hooks.js";
import { convertModule, isTypeScriptFile } from "./transform/module.js";
import type { RawSourceMap } from "./transform/generate.js";

export interface BundlerPluginOptions {
  /** Files to convert (default: user files: .js/.mjs/.ts/.mts outside node_modules and Stagecraft itself). */
  include?: (file: string) => boolean;
  /** Module the converted code imports `ag` from (default "stagecraft/autograph-runtime"). */
  runtime?: string;
}

/** The runtime module converted code imports: the package's, as the bundle resolves it. */
export const BUNDLE_RUNTIME = "stagecraft/autograph-runtime";

export function shouldConvert(file: string, options: BundlerPluginOptions): boolean {
  const clean = file.replace(/[?#].*$/, "");
  if (options.include) return options.include(clean);
  return isUserFile(pathToFileURL(clean).href);
}

/** `code` of `file` converted (TypeScript stripped too), with a source map to the original. */
export function convertForBundle(code: string, file: string, options: BundlerPluginOptions, inlineSourceMap: boolean): { code: string; map: RawSourceMap | null } {
  const clean = file.replace(/[?#].*$/, "");
  return convertModule(code, { filename: clean, runtime: options.runtime ?? BUNDLE_RUNTIME, typescript: isTypeScriptFile(clean), inlineSourceMap });
}
