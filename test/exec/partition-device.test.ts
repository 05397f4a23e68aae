/**
 * The "auto" engine on WebGPU tensors: onnxruntime's segments run on the host, so a call whose
 * tensors are on the GPU stays on our executor (partition/gate.ts), even with the plan forced:
 * its results stay on the device and equal our executor's.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autoStats, setAutoPolicy } from "../../src/onnx/partition/auto.js";
import { gpuSkip, onGpu } from "../util/webgpu.js";

// (a graph the cut would send to onnxruntime: above the size threshold, 5 nodes)
const body = (x: sc.Tensor) => x.mul(x).tanh().add(1).mul(0.5).sub(0.25);

test("auto keeps a call on WebGPU tensors on our executor, the plan forced: results on the device, equal to ours", { skip: gpuSkip }, () => {
  const policy = setAutoPolicy({ choice: "plan", warmCalls: 0 });
  // (the suite's runner turns the determinism switch on, which would keep auto on ours anyway)
  const deterministic = sc.config.setDeterministic(false);
  try {
    const auto = sc.stage(body, { autograph: false, engine: "auto" });
    const ours = sc.stage(body, { autograph: false, engine: "stagecraft" });
    const x = sc.tensor(Array.from({ length: 128 * 128 }, (_, i) => Math.sin(i * 0.37)), "float32", [128, 128]).to("webgpu");
    assert.ok(x.device.startsWith("webgpu"));
    const plans = autoStats.plans;
    const want = Array.from(onGpu(() => ours(x)).dataSync());
    for (let call = 0; call < 3; call++) {
      const got = onGpu(() => auto(x));
      assert.ok(got.device.startsWith("webgpu"), `call ${call}: the result is on ${got.device}`);
      assert.deepEqual(Array.from(got.dataSync()), want, `call ${call}: values`);
    }
    assert.equal(autoStats.plans, plans, "no partitioned plan for a graph on the GPU");
  } finally {
    sc.config.setDeterministic(deterministic);
    setAutoPolicy(policy);
  }
});
