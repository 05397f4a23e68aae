// Backends as providers (backends/backend.ts): a backend whose memory is not host memory and
// whose values can only be awaited (as a GPU's) plugs in without touching any op. This test
// registers such a backend: its storage is a DeviceBuffer readable only asynchronously, and it
// runs elementwise ops by evaluating their expressions (core/expr.ts evaluateExpr, the reference
// semantics) rather than by any kernel the ops declare.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { expr, registerBackend, type Backend, type DeviceBuffer, type GroupKernel } from "../../src/api/internals.js";
import { allocStorage, type DType, type TypedArray } from "../../src/core/dtype.js";
import { sizeOf } from "../../src/core/shape.js";

/** Device memory of the test backend: values kept out of reach, read back only by awaiting. */
class FarBuffer implements DeviceBuffer {
  constructor(readonly values: TypedArray) {}
  read(): Promise<TypedArray> {
    return Promise.resolve(this.values.slice());
  }
  readSync(): TypedArray | null {
    return null;
  }
}

type FarKernel = (inputs: FarBuffer[], shapes: (readonly number[])[], attrs: Record<string, unknown>, outs: readonly sc.TensorType[]) => FarBuffer[];

const far = (t: sc.Tensor): FarBuffer => t._buffer as FarBuffer;
const runs: string[] = [];

/** Broadcast index of output element i into an input of `shape` (NumPy rules). */
function sourceIndex(i: number, outShape: readonly number[], shape: readonly number[]): number {
  let src = 0,
    stride = 1,
    rest = i;
  for (let d = outShape.length - 1, e = shape.length - 1; d >= 0; d--, e--) {
    const pos = rest % outShape[d]!;
    rest = Math.floor(rest / outShape[d]!);
    if (e >= 0) {
      if (shape[e] !== 1) src += pos * stride;
      stride *= shape[e]!;
    }
  }
  return src;
}

const farBackend: Backend<FarBuffer> = {
  kind: "far",
  devices: [{ name: "far:0", description: "a test device whose memory is read back asynchronously" }],
  allocate: (dtype: DType, size: number) => new FarBuffer(allocStorage(dtype, size)),
  upload: (data: TypedArray) => new FarBuffer(data.slice()),
  tensor(storage, shape, dtype, device) {
    const t = new sc.Tensor(null, shape, dtype, device);
    t._buffer = storage;
    return t;
  },
  storage: far,
  readSync: () => null,
  read: (t) => far(t).read(),
  run(kernel, inputs, attrs, outs) {
    return (kernel as FarKernel)(inputs.map(far), inputs.map((t) => t.shape), (attrs ?? {}) as Record<string, unknown>, outs);
  },
  elementwiseKernel(form) {
    const kernel: FarKernel = (inputs, shapes, attrs, outs) => {
      const o = outs[0]!;
      runs.push("elementwise");
      const e = expr.bindAttrs(expr.formFor(form, o.dtype), attrs);
      const out = allocStorage(o.dtype, sizeOf(o.shape));
      for (let i = 0; i < out.length; i++) out[i] = Number(expr.evaluateExpr(e, inputs.map((b, k) => b.values[sourceIndex(i, o.shape, shapes[k]!)]!)));
      return [new FarBuffer(out)];
    };
    return kernel;
  },
  groupKernel(): GroupKernel<FarBuffer> {
    throw new Error("the test backend computes no fused groups");
  },
};
registerBackend(farBackend);

test("ops run on a backend with device memory and asynchronous read-back, through their expressions", async () => {
  const a = sc.tensor([1, -2, 3, -4], "float32", [2, 2]);
  const b = sc.tensor([0.5, 2], "float32");
  runs.length = 0;
  const y = sc.device("far", () => sc.relu(sc.mul(a, b)).add(1));
  assert.equal(y.device, "far:0");
  assert.deepEqual(runs, ["elementwise", "elementwise", "elementwise"], "the backend rendered each op itself");
  assert.equal(y.isSymbolic, false);
  assert.deepEqual(Array.from(await y.data()), [1.5, 1, 2.5, 1]);
  assert.deepEqual(y.shape, [2, 2]);
  // the ops' own kernels are the CPU's; the same program on the CPU agrees
  assert.deepEqual(Array.from(await sc.relu(sc.mul(a, b)).add(1).data()), [1.5, 1, 2.5, 1]);
});

test("synchronous reads of device memory fail with a clear error; awaiting works; mixing devices copies", async () => {
  const x = sc.device("far:0", () => sc.neg(sc.tensor([1, 2])));
  assert.throws(() => x.dataSync(), (e: Error) => e instanceof sc.ValueError && /far:0/.test(e.message) && /await tensor\.data\(\)/.test(e.message));
  assert.throws(() => x.arraySync(), /await tensor\.data\(\)/);
  assert.throws(() => sc.add(x, 1), (e: Error) => e instanceof sc.ValueError && /move to cpu:0/.test(e.message), "a CPU op cannot take device memory without awaiting it");
  // a CPU tensor used on the device is uploaded there; the CPU tensor stays where it is
  const c = sc.tensor([10, 20]);
  const z = sc.device("far", () => sc.add(x, c));
  assert.equal(c.device, "cpu:0");
  assert.deepEqual(Array.from(await z.data()), [9, 18]);
  // back to the CPU: read, then make a tensor of the values
  assert.deepEqual(sc.tensor(await z.data()).add(1).arraySync(), [10, 19]);
});

test("an op without a kernel for a backend, and not elementwise, says so", () => {
  const m = sc.tensor([[1, 2], [3, 4]]);
  assert.throws(() => sc.device("far", () => sc.matmul(m, m)), (e: Error) => e instanceof sc.ValueError && /matmul has no kernel for the far backend/.test(e.message));
  assert.deepEqual(sc.listDevices().map((d) => d.name), ["cpu:0", "far:0"]);
});
