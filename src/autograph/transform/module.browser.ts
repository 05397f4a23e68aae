/**
 * module.ts for browsers (package.json's "browser" field puts this file in its place): converting
 * a whole module needs @babel/core, which is Node-only. Modules are converted at build time in
 * bundles (stagecraft/esbuild, stagecraft/vite: they run under Node); single functions convert
 * at run time in the browser too (convertFunctionSource needs only Babel's parser and generator).
 */
import type { ConvertModuleOptions, ConvertModuleResult } from "./module.js";

export type { ConvertModuleOptions, ConvertModuleResult } from "./module.js";

export function isTypeScriptFile(filename: string): boolean {
  return /\.(c|m)?tsx?$/.test(filename);
}

export function convertModule(_code: string, opts: ConvertModuleOptions): ConvertModuleResult {
  throw new Error(
    `convertModule(${JSON.stringify(opts.filename)}): converting whole modules needs @babel/core, which runs under Node only; ` +
      `convert at build time with the stagecraft/esbuild or stagecraft/vite plugin`,
  );
}
