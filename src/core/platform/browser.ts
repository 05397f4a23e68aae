/**
 * The platform seam, the browser's side (see node.ts, whose names this file exports too).
 * Browser bundlers load this file in node.ts's place through package.json's "browser" field.
 * Files: none (the functions that need them throw an error saying so). Paths: path-browserify's
 * POSIX paths. Kernel threads: Web Workers, only where a thread may block (a worker of a
 * cross-origin isolated page: Atomics.wait is forbidden on a page's main thread).
 */
import pathBrowserify from "path-browserify";
import { parseStack } from "./stack.js";
import type { DawnModule } from "./types.js";
export type { CliProgress, CliProgressBar, DawnModule } from "./types.js";
import kernelWasmBase64 from "../../../wasm/build/kernels.wasm.js";

type NodePath = typeof import("node:path");

/**
 * Babel's @babel/types reads `process.env.BABEL_TYPES_8_BREAKING` when it loads, and a page has
 * no `process`: an empty one (an `env` and nothing else: code that checks for Node looks at
 * `process.versions`, which stays absent) lets it load without any bundler configuration. The
 * package entries import this module first, so it runs before Babel's modules do.
 */
const host = globalThis as { process?: { env?: Record<string, string | undefined> } };
if (host.process === undefined) host.process = { env: {} };
else host.process.env ??= {};

/** No node:worker_threads in a page (null: see node.ts). */
export const workerThreads: typeof import("node:worker_threads") | null = null;

/** No Dawn in a page: WebGPU is navigator.gpu there. */
export async function loadDawn(): Promise<DawnModule> {
  throw new Error("Dawn's Node binding does not run in a browser (use navigator.gpu)");
}

/** "node" in node.ts, "browser" here. */
export const PLATFORM: "node" | "browser" = "browser";

/** POSIX path functions (path-browserify); there is no working directory: "/" stands for it. */
export const path = pathBrowserify as unknown as NodePath;

function unavailable(name: string): never {
  throw new Error(`${name} is not available in the browser (Stagecraft reads and writes files only under Node; pass the bytes instead where the API takes them)`);
}
const fsFunction = (name: string) => ((..._args: unknown[]) => unavailable(`fs.${name}`)) as never;

export const readFileSync: typeof import("node:fs").readFileSync = fsFunction("readFileSync");
export const statSync: typeof import("node:fs").statSync = fsFunction("statSync");
export const existsSync: typeof import("node:fs").existsSync = () => false;
export const readdirSync: typeof import("node:fs").readdirSync = fsFunction("readdirSync");
export const writeFileSync: typeof import("node:fs").writeFileSync = fsFunction("writeFileSync");
export const openSync: typeof import("node:fs").openSync = fsFunction("openSync");
export const closeSync: typeof import("node:fs").closeSync = fsFunction("closeSync");
export const readSync: typeof import("node:fs").readSync = fsFunction("readSync");
export const writeSync: typeof import("node:fs").writeSync = fsFunction("writeSync");
export const fstatSync: typeof import("node:fs").fstatSync = fsFunction("fstatSync");
export const fsyncSync: typeof import("node:fs").fsyncSync = fsFunction("fsyncSync");
export const realpathSync: typeof import("node:fs").realpathSync = fsFunction("realpathSync");
export const renameSync: typeof import("node:fs").renameSync = fsFunction("renameSync");
export const unlinkSync: typeof import("node:fs").unlinkSync = fsFunction("unlinkSync");
export const lstatSync: typeof import("node:fs").lstatSync = fsFunction("lstatSync");
export const openNonBlockingSync: (file: string) => number = fsFunction("openNonBlockingSync");
export const readlinkSync: typeof import("node:fs").readlinkSync = fsFunction("readlinkSync");
export const mkdirSync: typeof import("node:fs").mkdirSync = fsFunction("mkdirSync");

/** `require` of a package: there is none in the browser (bundle the package and pass its data instead). */
export function createRequire(_from: string | URL): (id: string) => never {
  return (id: string) => unavailable(`require("${id}")`);
}

export function fileURLToPath(url: string | URL): string {
  const u = new URL(String(url));
  if (u.protocol !== "file:") throw new TypeError(`not a file URL: ${String(url)}`);
  return decodeURIComponent(u.pathname);
}

export function pathToFileURL(p: string): URL {
  return new URL(`file://${encodeURI(p.startsWith("/") ? p : `/${p}`)}`);
}

type Browser = {
  navigator?: { hardwareConcurrency?: number };
  crossOriginIsolated?: boolean;
  WorkerGlobalScope?: unknown;
  Worker?: new (url: string) => { postMessage(data: unknown, transfer: unknown[]): void; addEventListener(type: string, f: () => void): void };
  Blob?: new (parts: string[], options: { type: string }) => object;
  URL: { createObjectURL(blob: object): string; revokeObjectURL(url: string): void };
  document?: unknown;
};
const g = globalThis as unknown as Browser;

