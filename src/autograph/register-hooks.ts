/**
 * Module customization hooks for `node --import stagecraft/register` (registered by register.ts;
 * they run in Node's loader thread). User files (not under node_modules, not Stagecraft's own)
 * are converted as they load: every function gets an AutoGraph twin (see transform/twins.ts);
 * TypeScript files are stripped of types by Babel in the same pass; the source map is inline,
 * so stack traces point at the original code.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import * as path from "node:path";
import { convertModule, isTypeScriptFile } from "./transform/module.js";

const HERE = fileURLToPath(import.meta.url);
/** Stagecraft's own sources and build (src/ and dist/ of the package): not converted. */
const PACKAGE_ROOT = path.resolve(path.dirname(HERE), "../..");
const OWN = [path.join(PACKAGE_ROOT, "src") + path.sep, path.join(PACKAGE_ROOT, "dist") + path.sep];
const RUNTIME = new URL(`./operators/index.${HERE.endsWith(".ts") ? "ts" : "js"}`, import.meta.url).href;

/** ES modules in JavaScript and TypeScript (JSX needs its own transform: .tsx/.jsx are left alone). */
const CONVERTIBLE = /\.(js|mjs|ts|mts)$/;

/** Whether a module is user code to convert. */
export function isUserFile(url: string): boolean {
  if (!url.startsWith("file:")) return false;
  let file: string;
  try {
    file = fileURLToPath(url);
  } catch {
    return false;
  }
  if (/[\\/]node_modules[\\/]/.test(file)) return false;
  if (OWN.some((dir) => file.startsWith(dir))) return false;
  return CONVERTIBLE.test(file);
}

interface ResolveContext {
  parentURL?: string;
  conditions?: string[];
}
type NextResolve = (specifier: string, context?: ResolveContext) => Promise<{ url: string; format?: string | null; shortCircuit?: boolean }>;

interface LoadContext {
  format?: string | null;
  conditions?: string[];
}
interface LoadResult {
  format: string;
  source?: string | ArrayBuffer | Uint8Array | null;
  shortCircuit?: boolean;
}
type NextLoad = (url: string, context?: LoadContext) => Promise<LoadResult>;

/** TypeScript's conventions for relative imports: `./x.js` may be `./x.ts`; `./x` may be `./x.ts`. */
export async function resolve(specifier: string, context: ResolveContext, nextResolve: NextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (e) {
    const code = (e as { code?: string }).code;
    const relative = specifier.startsWith("./") || specifier.startsWith("../") || specifier.startsWith("/") || specifier.startsWith("file:");
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "ERR_UNSUPPORTED_DIR_IMPORT") && relative && context.parentURL && isTypeScriptFile(context.parentURL)) {
      const candidates = specifier.endsWith(".js")
        ? [specifier.slice(0, -3) + ".ts", specifier.slice(0, -3) + ".tsx"]
        : specifier.endsWith(".mjs")
          ? [specifier.slice(0, -4) + ".mts"]
          : [specifier + ".ts", specifier + "/index.ts"];
      for (const c of candidates) {
        try {
          return await nextResolve(c, context);
        } catch {
          /* next */
        }
      }
    }
    throw e;
  }
}

function text(source: LoadResult["source"]): string {
  if (typeof source === "string") return source;
  if (source instanceof Uint8Array) return Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString("utf8");
  if (source instanceof ArrayBuffer) return Buffer.from(source).toString("utf8");
  return "";
}

export async function load(url: string, context: LoadContext, nextLoad: NextLoad): Promise<LoadResult> {
  if (!isUserFile(url)) return nextLoad(url, context);
  const file = fileURLToPath(url);
  if (isTypeScriptFile(file)) {
    const code = await readFile(file, "utf8");
    const out = convertModule(code, { filename: file, runtime: RUNTIME, typescript: true, inlineSourceMap: true });
    return { format: "module", source: out.code, shortCircuit: true };
  }
  const r = await nextLoad(url, context);
  if (r.format !== "module" || r.source === null || r.source === undefined) return r;
  const out = convertModule(text(r.source), { filename: file, runtime: RUNTIME, typescript: false, inlineSourceMap: true });
  return { ...r, source: out.code };
}
