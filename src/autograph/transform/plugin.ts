/**
 * The Babel plugin: at the end of each file (after other plugins, e.g. TypeScript stripping,
 * have run) every function gets a converted twin registered with `ag.registerConverted`, and
 * the file imports `ag` from the runtime module.
 */
import type * as t from "@babel/types";
import { convertProgram, DEFAULT_RUNTIME } from "./twins.js";
import { sourceLines } from "./parse.js";

export interface AutographPluginOptions {
  /** Module the generated `import { ag }` comes from (default "stagecraft/autograph-runtime"). */
  runtime?: string;
  /** Files not to convert (default: files under node_modules). */
  exclude?: (filename: string) => boolean;
}

interface PluginState {
  filename?: string;
  file: { code: string };
  opts: AutographPluginOptions;
}

interface ProgramPath {
  node: t.Program;
}

const defaultExclude = (f: string) => /[\\/]node_modules[\\/]/.test(f);

export function autographPlugin(_api: unknown, options: AutographPluginOptions = {}): { name: string; visitor: Record<string, unknown> } {
  return {
    name: "stagecraft-autograph",
    visitor: {
      Program: {
        exit(path: ProgramPath, state: PluginState) {
          const opts = { ...options, ...(state.opts ?? {}) };
          const filename = state.filename ?? "unknown";
          if ((opts.exclude ?? defaultExclude)(filename)) return;
          if (path.node.sourceType !== "module") return;
          const lines = sourceLines(state.file.code ?? "", { filename });
          convertProgram(path.node, { filename, runtime: opts.runtime ?? DEFAULT_RUNTIME, lines });
        },
      },
    },
  };
}
