/**
 * The GPU runtime: executes protocol commands on one GPUDevice, on whichever thread holds it (a
 * worker in Node, the main thread in a browser).
 *
 * - Buffers come from a pool of size classes, so the allocate/free pattern of eager code does not
 *   create a GPUBuffer per op.
 * - Dispatches are recorded into one open compute pass; the command buffer is submitted when a read
 *   needs it, when the batch is full, or when the sender says its batch ended (flush).
 * - Kernel parameters of a whole batch go into one uniform buffer, written once before the submit
 *   (each dispatch binds its own 256-byte-aligned slice).
 * - Pipelines are compiled once per kernel source and cached.
 */
import { ERROR_WORDS_BYTES, type BindingLayout, type Command, type PlanStep } from "./protocol.js";

const PARAM_ALIGN = 256; // minUniformBufferOffsetAlignment is at most 256

/** Bytes a parameter block takes in a uniform buffer: whole 256-byte slots. */
function slotBytes(bytes: number): number {
  return Math.max(PARAM_ALIGN, Math.ceil(bytes / PARAM_ALIGN) * PARAM_ALIGN);
}
const PARAM_CAPACITY = 1 << 16;
const MAX_DISPATCHES_PER_SUBMIT = 256;
const POOL_MAX_FREE_BYTES = 512 * 1024 * 1024;

/** The size class a request of `bytes` is served from (pool buckets waste at most 1/8). */
export function sizeClass(bytes: number): number {
  const b = Math.max(bytes, 16);
  if (b <= 1024) return Math.ceil(b / 64) * 64;
  const top = 2 ** Math.floor(Math.log2(b));
  const step = top / 8;
  return Math.ceil(b / step) * step;
}

/** A registered plan: its steps and the uniform buffer holding every step's parameters. */
interface Plan {
  steps: PlanStep[];
  params: GPUBuffer | null;
  /** Offset of each run step's parameters in `params`. */
  offsets: Map<PlanStep, number>;
}

interface Kernel {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  bindings: BindingLayout;
}

export class GpuRuntime {
  private readonly buffers = new Map<number, GPUBuffer>();
  private readonly kernels = new Map<number, Kernel>();
  private readonly pipelineCache = new Map<string, Kernel>();
  private readonly layouts = new Map<string, GPUBindGroupLayout>();
  private readonly pool = new Map<number, GPUBuffer[]>();
  private poolBytes = 0;
  private readonly stagingPool = new Map<number, GPUBuffer[]>();
  private readonly plans = new Map<number, Plan>();
  /** While a plan's control flow awaits a predicate, later commands wait here, in order. */
  private busy = false;
  private readonly waiting: [Command, (v: unknown) => void, (e: Error) => void][] = [];
  private errorBuffer = 0;

  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private dispatches = 0;
  /** Buffers the unsubmitted batch touches: writing one of them must wait for a submit. */
  private readonly touched = new Set<GPUBuffer>();
  private readonly destroyAfterSubmit: GPUBuffer[] = [];
  private readonly paramHost = new Uint8Array(PARAM_CAPACITY);
  private paramUsed = 0;
  private readonly paramGpu: GPUBuffer;
  private readonly errors: string[] = [];
  /** Time spent creating pipelines (ms) and how many: the first-call compile cost. */
  compileMs = 0;
  compiled = 0;
  /** Predicates of plans' loops and branches read back so far. */
  predicateReads = 0;

  constructor(
    readonly device: GPUDevice,
    /** Keeps the GPU instance and adapter alive as long as the device (see gpu-api.ts). */
    readonly keepAlive: unknown,
  ) {
    this.paramGpu = device.createBuffer({ size: PARAM_CAPACITY, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: "params" });
    device.addEventListener?.("uncapturederror", (e) => this.errors.push((e as GPUUncapturedErrorEvent).error.message));
    if (!device.addEventListener) (device as { onuncapturederror: unknown }).onuncapturederror = (e: GPUUncapturedErrorEvent) => this.errors.push(e.error.message);
    void device.lost.then((info) => this.errors.push(`the GPU device was lost (${info.reason}): ${info.message}`));
  }

  /** Errors the device reported since the last call (validation, out of memory, device lost). */
  takeErrors(): string[] {
    return this.errors.splice(0, this.errors.length);
  }

  /**
   * Runs a command in order with every command before it. Returns the answer of a read, finish or
   * stats command (a promise), else null. A command that fails is recorded as an error, which the
   * next read raises. While a plan's loop awaits its predicate, later commands are queued.
   */
  submit(c: Command): Promise<unknown> | null {
    if (this.busy) return new Promise((resolve, reject) => this.waiting.push([c, resolve, reject]));
    try {
      return this.execute(c);
    } catch (e) {
      this.errors.push((e as Error).message);
      return null;
    }
  }

