/**
 * The gradient sweep on the WebGPU backend: for every gradient case (test/util/grad-cases, inputs cast
 * to float32), the tape's gradient on the GPU and the graph-AD gradient of the staged loss on the
 * GPU both match the tape's float32 gradient on the CPU. (The float64 finite-difference checks run
 * on the CPU, in test/grad/sweep.test.ts: float64 has no GPU form.) Second-order cases also
 * compare the gradient of a gradient.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { Rng } from "../../util/rng.js";
import { allCases } from "../../util/grad-cases/index.js";
import { gpuSkip, onGpu } from "../../util/webgpu.js";

/** Gradients compose several ops' float32 roundings: a looser tolerance than single ops. */
const ATOL = 1e-4;
const RTOL = 1e-4;

function close(gpu: sc.Tensor, cpu: sc.Tensor, what: string): void {
  assert.deepEqual(gpu.shape, cpu.shape, `${what}: shape`);
  const a = gpu.dataSync(),
    b = cpu.dataSync();
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y))) continue;
    if (Number.isFinite(y) && Math.abs(x - y) <= ATOL + RTOL * Math.abs(y)) continue;
    assert.fail(`${what}: element ${i} is ${x} on the GPU but ${y} on the CPU`);
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const needs64: string[] = [];
const writtenFor64: string[] = [];

for (const c of allCases) {
  const name = `${c.op}${c.label ? ` (${c.label})` : ""}`;
  test(`webgpu gradient: ${name}`, { skip: gpuSkip }, () => {
    const rng = new Rng(hash(name));
    const xs = c.inputs(rng).map((x) => (x.dtype === "float64" ? sc.cast(x, "float32") : x));
    const argnums = "all" as const;
    let cpu: sc.Tensor[];
    let loss: (...a: sc.Tensor[]) => sc.Tensor;
    try {
      const w = rng.tensor(c.fn(...xs).shape as number[], 0.5, 1.5, "float32");
      loss = (...a: sc.Tensor[]) => sc.sum(sc.mul(c.fn(...a), w));
      cpu = sc.grad(loss, { argnums })(...xs) as sc.Tensor[];
      cpu.forEach((g) => g.dataSync());
    } catch (e) {
      if (e instanceof sc.DtypeError) {
        writtenFor64.push(name); // (a case written for float64 only, e.g. a host call's float64 spec)
        return;
      }
      throw e;
    }
    const gx = xs.map((x) => x.to("webgpu"));
    try {
      const eager = onGpu(() => sc.grad(loss, { argnums })(...gx) as sc.Tensor[]);
      eager.forEach((g, i) => close(g, cpu[i]!, `${name}: tape gradient of input ${i}`));
      const staged = onGpu(() => sc.grad(sc.stage(loss, { autograph: false }), { argnums })(...gx) as sc.Tensor[]);
      staged.forEach((g, i) => close(g, cpu[i]!, `${name}: staged (graph AD) gradient of input ${i}`));
      if (c.secondOrder) {
        const v = xs.map((x) => rng.tensor(x.shape as number[], 0.5, 1.5, "float32"));
        const gradDotV = (...ys: sc.Tensor[]) => {
          const g = sc.grad(loss, { argnums })(...ys) as sc.Tensor[];
          return g.map((gi, i) => sc.sum(sc.mul(gi, v[i]!))).reduce((p, q) => sc.add(p, q));
        };
        const cpu2 = sc.grad(gradDotV, { argnums })(...xs) as sc.Tensor[];
        const gpu2 = onGpu(() => sc.grad(gradDotV, { argnums })(...gx) as sc.Tensor[]);
        gpu2.forEach((g, i) => close(g, cpu2[i]!, `${name}: second-order gradient of input ${i}`));
      }
    } catch (e) {
      if (e instanceof sc.DtypeError && /cannot compute with (float64|int64|uint64|float16|int8|int16|uint16|uint32) on the webgpu device/.test(e.message)) {
        needs64.push(name);
        return;
      }
      throw e;
    }
  });
}

test("gradient cases that compute in a host dtype (float64, int64, float16, int8, ...) are refused on the GPU", { skip: gpuSkip }, (t) => {
  t.diagnostic(`${needs64.length} cases raised the host-dtype DtypeError: ${needs64.join("; ")}`);
  t.diagnostic(`${writtenFor64.length} cases run only in float64 (not compared): ${writtenFor64.join("; ")}`);
  assert.ok(needs64.length < allCases.length / 4, "most gradient cases run on the GPU");
});
