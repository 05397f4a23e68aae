// The distributed layer without a launcher: fit with a DistributedOptimizer in a job of one
// process ("single") is fit with the plain optimizer; a registered provider (a test double that
// says it is rank 1 of 2) shows chief-only writes skipped; provider registration errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { nn } = sc;
const rng = new Rng(7);
const X = rng.tensor([24, 3], -1, 1, "float32");
const Y = sc.tensor(Array.from({ length: 24 }, () => rng.int(0, 2)), "int32", [24]);
const model = () => {
  const m = new nn.Sequential(new nn.Linear(4, { seed: 3 }), new nn.ReLU(), new nn.Linear(2, { seed: 4 }));
  m.call(sc.zeros([1, 3]));
  return m;
};
const options = (optimizer: sc.optim.Optimizer) => ({
  data: sc.data.Dataset.fromTensorSlices([X, Y]).batch(6),
  optimizer,
  loss: nn.softmaxCrossEntropy,
  epochs: 2,
  progress: "off" as const,
  metrics: { accuracy: nn.accuracy, recall: new nn.Recall({ average: "macro" }) },
});

test("fit with a DistributedOptimizer and no job joined: a DistributedError naming fit", () => {
  assert.throws(() => nn.fit(model(), options(sc.distributed.DistributedOptimizer(new sc.optim.SGD({ learningRate: 0.1 })))), (e: unknown) => e instanceof sc.distributed.DistributedError && /fit/.test(String((e as Error).message)) && /init\(\)/.test((e as Error).message));
});

test("a job of one process: fit with a DistributedOptimizer = fit with the optimizer, bit for bit; its collectives counted", () => {
  sc.distributed.init({ provider: "single" });
  try {
    const a = model(), b = model();
    const before = sc.distributed.callCounts();
    const ha = nn.fit(a, options(sc.distributed.DistributedOptimizer(new sc.optim.Adam({ learningRate: 0.05 }))));
    const after = sc.distributed.callCounts();
    const hb = nn.fit(b, options(new sc.optim.Adam({ learningRate: 0.05 })));
    a.parameters().forEach((v, i) => assert.deepEqual([...v.dataSync()], [...b.parameters()[i]!.dataSync()], `weight ${i}`));
    assert.deepEqual(ha.epochs, hb.epochs);
    assert.deepEqual(ha.steps, hb.steps);
    // the batch-count check, one fused gradient all-reduce per step (4 steps x 2 epochs), per epoch the logs and the stop flag
    assert.equal(after.allReduce - before.allReduce, 1 + 8 + 2 * 2);
    // rank 0's weights at the start: the model's 4 variables, the optimizer's iterations, learning rate and its scale
    assert.equal(after.broadcast - before.broadcast, 7);
    // the plain optimizer made none
    assert.equal(sc.distributed.callCounts().allReduce, after.allReduce);
  } finally {
    sc.distributed.finalize();
  }
});

test("a provider registered by name; on a rank other than 0 chiefOnly hooks and saveOnChief do nothing", () => {
  const copy: sc.distributed.CollectiveProvider = {
    name: "test-rank-1-of-2",
    rank: 1,
    size: 2,
    // (a double: as if the other rank sent the same values)
    allReduce(send, recv, _dtype, reduce) {
      for (let i = 0; i < send.length; i++) recv[i] = reduce === "sum" ? 2 * send[i]! : send[i]!;
    },
    broadcast() {},
    allGather(send, recv) {
      recv.set(send, 0);
      recv.set(send, send.length);
    },
  };
  sc.distributed.registerProvider("test-rank-1-of-2", () => copy);
  assert.throws(() => sc.distributed.registerProvider("test-rank-1-of-2", () => copy), /already registered/);
  assert.throws(() => sc.distributed.registerProvider("", () => copy), sc.ValueError);
  assert.throws(() => sc.distributed.init({ provider: "nccl" }), /test-rank-1-of-2/);
  const dir = mkdtempSync(join(tmpdir(), "sc-chief-"));
  const job = sc.distributed.init({ provider: "test-rank-1-of-2" });
  try {
    assert.deepEqual(job, { rank: 1, size: 2, provider: "test-rank-1-of-2" });
    assert.equal(sc.distributed.isChief(), false);
    // (no call counts from this provider: zeros)
    assert.deepEqual(sc.distributed.callCounts(), { allReduce: 0, broadcast: 0, allGather: 0, elements: 0 });
    const seen: string[] = [];
    const always = { onEpochEnd: (e: number) => seen.push(`always ${e}`) };
    const chief = sc.distributed.chiefOnly({ onEpochEnd: (e: number) => seen.push(`chief ${e}`), onTrainEnd: () => seen.push("chief end") });
    const m = model();
    const h = nn.fit(m, { ...options(sc.distributed.DistributedOptimizer(new sc.optim.SGD({ learningRate: 0.1 }))), callbacks: [chief, always] });
    assert.deepEqual(seen, ["always 1", "always 2"]);
    // (the double's sum doubles the totals and the weights alike: the epoch mean is this rank's)
    assert.ok(Math.abs(h.epochs[0]!.loss! - h.steps.slice(0, 4).reduce((s, l) => s + l.loss!, 0) / 4) < 1e-6);
    assert.equal(sc.distributed.saveOnChief(m, join(dir, "m.safetensors")), false);
    assert.ok(!existsSync(join(dir, "m.safetensors")));
  } finally {
    sc.distributed.finalize();
    rmSync(dir, { recursive: true, force: true });
  }
  // out of a job, a program is its own chief: the hooks run and the file is written
  const seen: string[] = [];
  sc.distributed.chiefOnly({ onEpochEnd: (e: number) => seen.push(`chief ${e}`) }).onEpochEnd!(1, {}, { model: model(), optimizer: new sc.optim.SGD(), stopTraining: false });
  assert.deepEqual(seen, ["chief 1"]);
  assert.throws(() => sc.distributed.chiefOnly({ onEpochEnd: 3 } as never), sc.ValueError);
  assert.throws(() => sc.distributed.chiefOnly({ onEpochEnds: () => {} } as never), /onEpochEnds/);
});
