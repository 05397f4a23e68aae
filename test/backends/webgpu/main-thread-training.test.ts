// Training on a device that lives on this thread (a browser's case, where no synchronous read can
// be made): the optimizer's step counter and the float64 schedule around it must never need one.
// Before small integer values of host inputs stayed on the host, Adam's `iterations + 1` ran on the
// GPU and the next cast to float64 had to read it back: "dataSync: cannot read ... synchronously".
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { gpuSkip } from "../../util/webgpu.js";

const script = `
  import * as sc from "./src/api/index.ts";
  await sc.initWebGPU({ thread: "main" });
  const { nn } = sc;
  function run(device, staged) {
    const model = new nn.Sequential(new nn.Conv2d(4, 3, { seed: 1 }), new nn.ReLU(), new nn.Flatten(), new nn.Linear(3, { seed: 2 }));
    const opt = new sc.optim.Adam({ learningRate: 0.01 });
    const step = (m, o, x, y) => o.minimize(() => nn.softmaxCrossEntropy(m.call(x), y), () => m.parameters());
    const f = staged ? sc.stage(step) : step;
    const x = sc.random.uniform([4, 1, 6, 6], { seed: 3 });
    const y = sc.tensor(new Int32Array([0, 1, 2, 1]), "int32");
    const losses = [];
    for (let i = 0; i < 3; i++) losses.push(sc.device(device, () => f(model, opt, x, y)));
    return Promise.all(losses.map(async (l) => (await l.data())[0]));
  }
  const out = {};
  for (const staged of [false, true]) for (const d of ["cpu:0", "webgpu:0"]) out[(staged ? "staged " : "eager ") + d] = await run(d, staged);
  console.log(JSON.stringify(out));
`;

test("eager and staged Adam steps on a device on this thread need no synchronous read and match the CPU", { skip: gpuSkip, timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, number[]>;
  for (const mode of ["eager", "staged"]) {
    const cpu = out[`${mode} cpu:0`]!, gpu = out[`${mode} webgpu:0`]!;
    assert.equal(gpu.length, 3);
    assert.ok(cpu[2]! < cpu[0]!, `${mode}: the loss falls on the CPU: ${cpu}`);
    for (let i = 0; i < 3; i++) assert.ok(Math.abs(gpu[i]! - cpu[i]!) <= 1e-4 * Math.max(1, Math.abs(cpu[i]!)), `${mode} step ${i}: webgpu ${gpu[i]} vs cpu ${cpu[i]}`);
  }
});