/**
 * Whether this thread may block in Atomics.wait on shared memory, which the kernel threads need:
 * a Web Worker (not a page's main thread) of a cross-origin isolated page.
 */
function threadsUsable(): boolean {
  return g.crossOriginIsolated === true && typeof SharedArrayBuffer !== "undefined" && g.WorkerGlobalScope !== undefined && g.Worker !== undefined;
}

/** os.hostname()'s stand-in. */
export function hostname(): string {
  return "browser";
}

/** Threads the kernels may use (this one included): the cores, where threads are usable here; else 1. */
export function availableParallelism(): number {
  return threadsUsable() ? Math.max(1, g.navigator?.hardwareConcurrency ?? 1) : 1;
}

/** A value as text for logs (a plain rendering: Node's util.inspect is not here). */
export function inspect(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return `[Function: ${value.name || "(anonymous)"}]`;
  if (typeof value === "bigint") return `${value}n`;
  if (value === undefined || typeof value === "symbol" || typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  try {
    return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Values joined as console.log shows them: strings as they are, other values inspected. */
export function format(...args: unknown[]): string {
  return args.map((a) => (typeof a === "string" ? a : inspect(a))).join(" ");
}

/** No terminal: no progress bars. */
export function loadCliProgress(): null {
  return null;
}
export function stdoutIsTTY(): boolean {
  return false;
}

/** Node tunes glibc's malloc for large tensors (node.ts); a browser's allocator is its own. */
export function keepLargeHostBlocks(): void {}

/** A browser has no uncleared allocation: a plain (zeroed) buffer (node.ts says why Node's is not). */
export function uninitializedBytes(bytes: number): ArrayBuffer {
  return new ArrayBuffer(bytes);
}

/** A script's URL without its query or hash (Vite adds `?v=...`; AutoGraph names code `?autograph=N`). */
function bareUrl(file: string): string {
  return file.replace(/[?#].*$/, "");
}

/**
 * Where Stagecraft's code is loaded from: this file's URL, read from a stack. Loaded as separate
 * modules (dist/ served as it is) that is dist/'s folder; bundled, it is the bundle itself, and
 * every frame of the bundle counts as the library's (user code in the same bundle cannot be told
 * apart, so errors then carry no user location rather than a wrong one).
 */
const OWN_FILE = bareUrl(parseStack(new Error().stack)[0]?.file ?? "");
const OWN_SUFFIX = /\/core\/platform\/browser\.(?:js|ts)$/;
export const LIB_ROOT = OWN_SUFFIX.test(OWN_FILE) ? OWN_FILE.replace(OWN_SUFFIX, "") : OWN_FILE;

export function isLibraryFile(file: string): boolean {
  if (LIB_ROOT === "") return false;
  const f = bareUrl(file);
  return OWN_SUFFIX.test(OWN_FILE) ? f.startsWith(LIB_ROOT + "/") : f === LIB_ROOT;
}

export interface CallSite {
  file: string | null;
  line: number | null;
  column: number | null;
}

/** The frames of the current stack, innermost first, from its text (any engine's format); `below` is not used. */
export function callSites(_below: Function): CallSite[] {
  return parseStack(new Error().stack).map((f) => ({ file: f.file || null, line: f.line, column: f.column }));
}

export function toFilePath(file: string): string {
  return file.replace(/\?autograph=\d+$/, "");
}

/** Positions are those of the code that ran (source maps are the devtools' business here). */
export function originalPosition(file: string, line: number, column: number): { file: string; line: number; column: number } {
  return { file: toFilePath(file), line, column };
}

export function displayPath(file: string): string {
  return file;
}

/** Source files cannot be read synchronously here: no excerpts. */
export function readSourceText(_file: string): string | null {
  return null;
}

/** The CPU kernels' WebAssembly module, inlined at build time (2-3 KB; scripts/build-wasm.mjs writes it). */
export function kernelWasmBytes(): Uint8Array {
  const text = atob(kernelWasmBase64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

export interface KernelWorker {
  onExit(f: () => void): void;
}

/** Web Workers cannot read messages while they block: the pool sends them no extra kernels. */
export const SYNC_WORKER_MESSAGES = false;

/**
 * Starts a Web Worker (from a blob URL) running `body`: it receives `workerData` as its first
 * message; `receiveMessageOnPort` finds nothing (see SYNC_WORKER_MESSAGES). Null where threads
 * are not usable (availableParallelism() is 1 there, so the pool never asks).
 */
export function startKernelWorker(body: string, workerData: object, transfer: unknown[]): KernelWorker | null {
  if (!threadsUsable() || !g.Blob) return null;
  const source = `self.onmessage = (event) => {\n  self.onmessage = null;\n  const workerData = event.data;\n  const receiveMessageOnPort = () => undefined;\n${body}\n};`;
  const url = g.URL.createObjectURL(new g.Blob([source], { type: "text/javascript" }));
  const w = new g.Worker!(url);
  w.postMessage(workerData, transfer);
  return {
    onExit(f) {
      w.addEventListener("error", f);
    },
  };
}
