/**
 * The platform seam, Node's side: every Node-only module the library uses is imported here and
 * only here. Browser bundlers use browser.ts in its place (package.json's "browser" field maps
 * dist/core/platform/node.js to dist/core/platform/browser.js; esbuild, Vite, webpack and Rollup
 * honour it). Both files export the same names (test/core/platform.test.ts compares them).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import * as path from "node:path";
import { readFileSync, openSync, constants as fsConstants } from "node:fs";
import { findSourceMap, createRequire } from "node:module";
import * as workerThreadsModule from "node:worker_threads";
import { Worker } from "node:worker_threads";
import type { CliProgress, DawnModule } from "./types.js";
import { config } from "../config.js";
export type { CliProgress, CliProgressBar, DawnModule } from "./types.js";

export {
  readFileSync, statSync, existsSync, readdirSync, writeFileSync, openSync, closeSync, readSync, writeSync, fstatSync,
  fsyncSync, realpathSync, renameSync, unlinkSync, lstatSync, readlinkSync, mkdirSync,
} from "node:fs";

/**
 * Opens a file for reading without blocking (O_NONBLOCK): a FIFO or device opened this way
 * returns at once, so the caller's fstat can refuse it instead of waiting for a writer forever.
 */
export function openNonBlockingSync(file: string): number {
  return openSync(file, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
}
export { fileURLToPath, pathToFileURL, path };
export { createRequire };
export { availableParallelism, hostname } from "node:os";
export { inspect, format } from "node:util";

/** node:worker_threads, for code that starts its own Node workers (null in browsers: use Web Workers there). */
export const workerThreads: typeof workerThreadsModule | null = workerThreadsModule;

/** Dawn's Node binding (the optional `webgpu` package), loaded on demand; browsers have navigator.gpu. */
export async function loadDawn(): Promise<DawnModule> {
  const name = "webgpu"; // (a variable: TypeScript need not find the optional package's types)
  return (await import(name)) as DawnModule;
}

let hostMallocTuned = false;

/**
 * Asks glibc to keep large freed blocks for reuse (once, when the library is wired: api/wiring.ts).
 * By default glibc maps every allocation past 32 MB fresh and unmaps it when V8 frees it, so each
 * large tensor pays a first-touch page fault per 4 KB page (a 205 MB per-example gradient: 80-100
 * ms of faults against 12 ms for the same allocation from the heap). `mallopt(M_MMAP_MAX, 0)`
 * serves large blocks from the heap and `M_TRIM_THRESHOLD` = 1 GiB keeps up to that much freed
 * memory mapped instead of returning it to the OS (the trade PyTorch's and XLA's allocators make).
 * Linux with glibc and the optional koffi package only; `STAGECRAFT_HOST_MALLOC=system` leaves
 * malloc as it is. Nothing here changes values: V8 frees a buffer only when it is unreachable.
 */
export function keepLargeHostBlocks(): void {
  if (hostMallocTuned) return;
  hostMallocTuned = true;
  if (process.platform !== "linux" || config.hostMalloc === "system") return;
  try {
    const koffi = createRequire(import.meta.url)("koffi");
    const mallopt = koffi.load("libc.so.6").func("int mallopt(int param, int value)");
    const M_TRIM_THRESHOLD = -1, M_MMAP_MAX = -4;
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  } catch {
    // No koffi, or no glibc (musl has no libc.so.6): malloc keeps its defaults (only speed differs).
  }
}

/**
 * Storage of `bytes` bytes whose contents are not cleared, for a kernel that writes every
 * element of its output (a matrix product). A large typed array is zeroed when it is made
 * (calloc; on a block from glibc's heap, a memset): for a 205 MB per-example gradient that is
 * a second pass over the memory as long as the kernel's own. Node's unpooled unsafe Buffer
 * gives the block as malloc returns it. Never for a buffer a kernel may leave partly unwritten.
 */
export function uninitializedBytes(bytes: number): ArrayBuffer {
  const b = Buffer.allocUnsafeSlow(bytes);
  return b.buffer as ArrayBuffer; // (unpooled: its own ArrayBuffer, offset 0, exactly `bytes` long)
}

/** "node" here, "browser" in browser.ts. */
export const PLATFORM: "node" | "browser" = "node";

let cliProgressModule: CliProgress | undefined;
/**
 * cli-progress (terminal progress bars), loaded at the first bar (not with the package entry);
 * null where there is no terminal.
 */
export function loadCliProgress(): CliProgress | null {
  return (cliProgressModule ??= createRequire(import.meta.url)("cli-progress") as CliProgress);
}

/** Whether standard output is a terminal. */
export function stdoutIsTTY(): boolean {
  return !!process.stdout?.isTTY;
}

/** The folder the library runs from, one up from core/: src/ (run from source) or dist/ (built). */
export const LIB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/**
 * Stagecraft's own code, as it may appear in a stack: the folder it runs from, and its sources
 * (src/ beside dist/), which are where source maps of dist/ point (`--enable-source-maps`, or a
 * loader that turns source maps on for everyone, as `stagecraft/register` does).
 */
const LIB_DIRS = [...new Set([LIB_ROOT, path.join(path.dirname(LIB_ROOT), "src")])].map((d) => d + path.sep);
const LIB_URLS = LIB_DIRS.map((d) => pathToFileURL(d).href.replace(/\/?$/, "/"));

/** Whether a file (path or file URL, as a stack shows it) is one of Stagecraft's own. */
export function isLibraryFile(file: string): boolean {
  return file.startsWith("file://") ? LIB_URLS.some((u) => file.startsWith(u)) : LIB_DIRS.some((d) => file.startsWith(d));
}

/** A frame of the current stack: where its code is, before any source map. */
export interface CallSite {
  file: string | null;
  line: number | null;
  column: number | null;
}

/**
 * The call sites of the current stack, innermost first, below `below` (V8's structured stack
 * trace API). Call sites carry the position in the code that ran, before any source map: which
 * code is Stagecraft's own is then known from the file it was loaded from, whatever source maps
 * would show.
 */
export function callSites(below: Function): CallSite[] {
  const prepare = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  Error.prepareStackTrace = (_e, sites) => sites;
  Error.stackTraceLimit = 200;
  try {
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, below);
    const sites = Array.isArray(holder.stack) ? (holder.stack as NodeJS.CallSite[]) : [];
    return sites.map((s) => ({ file: s.getFileName() ?? s.getScriptNameOrSourceURL() ?? null, line: s.getLineNumber(), column: s.getColumnNumber() }));
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/** A file name as a stack shows it (a path, a file URL, or a sourceURL with a query) as a path. */
export function toFilePath(file: string): string {
  let f = file;
  if (f.startsWith("file://")) {
    try {
      f = fileURLToPath(f);
    } catch {
      return f;
    }
  }
  // (functions AutoGraph converts at run time are named `<file>?autograph=N`)
  return f.replace(/\?[^\\/]*$/, "");
}

/**
 * A position in generated code mapped to the original source, where Node holds a source map
 * for it (`--enable-source-maps`, `process.setSourceMapsEnabled(true)`: tsx and
 * `stagecraft/register` turn it on); otherwise the position itself.
 */
export function originalPosition(file: string, line: number, column: number): { file: string; line: number; column: number } {
  try {
    const map = findSourceMap(file);
    if (map) {
      const e = map.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
      if (e && typeof e.originalSource === "string" && typeof e.originalLine === "number") {
        return { file: toFilePath(e.originalSource), line: e.originalLine + 1, column: (e.originalColumn ?? 0) + 1 };
      }
    }
  } catch {
    /* an unreadable map: the generated position */
  }
  return { file: toFilePath(file), line, column };
}

/** A file as error messages show it: relative to the working directory when inside it. */
export function displayPath(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith("..") ? rel : file;
}

/** A source file's text for error excerpts, or null when it cannot be read. */
export function readSourceText(file: string): string | null {
  try {
    return readFileSync(path.resolve(file), "utf8");
  } catch {
    return null;
  }
}

/** The CPU kernels' WebAssembly module (wasm/build/kernels.wasm, built by scripts/build-wasm.mjs). */
export function kernelWasmBytes(): Uint8Array {
  return readFileSync(new URL("../../../wasm/build/kernels.wasm", import.meta.url));
}

/** A kernel worker thread, as the worker pool sees it. */
export interface KernelWorker {
  /** Calls `f` once the worker has failed or exited. */
  onExit(f: () => void): void;
}

/**
 * Whether a kernel worker can read messages synchronously while it blocks in Atomics.wait
 * (`receiveMessageOnPort`): the worker pool sends extra kernels that way.
 */
export const SYNC_WORKER_MESSAGES = true;

/**
 * Starts a worker thread running `body`, a script that finds its start data in `workerData`
 * and can call `receiveMessageOnPort` (from node:worker_threads). The worker does not keep the
 * process alive.
 */
export function startKernelWorker(body: string, workerData: object, transfer: unknown[]): KernelWorker | null {
  const w = new Worker(`const { workerData, receiveMessageOnPort } = require("node:worker_threads");\n${body}`, {
    eval: true,
    workerData,
    transferList: transfer as never[],
  });
  w.unref();
  return {
    onExit(f) {
      w.on("error", f);
      w.on("exit", f);
    },
  };
}
