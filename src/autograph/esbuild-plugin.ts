/**
 * `stagecraft/esbuild`: an esbuild plugin that converts user files with AutoGraph as it bundles
 * them (every function gets a converted twin; see bundler.ts).
 *
 *   import { build } from "esbuild";
 *   import autograph from "stagecraft/esbuild";
 *   await build({ entryPoints: ["app.ts"], bundle: true, platform: "browser", plugins: [autograph()] });
 */
import { readFile } from "node:fs/promises";
import { convertForBundle, shouldConvert, type BundlerPluginOptions } from "./bundler.js";

export type { BundlerPluginOptions };

/** The parts of esbuild's plugin API used here (so that this package does not depend on esbuild's types). */
export interface EsbuildPlugin {
  name: string;
  setup(build: {
    onLoad(
      options: { filter: RegExp; namespace?: string },
      callback: (args: { path: string }) => Promise<{ contents: string; loader: "js"; resolveDir?: string } | undefined>,
    ): void;
  }): void;
}

export default function autographEsbuild(options: BundlerPluginOptions = {}): EsbuildPlugin {
  return {
    name: "stagecraft-autograph",
    setup(build) {
      build.onLoad({ filter: /\.(m?[jt]s)$/, namespace: "file" }, async (args) => {
        if (!shouldConvert(args.path, options)) return undefined;
        const source = await readFile(args.path, "utf8");
        // (inline map: esbuild chains it into the bundle's map when source maps are on)
        const out = convertForBundle(source, args.path, options, true);
        return { contents: out.code, loader: "js" };
      });
    },
  };
}
