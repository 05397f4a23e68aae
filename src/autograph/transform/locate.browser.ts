/**
 * locate.ts for browsers (package.json's "browser" field puts this file in its place): there is
 * no inspector to ask where a function is defined or what its closure binds, so every answer is
 * "cannot tell". Conversion at run time then sees globals and the `scope` given to
 * sc.autograph only, and bundled code is converted at build time instead (stagecraft/esbuild,
 * stagecraft/vite), as the Node loader converts it at load time.
 */
import type { FunctionInfo, FunctionSite } from "./locate.js";

export type { FunctionInfo, FunctionSite } from "./locate.js";

export function inspectFunction(_fn: Function, _text?: string): FunctionInfo {
  return { site: null, closureNames: null };
}

export function locateFunction(_fn: Function, _text?: string): FunctionSite | null {
  return null;
}

/** Whether a file belongs to a dependency or to Stagecraft itself (not user code). */
export function isLibraryFile(file: string, libRoot: string): boolean {
  return /[\\/]node_modules[\\/]/.test(file) || file.startsWith(libRoot + "/");
}

export function closureValues(_fn: Function, _names: readonly string[]): Map<string, unknown> {
  return new Map();
}

export function boundParts(_fn: Function): { target: Function; thisArg: unknown; args: unknown[] } | null {
  return null;
}
