/**
 * The main thread's view of one WebGPU device: buffer and kernel ids, and the commands that act on
 * them (sent through a transport, transport.ts). Kernels are registered once per WGSL source; the
 * runtime compiles each source's pipeline once.
 */
import { ERROR_WORDS_BYTES, type BindingLayout, type PlanStep } from "./protocol.js";
import { openTransport, type DeviceDescription, type RuntimeStats, type Transport, type TransportChoice } from "./transport.js";
import { IS_NODE } from "./gpu-api.js";
import type { DeviceLimits, GpuOptions } from "./device-options.js";
import type { LazyKernel } from "./kernels/common.js";

export interface KernelSource {
  /** WGSL with an entry point named `main`. */
  source: string;
  layout: BindingLayout;
  /** For error messages and GPU debuggers. */
  label: string;
}

/**
 * What kernels use of a device: buffers, kernels, dispatches and copies. GpuDevice sends them to the
 * GPU at once; the executor's plan recorder (exec/) records them into a plan replayed per call.
 */
export interface KernelDevice {
  readonly limits: DeviceLimits;
  /** The error words checking kernels bind (see check). */
  readonly errorBuffer: number;
  alloc(bytes: number): number;
  free(id: number, bytes: number): void;
  write(id: number, data: ArrayBufferView, offset?: number): void;
  kernel(k: KernelSource | LazyKernel): number;
  run(kernel: number, buffers: number[], params: Uint32Array | null, groups: readonly [number, number, number]): void;
  copy(src: number, srcOffset: number, dst: number, dstOffset: number, bytes: number): void;
  /** A code a checking kernel reports (see GpuDevice.check); `permanent` for plans replayed on every call. */
  check(make: (value: number, aux: number) => Error, permanent?: boolean): number;
}

export interface WebGpuOpenOptions extends GpuOptions {
  /** Node only: "worker" (default; synchronous reads work) or "main" (as in a browser: async reads only). */
  thread?: TransportChoice;
}

export class GpuDevice implements KernelDevice {
  private nextBuffer = 1;
  private nextKernel = 1;
  private nextPlan = 1;
  private readonly kernelIds = new Map<string, number>();
  private readonly lazyIds = new Map<string, number>();
  /** Bytes in buffers the main thread holds (live tensors and plans' scratch), and their count. */
  liveBytes = 0;
  liveBuffers = 0;

  /** The error words checking kernels set (protocol.ts "errors"); bound by kernels as `err`. */
  readonly errorBuffer: number;
  /** What each check code means: code -> the error to raise (recent launches only). */
  private readonly checks = new Map<number, (value: number, aux: number) => Error>();
  private nextCheck = 1;
  /** Checks of plans (recorded once, reported on every call): codes from 65536 on, never reused. */
  private readonly permanentChecks = new Map<number, (value: number, aux: number) => Error>();
  private nextPermanent = 65536;

  private constructor(readonly transport: Transport) {
    this.errorBuffer = this.alloc(ERROR_WORDS_BYTES);
    this.write(this.errorBuffer, new Uint32Array(4));
    transport.send({ k: "errors", id: this.errorBuffer });
  }

  /**
   * A code for a check a kernel makes (an index out of range): if the kernel reports it, the next
   * read raises `make(value, aux)`. Codes are reused after 65535 checks, except permanent ones.
   */
  check(make: (value: number, aux: number) => Error, permanent = false): number {
    if (permanent) {
      const code = this.nextPermanent++;
      this.permanentChecks.set(code, make);
      return code;
    }
    const code = this.nextCheck;
    this.nextCheck = (this.nextCheck % 65535) + 1;
    this.checks.set(code, make);
    if (this.checks.size > 4096) this.checks.delete(this.checks.keys().next().value!);
    return code;
  }

  /** Splits a read's bytes from the error words; raises the error a kernel reported. */
  private received(raw: ArrayBuffer, bytes: number): ArrayBuffer {
    const words = new Uint32Array(raw, bytes, 4);
    if (words[0] !== 0) {
      const make = this.checks.get(words[0]!) ?? this.permanentChecks.get(words[0]!);
      const [value, aux] = [words[1]!, words[2]!];
      this.write(this.errorBuffer, new Uint32Array(4));
      throw make ? make(value, aux) : new Error(`a WebGPU kernel reported error code ${words[0]} (value ${value})`);
    }
    return raw.slice(0, bytes);
  }

  static async open(options: WebGpuOpenOptions = {}): Promise<GpuDevice | string> {
    const t = await openTransport(options, IS_NODE);
    return typeof t === "string" ? t : new GpuDevice(t);
  }

  get description(): DeviceDescription {
    return this.transport.description;
  }
  get limits(): DeviceLimits {
    return this.transport.description.limits;
  }

  alloc(bytes: number): number {
    const id = this.nextBuffer++;
    this.transport.send({ k: "alloc", id, bytes: Math.max(4, bytes) });
    this.liveBytes += bytes;
    this.liveBuffers++;
    return id;
  }

  free(id: number, bytes: number): void {
    this.transport.send({ k: "free", id });
    this.liveBytes -= bytes;
    this.liveBuffers--;
  }

  /** Writes words into buffer `id` at byte `offset` (the data is copied when sent). */
  write(id: number, data: ArrayBufferView, offset = 0): void {
    if (data.byteLength > 0) this.transport.send({ k: "write", id, offset, data });
  }

  kernel(k: KernelSource | LazyKernel): number {
    if ("key" in k) {
      let id = this.lazyIds.get(k.key);
      if (id === undefined) this.lazyIds.set(k.key, (id = this.kernel(k.make())));
      return id;
    }
    const key = k.layout + "\n" + k.source;
    let id = this.kernelIds.get(key);
    if (id === undefined) {
      id = this.nextKernel++;
      this.kernelIds.set(key, id);
      this.transport.send({ k: "kernel", id, source: k.source, layout: k.layout, label: k.label });
    }
    return id;
  }

  run(kernel: number, buffers: number[], params: Uint32Array | null, groups: readonly [number, number, number]): void {
    this.transport.send({ k: "run", kernel, buffers, params, groups });
  }

  copy(src: number, srcOffset: number, dst: number, dstOffset: number, bytes: number): void {
    if (bytes > 0) this.transport.send({ k: "copy", src, srcOffset, dst, dstOffset, bytes });
  }

  plan(steps: PlanStep[]): number {
    const id = this.nextPlan++;
    this.transport.send({ k: "plan", id, plan: steps });
    return id;
  }
  runPlan(id: number, buffers: number[]): void {
    this.transport.send({ k: "runPlan", id, buffers });
  }
  dropPlan(id: number): void {
    this.transport.send({ k: "dropPlan", id });
  }

  async read(id: number, bytes: number, offset = 0): Promise<ArrayBuffer> {
    return this.received(await this.transport.read(id, offset, bytes), bytes);
  }
  readSync(id: number, bytes: number, offset = 0): ArrayBuffer {
    return this.received(this.transport.readSync(id, offset, bytes), bytes);
  }
  flush(): void {
    this.transport.flush();
  }
  finish(): Promise<void> {
    return this.transport.finish();
  }
  stats(): Promise<RuntimeStats> {
    return this.transport.stats();
  }
  close(): void {
    this.transport.close();
  }
}
