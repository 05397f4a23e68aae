/**
 * The WebGPU backend (backends/backend.ts): tensors stay in GPU buffers, kernels are WGSL (kernels/),
 * elementwise ops and fused groups are rendered from their expressions (kernels/elementwise.ts).
 *
 * An op's entry for this backend (its `kernels.webgpu`, installed by api/ wiring from
 * op-kernels/index.ts) is a WebGpuEntry: a GPU kernel, or a host kernel for ops whose work is on
 * the host (host calls, printing, residual records, iteration stacks), which runs the CPU kernel on
 * host copies of the inputs and keeps its outputs on the host until a GPU kernel needs them.
 *
 * float64/int64: an entry that declares `wide` (creation, casts, views, records) runs its CPU
 * kernel on the host for them; any other op raises a DtypeError rather than computing in float32.
 */
import type { DType, TypedArray } from "../../core/dtype.js";
import { DtypeError } from "../../core/errors.js";
import type { ElementwiseForm, ElementwiseGroup, ElementwiseStep } from "../../core/expr.js";
import { formFor } from "../../core/expr.js";
import { Tensor } from "../../core/tensor.js";
import type { TensorType } from "../../core/tensor-type.js";
import type { Backend, GroupKernel } from "../backend.js";
import type { GpuDevice } from "./device.js";
import type { GpuArray } from "./kernels/common.js";
import { elementwise } from "./kernels/elementwise.js";
import { attach, GpuStorage, onGpu, TensorHold } from "./storage.js";
import type { WebGpuKernel } from "./op-kernels/types.js";

/** A host-memory kernel: the CPU backend's entry shape (backends/cpu/kernel.ts). */
type HostKernel = (inputs: Tensor[], attrs: any, outs: TensorType[]) => TypedArray[];

export interface WebGpuEntry {
  /** The op's name (for errors). */
  readonly op: string;
  /** The GPU kernel. */
  readonly gpu?: WebGpuKernel;
  /** Runs on the host instead (the op's CPU kernel), always. */
  readonly host?: HostKernel;
  /** Runs on the host when an input or output is float64/int64 (which have no GPU form). */
  readonly wide?: HostKernel;
}

const WIDE = new Set<DType>(["float64", "int64"]);

export interface WebGpuBackendOptions {
  /** Called with each host kernel's output storage and the storage made of it (api/ uses it to carry run-time shapes). */
  onHostOutput?: (data: TypedArray, storage: GpuStorage) => void;
}

export class WebGpuBackend implements Backend<GpuStorage> {
  readonly kind = "webgpu";
  readonly devices: readonly { name: string; description: string }[];

  constructor(
    readonly dev: GpuDevice,
    private readonly options: WebGpuBackendOptions = {},
  ) {
    const info = dev.description.adapterInfo;
    const what = [info.description || info.device, info.vendor, info.architecture].filter(Boolean).join(", ");
    this.devices = [{ name: "webgpu:0", description: `WebGPU (${what || "adapter"}; ${dev.transport.thread === "worker" ? "device in a worker thread" : "device on this thread"})` }];
  }

  allocate(dtype: DType, size: number): GpuStorage {
    if (!onGpu(dtype)) return new GpuStorage(this.dev, 0, size, dtype, new Float64Array(size));
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
    const wide = inputs.some((t) => WIDE.has(t.dtype)) || outs.some((o) => WIDE.has(o.dtype));
    if (e.host || (wide && e.wide)) return this.runOnHost((e.host ?? e.wide)!, inputs, attrs, outs);
    if (wide) {
      const d = [...inputs.map((t) => t.dtype), ...outs.map((o) => o.dtype)].find((x) => WIDE.has(x))!;
      throw new DtypeError(
        `${d} has no WGSL type, so ${e.op} cannot run on the webgpu device (it never computes ${d} in float32); cast to ${d === "float64" ? "float32" : "int32"} first, or run it on the CPU (sc.device("cpu", ...) or x.to("cpu"))`,
        e.op,
      );
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

  elementwiseKernel(form: ElementwiseForm): WebGpuEntry {
    return {
      op: "elementwise",
      gpu: (dev, inputs, _attrs, outs) => {
        const o = outs[0]!;
        const step: ElementwiseStep = { expr: formFor(form, o.dtype), args: inputs.map((_, i) => i), dtype: o.dtype };
        return elementwise(dev, inputs, [step], [0], o.shape, "elementwise");
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

function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