  private execute(c: Command): Promise<unknown> | null {
    switch (c.k) {
      case "alloc":
        this.buffers.set(c.id, this.take(c.bytes));
        return null;
      case "free": {
        const b = this.buffers.get(c.id);
        if (b) {
          this.buffers.delete(c.id);
          this.give(b);
        }
        return null;
      }
      case "write": {
        const b = this.buffer(c.id);
        if (this.touched.has(b)) this.flush();
        this.device.queue.writeBuffer(b, c.offset, c.data.buffer, c.data.byteOffset, c.data.byteLength);
        return null;
      }
      case "kernel":
        this.kernels.set(c.id, this.pipelineFor(c.source, c.layout, c.label));
        return null;
      case "run":
        this.dispatch(this.kernel(c.kernel), c.buffers.map((id) => this.buffer(id)), c.params, c.groups);
        return null;
      case "copy":
        this.copy(this.buffer(c.src), c.srcOffset, this.buffer(c.dst), c.dstOffset, c.bytes);
        return null;
      case "read":
        return this.read(c.id, c.offset, c.bytes);
      case "finish":
        return this.finish().then(() => {
          const errs = this.takeErrors();
          if (errs.length > 0) throw new Error(errs.join("; "));
        });
      case "stats":
        return Promise.resolve({ compiled: this.compiled, compileMs: this.compileMs, predicateReads: this.predicateReads });
      case "errors":
        this.errorBuffer = c.id;
        return null;
      case "plan":
        this.plans.set(c.id, this.registerPlan(c.plan));
        return null;
      case "dropPlan":
        this.plans.get(c.id)?.params?.destroy();
        this.plans.delete(c.id);
        return null;
      case "runPlan": {
        const running = this.runPlan(c.id, c.buffers);
        if (running) {
          this.busy = true;
          running.then(
            () => this.resume(),
            (e: Error) => {
              this.errors.push(e.message);
              this.resume();
            },
          );
        }
        return null;
      }
    }
  }

  /** Runs the commands that waited for a plan, until one waits again. */
  private resume(): void {
    this.busy = false;
    while (!this.busy && this.waiting.length > 0) {
      const [c, resolve, reject] = this.waiting.shift()!;
      let answer: Promise<unknown> | null;
      try {
        answer = this.execute(c);
      } catch (e) {
        this.errors.push((e as Error).message);
        answer = null;
      }
      if (answer) answer.then(resolve, reject);
      else resolve(undefined);
    }
  }

  private buffer(id: number): GPUBuffer {
    const b = this.buffers.get(id);
    if (!b) throw new Error(`webgpu runtime: buffer ${id} does not exist (freed or never allocated)`);
    return b;
  }

  private kernel(id: number): Kernel {
    const k = this.kernels.get(id);
    if (!k) throw new Error(`webgpu runtime: kernel ${id} was never registered`);
    return k;
  }

  private take(bytes: number): GPUBuffer {
    const size = sizeClass(bytes);
    const free = this.pool.get(size);
    if (free && free.length > 0) {
      this.poolBytes -= size;
      return free.pop()!;
    }
    return this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  private give(b: GPUBuffer): void {
    if (this.poolBytes + b.size > POOL_MAX_FREE_BYTES) {
      // (a buffer the unsubmitted batch uses is destroyed after the submit: the GPU still needs it)
      if (this.touched.has(b)) this.destroyAfterSubmit.push(b);
      else b.destroy();
      return;
    }
    let free = this.pool.get(b.size);
    if (!free) this.pool.set(b.size, (free = []));
    free.push(b);
    this.poolBytes += b.size;
  }

  private bindGroupLayout(bindings: BindingLayout): GPUBindGroupLayout {
    let l = this.layouts.get(bindings);
    if (!l) {
      const entries: GPUBindGroupLayoutEntry[] = [];
      for (let i = 0; i < bindings.length; i++) {
        const c = bindings[i]!;
        entries.push({
          binding: i,
          visibility: GPUShaderStage.COMPUTE,
          buffer: { type: c === "u" ? "uniform" : c === "r" ? "read-only-storage" : "storage" },
        });
      }
      l = this.device.createBindGroupLayout({ entries });
      this.layouts.set(bindings, l);
    }
    return l;
  }

  private pipelineFor(source: string, bindings: BindingLayout, label: string): Kernel {
    const key = bindings + "\n" + source;
    let k = this.pipelineCache.get(key);
    if (!k) {
      const t0 = performance.now();
      const layout = this.bindGroupLayout(bindings);
      const module = this.device.createShaderModule({ code: source, label });
      const pipeline = this.device.createComputePipeline({
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: "main" },
        label,
      });
      this.compileMs += performance.now() - t0;
      this.compiled++;
      k = { pipeline, layout, bindings };
      this.pipelineCache.set(key, k);
    }
    return k;
  }

