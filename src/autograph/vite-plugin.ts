/**
 * `stagecraft/vite`: a Vite plugin that converts user files with AutoGraph, in `vite` (dev) and
 * `vite build` alike (every function gets a converted twin; see bundler.ts).
 *
 *   // vite.config.js
 *   import autograph from "stagecraft/vite";
 *   export default { plugins: [autograph()] };
 */
import { convertForBundle, shouldConvert, type BundlerPluginOptions } from "./bundler.js";
import type { RawSourceMap } from "./transform/generate.js";

export type { BundlerPluginOptions };

/** The parts of Vite's plugin API used here (so that this package does not depend on Vite's types). */
export interface VitePlugin {
  name: string;
  enforce: "pre";
  transform(code: string, id: string): { code: string; map: RawSourceMap | null } | null;
}

export default function autographVite(options: BundlerPluginOptions = {}): VitePlugin {
  return {
    name: "stagecraft-autograph",
    // (before Vite's own TypeScript transform: Babel strips the types in the same pass)
    enforce: "pre",
    transform(code, id) {
      if (id.startsWith("\0") || !/\.(m?[jt]s)(\?|$)/.test(id) || !shouldConvert(id, options)) return null;
      return convertForBundle(code, id, options, false);
    },
  };
}
