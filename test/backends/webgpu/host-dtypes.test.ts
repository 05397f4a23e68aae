/**
 * The dtypes WGSL has no type for here (float16, int8, int16, uint16, uint32, uint64, with float64
 * and int64) on the webgpu device: tensors of them stay on the host, creating, moving and casting
 * them works, and an op computing with them raises a DtypeError naming the op, the dtype and the
 * device (never a computation in another dtype).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { gpuSkip, onGpu } from "../../util/webgpu.js";

const HOST: sc.DType[] = ["float16", "int8", "int16", "uint16", "uint32", "uint64", "float64", "int64"];

test("compute with a host dtype on the webgpu device is a DtypeError naming the op, the dtype and the device", { skip: gpuSkip }, () => {
  for (const d of HOST) {
    const x = sc.tensor([1, 2, 3], d).to("webgpu");
    assert.equal(x.device, "webgpu:0");
    assert.throws(
      () => onGpu(() => sc.add(x, x)).dataSync(),
      (e: unknown) => e instanceof sc.DtypeError && new RegExp(`\\badd\\b.*cannot compute with ${d} on the webgpu device`).test(e.message),
      d,
    );
  }
});

test("host dtypes are made, moved and cast on the webgpu device; the cast result computes on the GPU", { skip: gpuSkip }, () => {
  for (const d of HOST) {
    // (negative values where the dtype has them: a byte or word read back must keep its sign)
    const v = d.startsWith("uint") ? [1, 2, 3] : [-1, 2, -3.5];
    const x = sc.tensor(v, d).to("webgpu");
    const r = onGpu(() => x.reshape([3, 1]));
    assert.equal(r.device, "webgpu:0");
    const want = Array.from(sc.tensor(v, d).dataSync());
    assert.deepEqual(Array.from(r.dataSync()), want, d);
    const y = onGpu(() => sc.mul(sc.cast(r, d.startsWith("float") ? "float32" : "int32"), 2));
    assert.equal(y.device, "webgpu:0");
    assert.deepEqual(Array.from(y.dataSync()), want.map((a) => 2 * a), d);
    assert.deepEqual(Array.from(onGpu(() => sc.zeros([2], d)).dataSync()), [0, 0], d);
  }
});

test("gatherElements and scatterElements give webgpu tensors with the CPU's values, eager and staged", { skip: gpuSkip }, () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  const idx = sc.tensor([[2, 0], [1, 1]], "int32");
  const f = (a: sc.Tensor, i: sc.Tensor) => [sc.gatherElements(a, i, 1), sc.scatterElements(a, i, sc.onesLike(sc.gatherElements(a, i, 1)), 1, "add")];
  const want = f(x, idx).map((t) => Array.from(t.dataSync()));
  for (const run of [() => onGpu(() => f(x.to("webgpu"), idx.to("webgpu"))), () => onGpu(() => sc.stage(f)(x.to("webgpu"), idx.to("webgpu")) as sc.Tensor[])]) {
    const got = run();
    assert.deepEqual(got.map((t) => t.device), ["webgpu:0", "webgpu:0"]);
    assert.deepEqual(got.map((t) => Array.from(t.dataSync())), want);
  }
});