  private computePass(): GPUComputePassEncoder {
    if (!this.pass) {
      if (!this.encoder) this.encoder = this.device.createCommandEncoder();
      this.pass = this.encoder.beginComputePass();
    }
    return this.pass;
  }

  private endPass(): GPUCommandEncoder {
    if (this.pass) {
      this.pass.end();
      this.pass = null;
    }
    if (!this.encoder) this.encoder = this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Records one dispatch; `params` are copied into this batch's uniforms, or already are in a plan's buffer. */
  private dispatch(k: Kernel, buffers: GPUBuffer[], params: Uint32Array | null, groups: readonly [number, number, number], preset?: { buffer: GPUBuffer; offset: number }): void {
    if (groups[0] * groups[1] * groups[2] === 0) return;
    const slot = params ? slotBytes(params.byteLength) : 0;
    if (slot > PARAM_CAPACITY) throw new Error(`webgpu runtime: kernel parameters of ${params!.byteLength} bytes exceed ${PARAM_CAPACITY}`);
    if (params && !preset && this.paramUsed + slot > PARAM_CAPACITY) this.flush();
    const entries: GPUBindGroupEntry[] = new Array(k.bindings.length);
    for (let i = 0; i < buffers.length; i++) {
      entries[i] = { binding: i, resource: { buffer: buffers[i]! } };
      this.touched.add(buffers[i]!);
    }
    if (preset) {
      entries[buffers.length] = { binding: buffers.length, resource: { buffer: preset.buffer, offset: preset.offset, size: slot } };
    } else if (params) {
      const bytes = params.byteLength;
      this.paramHost.set(new Uint8Array(params.buffer, params.byteOffset, bytes), this.paramUsed);
      entries[buffers.length] = { binding: buffers.length, resource: { buffer: this.paramGpu, offset: this.paramUsed, size: slot } };
      this.paramUsed += slot;
    }
    const pass = this.computePass();
    pass.setPipeline(k.pipeline);
    pass.setBindGroup(0, this.device.createBindGroup({ layout: k.layout, entries }));
    pass.dispatchWorkgroups(groups[0], groups[1], groups[2]);
    if (++this.dispatches >= MAX_DISPATCHES_PER_SUBMIT) this.flush();
  }

  private copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    if (bytes === 0) return;
    this.endPass().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
    this.touched.add(src);
    this.touched.add(dst);
  }

  /** Uploads every run step's parameters into one uniform buffer, once. */
  private registerPlan(steps: PlanStep[]): Plan {
    const runs: PlanStep[] = [];
    const walk = (list: PlanStep[]) => {
      for (const st of list) {
        if (st.k === "run" && st.params) runs.push(st);
        else if (st.k === "while") (walk(st.cond), walk(st.body));
        else if (st.k === "cond") (walk(st.then), walk(st.else));
      }
    };
    walk(steps);
    const offsets = new Map<PlanStep, number>();
    let params: GPUBuffer | null = null;
    if (runs.length > 0) {
      let total = 0;
      for (const st of runs) total += slotBytes((st as Extract<PlanStep, { k: "run" }>).params!.byteLength);
      const host = new Uint8Array(total);
      let at = 0;
      for (const st of runs) {
        const p = (st as Extract<PlanStep, { k: "run" }>).params!;
        host.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
        offsets.set(st, at);
        at += slotBytes(p.byteLength);
      }
      params = this.device.createBuffer({ size: host.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: "plan params" });
      this.device.queue.writeBuffer(params, 0, host);
    }
    return { steps, params, offsets };
  }

  /** Records a plan's steps on `slots`; a promise when control flow must wait for a predicate. */
  private runPlan(id: number, slots: number[]): Promise<void> | null {
    const plan = this.plans.get(id);
    if (!plan) throw new Error(`webgpu runtime: plan ${id} was never recorded`);
    // (0: a slot no step uses, such as an empty stack's placeholder)
    return this.runSteps(plan, plan.steps, slots.map((s) => (s === 0 ? (null as unknown as GPUBuffer) : this.buffer(s))), 0);
  }

