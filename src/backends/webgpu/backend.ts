/**
 * The WebGPU backend (backends/backend.ts): tensors stay in GPU buffers, kernels are WGSL (kernels/),
 * elementwise ops and fused groups are rendered from their expressions (kernels/elementwise.ts).
 *
 * An op's entry for this backend (its `kernels.webgpu`, named in its declaration in src/ops;
 * op-kernels/types.ts) is a GPU kernel, or says the op's work is on the host (host calls, printing,
 * residual records, iteration stacks): then the op's CPU kernel runs on host copies of the inputs
 * and its outputs stay on the host until a GPU kernel needs them. An elementwise op declares none:
 * its expression is rendered (elementwiseKernel).
 *
 * Host dtypes (float64, int64 and the others of storage.ts hostDtype): an entry that declares
 * `wide` (creation, casts, views, records) runs its CPU kernel on the host for them; any other op
 * raises a DtypeError rather than computing them in another dtype.
 */
import { allocStorage, type DType, type TypedArray } from "../../core/dtype.js";
import { DtypeError, ValueError } from "../../core/errors.js";
import type { ElementwiseForm, ElementwiseGroup, ElementwiseStep } from "../../core/expr.js";
import { bindAttrs, exprKey, formFor, hasAttrs } from "../../core/expr.js";
import { Tensor } from "../../core/tensor.js";
import type { TensorType } from "../../core/tensor-type.js";
import type { Backend, GroupKernel } from "../backend.js";
import type { GpuDevice } from "./device.js";
import type { GpuArray } from "./kernels/common.js";
import { elementwise } from "./kernels/elementwise.js";
import { attach, GpuStorage, hostDtype, hostDtypeMessage, onGpu, TensorHold } from "./storage.js";
import type { WebGpuEntry } from "./op-kernels/types.js";

/** A host-memory kernel: the CPU backend's entry shape (backends/cpu/kernel.ts). */
export type HostKernel = (inputs: Tensor[], attrs: any, outs: TensorType[]) => TypedArray[];

export type { WebGpuEntry };

export interface WebGpuBackendOptions {
  /** The CPU kernel of an op (for entries that run on the host); the wiring gives it (backends know no ops). */
  cpuKernel: (op: string) => HostKernel | undefined;
  /** Called with each host kernel's output storage and the storage made of it (api/ uses it to carry run-time shapes). */
  onHostOutput?: (data: TypedArray, storage: GpuStorage) => void;
}

export class WebGpuBackend implements Backend<GpuStorage> {
  readonly kind = "webgpu";
  readonly devices: readonly { name: string; description: string }[];

  constructor(
    readonly dev: GpuDevice,
    private readonly options: WebGpuBackendOptions,
  ) {
    const info = dev.description.adapterInfo;
    const what = [info.description || info.device, info.vendor, info.architecture].filter(Boolean).join(", ");
    this.devices = [{ name: "webgpu:0", description: `WebGPU (${what || "adapter"}; ${dev.transport.thread === "worker" ? "device in a worker thread" : "device on this thread"})` }];
  }

  allocate(dtype: DType, size: number): GpuStorage {
    if (!onGpu(dtype)) return new GpuStorage(this.dev, 0, size, dtype, allocStorage(dtype, size));
    const id = this.dev.alloc(4 * size);
    this.dev.write(id, new Uint32Array(size));
    return new GpuStorage(this.dev, id, size, dtype, null);
  }

  upload(data: TypedArray, dtype: DType): GpuStorage {
    // One-element values (a JS number meeting a GPU tensor) are uploaded once and shared: storage is immutable.
    const key = data.length === 1 ? `${dtype}:${Object.is(data[0], -0) ? "-0" : data[0]}` : null;
    const cached = key !== null ? this.scalars.get(key) : undefined;
    if (cached) return cached;
    const s = new GpuStorage(this.dev, 0, data.length, dtype, data);
    if (onGpu(dtype)) s.buffer("upload");
    if (key !== null) {
      if (this.scalars.size >= 1024) {
        for (const c of this.scalars.values()) c.release();
        this.scalars.clear();
      }
      s.retain();
      this.scalars.set(key, s);
    }
    return s;
  }

  /** Uploaded one-element values, by dtype and value (each holds a reference). */
  private readonly scalars = new Map<string, GpuStorage>();

  tensor(storage: GpuStorage, shape: readonly number[], dtype: DType, device: string): Tensor {
    const t = new Tensor(null, shape as number[], dtype, device);
    attach(t, storage);
    return t;
  }

  /** The storage of a tensor of this device (made from its host data the first time, for tensors created on the host). */
  storage(t: Tensor): GpuStorage {
    const b = t._buffer;
    if (b instanceof TensorHold) return b.live("webgpu");
    const data = t.concrete();
    const s = new GpuStorage(this.dev, 0, data.length, t.dtype, data);
    attach(t, s);
    return s;
  }

  readSync(t: Tensor): TypedArray | null {
    return this.storage(t).readSync();
  }

  read(t: Tensor): Promise<TypedArray> {
    return this.storage(t).read();
  }

