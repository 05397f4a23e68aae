/**
 * Gradients with respect to tensors that live in host memory when the loss is computed on the GPU.
 * The eager handler copies such an input to the device; the tape must record the op against the
 * caller's tensor, not that copy, or the path from the source is cut and the gradient is silently
 * zero (it was, before the handler kept its copies to itself).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { gpuSkip, onGpu } from "../../util/webgpu.js";

function close(gpu: sc.Tensor, cpu: sc.Tensor, what: string): void {
  assert.deepEqual(gpu.shape, cpu.shape, `${what}: shape`);
  const a = gpu.dataSync(), b = cpu.dataSync();
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) <= 1e-5 * Math.max(1, Math.abs(b[i]!)), `${what}: element ${i} is ${a[i]} on the GPU, ${b[i]} on the CPU`);
  assert.ok(b.some((v) => v !== 0), `${what}: the CPU gradient is not all zeros (the check can fail)`);
}

const loss = (x: sc.Tensor, w: sc.Tensor) => sc.sum(sc.mul(sc.exp(sc.mul(x, w)), w));

test("tape and graph AD: the gradient of a GPU loss with respect to host tensors equals the CPU's", { skip: gpuSkip }, () => {
  const x = sc.tensor([0.1, -0.4, 0.3, 0.2]); // host memory (made outside any device scope)
  const w = sc.tensor([1.5, 0.5, -1, 2]);
  const cpu = sc.grad(loss, { argnums: "all" })(x, w) as sc.Tensor[];
  const eager = onGpu(() => sc.grad(loss, { argnums: "all" })(x, w) as sc.Tensor[]);
  const staged = onGpu(() => sc.grad(sc.stage(loss, { autograph: false }), { argnums: "all" })(x, w) as sc.Tensor[]);
  for (const [name, g] of [["tape", eager], ["graph AD", staged]] as const) {
    assert.equal(g[0]!.device, "webgpu:0", `${name}: the gradient is computed on the GPU`);
    g.forEach((gi, i) => close(gi, cpu[i]!, `${name}, input ${i}`));
  }
});

test("a model made in host memory trains under sc.device('webgpu'): its variables' gradients are the CPU's", { skip: gpuSkip }, () => {
  const make = () => new sc.nn.Linear(3, { seed: 4 });
  const x = sc.tensor([[0.5, -1, 2, 0.25], [1, 0, -0.5, 0.75]]);
  const grads = (m: sc.nn.Linear) => {
    const tape = new sc.GradientTape();
    const l = tape.record(() => sc.sum(sc.square(m.call(x))));
    return tape.gradient(l, m.parameters()) as sc.Tensor[];
  };
  const cpuModel = make(), gpuModel = make();
  const cpu = grads(cpuModel);
  const gpu = onGpu(() => grads(gpuModel));
  gpu.forEach((g, i) => close(g, cpu[i]!, `variable ${i}`));
});