  private runSteps(plan: Plan, steps: PlanStep[], bufs: GPUBuffer[], from: number): Promise<void> | null {
    for (let i = from; i < steps.length; i++) {
      const st = steps[i]!;
      if (st.k === "run") {
        const off = plan.offsets.get(st);
        this.dispatch(this.kernel(st.kernel), st.slots.map((j) => bufs[j]!), st.params, st.groups, off !== undefined ? { buffer: plan.params!, offset: off } : undefined);
      } else if (st.k === "copy") {
        this.copy(bufs[st.src]!, st.srcOffset, bufs[st.dst]!, st.dstOffset, st.bytes);
      } else {
        return (async () => {
          await this.control(plan, st, bufs);
          await this.runSteps(plan, steps, bufs, i + 1);
        })();
      }
    }
    return null;
  }

  private async control(plan: Plan, st: Extract<PlanStep, { k: "while" | "cond" }>, bufs: GPUBuffer[]): Promise<void> {
    if (st.k === "cond") {
      const taken = (await this.readWord(bufs[st.pred]!)) !== 0;
      await this.runSteps(plan, taken ? st.then : st.else, bufs, 0);
      return;
    }
    const count = st.count;
    for (let it = 0; it < st.maxIterations; it++) {
      if (count !== null) {
        if (it >= count) break;
      } else {
        await this.runSteps(plan, st.cond, bufs, 0);
        if ((await this.readWord(bufs[st.pred]!)) === 0) break;
      }
      await this.runSteps(plan, st.body, bufs, 0);
      for (const [from, to, bytes] of st.carry) this.copy(bufs[from]!, 0, bufs[to]!, 0, bytes);
    }
  }

  /** The first word of a buffer (a loop's or branch's predicate), after everything recorded. */
  private async readWord(b: GPUBuffer): Promise<number> {
    this.predicateReads++;
    const staging = this.device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.endPass().copyBufferToBuffer(b, 0, staging, 0, 4);
    this.flush();
    await staging.mapAsync(GPUMapMode.READ);
    const v = new Uint32Array(staging.getMappedRange())[0]!;
    staging.destroy();
    return v;
  }

  /** Submits what is recorded (with the batch's parameters). */
  flush(): void {
    if (!this.encoder) return;
    if (this.pass) {
      this.pass.end();
      this.pass = null;
    }
    if (this.paramUsed > 0) this.device.queue.writeBuffer(this.paramGpu, 0, this.paramHost.buffer, 0, this.paramUsed);
    this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    this.dispatches = 0;
    this.paramUsed = 0;
    this.touched.clear();
    for (const b of this.destroyAfterSubmit.splice(0)) b.destroy();
  }

  /**
   * Copies `bytes` of buffer `id` back to the host (after everything recorded before it), followed by
   * the error words (ERROR_WORDS_BYTES, zeros when no error buffer is named).
   */
  async read(id: number, offset: number, bytes: number): Promise<ArrayBuffer> {
    const padded = Math.ceil(bytes / 4) * 4;
    const total = padded + ERROR_WORDS_BYTES;
    const size = sizeClass(total);
    const free = this.stagingPool.get(size);
    const staging = free?.pop() ?? this.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = this.endPass();
    if (bytes > 0) enc.copyBufferToBuffer(this.buffer(id), offset, staging, 0, padded);
    if (this.errorBuffer) enc.copyBufferToBuffer(this.buffer(this.errorBuffer), 0, staging, padded, ERROR_WORDS_BYTES);
    this.flush();
    try {
      await staging.mapAsync(GPUMapMode.READ, 0, size);
    } catch (e) {
      const errs = this.takeErrors();
      throw new Error(errs.length > 0 ? errs.join("; ") : `mapAsync failed: ${(e as Error).message}`);
    }
    const range = staging.getMappedRange(0, size);
    const out = new ArrayBuffer(bytes + ERROR_WORDS_BYTES);
    new Uint8Array(out).set(new Uint8Array(range, 0, bytes));
    new Uint8Array(out, bytes).set(this.errorBuffer ? new Uint8Array(range, padded, ERROR_WORDS_BYTES) : new Uint8Array(ERROR_WORDS_BYTES));
    staging.unmap();
    let list = this.stagingPool.get(size);
    if (!list) this.stagingPool.set(size, (list = []));
    if (list.length < 4) list.push(staging);
    else staging.destroy();
    const errs = this.takeErrors();
    if (errs.length > 0) throw new Error(errs.join("; "));
    return out;
  }

  /** Resolves when the GPU has finished everything submitted so far. */
  async finish(): Promise<void> {
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
  }

  destroy(): void {
    this.flush();
    for (const b of this.buffers.values()) b.destroy();
    for (const list of this.pool.values()) for (const b of list) b.destroy();
    this.buffers.clear();
    this.pool.clear();
    this.device.destroy();
  }
}
