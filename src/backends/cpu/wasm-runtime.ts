// Loads wasm/build/kernels.wasm (built by scripts/build-wasm.mjs; the platform seam reads or inlines it) synchronously and owns the
// shared linear memory that the main thread and the worker threads all use.
//
// Memory layout (byte addresses):
//   [0, 64)                            unused (keeps address 0 invalid)
//   [wsBase, wsBase + T * wsBytes)     one sgemm packing workspace per thread (T = maxThreads)
//   [arenaBase, ...)                   bump arena for operands/results, reset on every call
// Calls into the kernels are synchronous and never nest, so reset-per-call is enough.
import { availableParallelism, kernelWasmBytes } from "../../core/platform/node.js";
import { config } from "../../core/config.js";

export interface KernelExports {
  sgemm(a: number, b: number, c: number, m: number, n: number, k: number,
        lda: number, ldb: number, ldc: number, transA: number, transB: number, ws: number): void;
  wsBytes(): number;
}

// Minimal typings for the WebAssembly JS API (the project's lib settings do not include them).
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
  grow(pages: number): number;
}
export type WasmModule = object;
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: unknown };
  Memory: new (desc: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
}
export const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const PAGE = 65536;
const MAX_PAGES = 65536; // must match --maximumMemory in scripts/build-wasm.mjs

/** Total threads to use for kernels (main thread included): STAGECRAFT_THREADS (core/config.ts) or #cores. */
export function configuredThreads(): number {
  const env = config.threads;
  const n = env !== undefined && env !== "" ? Number.parseInt(env, 10) : availableParallelism();
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 64) : 1;
}

export class WasmRuntime {
  readonly module: WasmModule;
  readonly memory: WasmMemory;
  readonly exports: KernelExports;
  readonly maxThreads: number;
  readonly wsBytes: number;
  readonly wsBase = 64;
  readonly arenaBase: number;
  private top: number;
  private f32View: Float32Array;
  private i32View: Int32Array;

  constructor(module: WasmModule) {
    this.module = module;
    this.maxThreads = configuredThreads();
    this.memory = new WA.Memory({ initial: 64, maximum: MAX_PAGES, shared: true });
    const inst = new WA.Instance(module, { env: { memory: this.memory } });
    this.exports = inst.exports as unknown as KernelExports;
    this.wsBytes = align(this.exports.wsBytes(), 64);
    this.arenaBase = this.wsBase + this.maxThreads * this.wsBytes;
    this.top = this.arenaBase;
    this.ensure(this.arenaBase);
    this.f32View = new Float32Array(this.memory.buffer);
    this.i32View = new Int32Array(this.memory.buffer);
  }

  /** Byte address of thread `tid`'s sgemm workspace. */
  ws(tid: number): number {
    return this.wsBase + tid * this.wsBytes;
  }

  /** Forget every arena allocation (call at the start of each kernel call). */
  reset(): void {
    this.top = this.arenaBase;
  }

  /** Allocates `bytes` (64-byte aligned) in the arena, growing memory as needed. */
  alloc(bytes: number): number {
    const p = this.top;
    const end = align(p + Math.max(bytes, 0), 64);
    if (end > MAX_PAGES * PAGE) throw new RangeError("stagecraft wasm: out of kernel memory");
    this.ensure(end);
    this.top = end;
    return p;
  }

  /** Float32 view of the whole memory (refreshed after growth). */
  f32(): Float32Array {
    if (this.f32View.buffer.byteLength !== this.memory.buffer.byteLength) {
      this.f32View = new Float32Array(this.memory.buffer);
    }
    return this.f32View;
  }

  /** Int32 view of the whole memory (refreshed after growth; used for task tables). */
  i32(): Int32Array {
    if (this.i32View.buffer.byteLength !== this.memory.buffer.byteLength) this.i32View = new Int32Array(this.memory.buffer);
    return this.i32View;
  }

  private ensure(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes <= have) return;
    const need = Math.ceil((bytes - have) / PAGE);
    // grow geometrically to avoid many small grows
    const cur = have / PAGE;
    const pages = Math.min(MAX_PAGES - cur, Math.max(need, Math.ceil(cur / 2)));
    this.memory.grow(pages);
  }
}

function align(x: number, a: number): number {
  return Math.ceil(x / a) * a;
}

let runtime: WasmRuntime | null | undefined;

/** The kernel runtime, or null when the wasm module is missing or cannot be instantiated. */
export function getWasmRuntime(): WasmRuntime | null {
  if (runtime !== undefined) return runtime;
  runtime = null;
  if (config.noWasm) return runtime;
  try {
    if (typeof SharedArrayBuffer === "undefined") return runtime;
    const module = new WA.Module(kernelWasmBytes());
    runtime = new WasmRuntime(module);
  } catch {
    runtime = null;
  }
  return runtime;
}