  run(kernel: unknown, inputs: Tensor[], attrs: unknown, outs: readonly TensorType[]): GpuStorage[] {
    const e = kernel as WebGpuEntry;
    const onHost = [...inputs.map((t) => t.dtype), ...outs.map((o) => o.dtype)].find(hostDtype);
    // (a one-element float64 or int64 value of host inputs, an optimizer's rate times its scale
    // say, is computed on the host in its own dtype: exact, and no read-back)
    if (e.host || (onHost && (e.wide || staysOnHost(inputs, outs)))) {
      const cpu = this.options.cpuKernel(e.op);
      if (!cpu) throw new ValueError(`op ${e.op} has no CPU kernel to run on the host`, e.op);
      return this.runOnHost(cpu, inputs, attrs, outs);
    }
    if (onHost) throw new DtypeError(hostDtypeMessage(onHost, e.op), e.op);
    if (staysOnHost(inputs, outs)) {
      const cpu = this.options.cpuKernel(e.op);
      if (cpu) return this.runOnHost(cpu, inputs, attrs, outs);
    }
    if (!e.gpu) throw new DtypeError(`op ${e.op} has no WebGPU kernel`, e.op);
    const arrays = inputs.map((t) => this.array(t, e.op));
    const results = e.gpu(this.dev, arrays, attrs, outs);
    return results.map((r, i) => this.adopt(r, outs[i]!, inputs, arrays));
  }

  /** A tensor of this backend as a kernel's input (uploading host data first). */
  array(t: Tensor, op: string): GpuArray {
    return { id: this.storage(t).buffer(op), shape: t.shape, dtype: t.dtype };
  }

  /** The storage of a kernel's output: an input's own storage for a view, else a new one. */
  private adopt(r: GpuArray, out: TensorType, inputs: Tensor[], arrays: GpuArray[]): GpuStorage {
    const k = arrays.findIndex((a) => a.id === r.id);
    if (k >= 0) return this.storage(inputs[k]!);
    return new GpuStorage(this.dev, r.id, sizeOf(out.shape.some((d) => d < 0) ? r.shape : out.shape), out.dtype, null);
  }

  private runOnHost(k: HostKernel, inputs: Tensor[], attrs: unknown, outs: readonly TensorType[]): GpuStorage[] {
    const host = inputs.map((t) => new Tensor(t.concrete(), t.shape as number[], t.dtype, "cpu:0"));
    return k(host, attrs, outs as TensorType[]).map((data, i) => {
      const s = new GpuStorage(this.dev, 0, data.length, outs[i]!.dtype, data);
      this.options.onHostOutput?.(data, s);
      return s;
    });
  }

  /** An elementwise op's kernel: its expression (for the output's dtype, attributes bound) rendered as WGSL. */
  elementwiseKernel(form: ElementwiseForm, op: string): WebGpuEntry {
    const withAttrs = hasAttrs(form.expr) || (form.f32 !== undefined && hasAttrs(form.f32));
    // (the expression for each output dtype and attribute values: WGSL is generated once per key)
    const steps = new Map<string, { step: ElementwiseStep; key: string }>();
    return {
      op,
      gpu: (dev, inputs, attrs, outs) => {
        const o = outs[0]!;
        const k = `${o.dtype}${withAttrs ? JSON.stringify(attrs) : ""}`;
        let s = steps.get(k);
        if (!s) {
          if (steps.size >= 256) steps.clear(); // (attribute values met so far: bounded)
          const expr = bindAttrs(formFor(form, o.dtype), (attrs ?? {}) as Record<string, unknown>);
          steps.set(k, (s = { step: { expr, args: [], dtype: o.dtype }, key: `${exprKey(expr)}:${o.dtype}` }));
        }
        return elementwise(dev, inputs, [{ ...s.step, args: inputs.map((_, i) => i) }], [0], o.shape, op, undefined, `${s.key}@${inputs.length}`);
      },
    };
  }

  groupKernel(group: ElementwiseGroup, inputs: readonly TensorType[], outShape: readonly number[]): GroupKernel<GpuStorage> {
    return (ins, outs) => {
      const arrays = ins.map((s, i) => ({ id: s.buffer("fusedElementwise"), shape: inputs[i]!.shape, dtype: inputs[i]!.dtype }));
      const into = outs.map((s, k) => ({ id: s.buffer("fusedElementwise"), shape: outShape, dtype: group.steps[group.outputs[k]!]!.dtype }));
      elementwise(this.dev, arrays, group.steps, group.outputs, outShape, "fusedElementwise", into);
    };
  }
}

/**
 * Whether an op computes a one-element integer, boolean or float64 value from inputs that are
 * all on the host: then its CPU kernel computes it there and the value stays on the host (as TensorFlow keeps
 * int32 tensors in host memory on GPU devices). Integer arithmetic is exact, so the bits are those
 * the GPU kernel would give; what it saves is a read-back: a step counter (an optimizer's
 * `iterations`) or a shape computed on the GPU would have to be read back for the float64 or int64
 * op that reads it next, and on a browser's main thread a synchronous read cannot be made at all.
 */
function staysOnHost(inputs: readonly Tensor[], outs: readonly TensorType[]): boolean {
  if (outs.length === 0) return false;
  for (const o of outs) {
    if (o.dtype === "float32" || o.shape.length > 0 && sizeOf(o.shape) !== 1) return false;
  }
  for (const t of inputs) {
    if (t._data !== null) continue;
    const b = t._buffer;
    if (!(b instanceof TensorHold) || b.released || b.storage.host === null) return false;
  }
  return true;
}

function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
