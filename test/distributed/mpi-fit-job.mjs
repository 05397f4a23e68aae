// One rank of the 2-process job test/distributed/mpi.test.ts launches for data-parallel `fit`,
// tensor fusion and chief-only writes (mpirun -np 2 node --import tsx this OUTDIR).
import assert from "node:assert/strict";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import * as sc from "../../src/api/index.ts";
import { Rng } from "../util/rng.ts";

const outDir = process.argv[2];
assert.ok(outDir, "usage: mpi-fit-job.mjs OUTDIR");
const { rank, size } = sc.distributed.init();
assert.equal(size, 2);
const { nn } = sc;
const calls = () => sc.distributed.callCounts();

// The same data on every rank (seeded): 32 rows, 4 features, 3 classes.
const rng = new Rng(29);
const X = rng.tensor([32, 4], -1, 1, "float32");
const Y = sc.tensor(Array.from({ length: 32 }, () => rng.int(0, 3)), "int32", [32]);
const model = (seed, build = true) => {
  const m = new nn.Sequential(new nn.Linear(8, { seed }), new nn.ReLU(), new nn.Linear(5, { seed: seed + 1 }), new nn.ReLU(), new nn.Linear(3, { seed: seed + 2 }));
  if (build) m.call(sc.zeros([1, 4]));
  return m;
};
const weights = (m) => m.parameters().map((v) => Float32Array.from(v.dataSync()));
const sgd = () => new sc.optim.SGD({ learningRate: 0.1, momentum: 0.9 });
const fitOptions = (data, optimizer) => ({ data, optimizer, loss: nn.softmaxCrossEntropy, epochs: 2, progress: "off", metrics: { accuracy: nn.accuracy, precision: new nn.Precision({ average: "macro" }) } });

// ---- 1. fit on 2 ranks (each its shard, batch 4) = one process on the combined batches (batch 8)
// Rank 1 builds its model from another seed: fit must start it from rank 0's weights.
const dm = model(10 + 100 * rank);
const dopt = sc.distributed.DistributedOptimizer(sgd());
// (before fit: the model's 6, the optimizer's iterations, learning rate and its scale; its slots come in step 1)
const startVariables = dm.variables().length + dopt.stateVariables().length;
assert.equal(startVariables, 9);
const before = calls();
const dist = sc.nn.fit(dm, fitOptions(sc.data.Dataset.fromTensorSlices([X, Y]).shard(2, rank).batch(4), dopt));
const after = calls();
// (shard(2, r) then batch(4): step k of rank r has rows 8k + 2j + r, so the two ranks' batches of
// step k together are rows 8k .. 8k+7, the single process's batch k)
const sm = model(10);
const single = sc.nn.fit(sm, fitOptions(sc.data.Dataset.fromTensorSlices([X, Y]).batch(8), sgd()));
// float32 tolerance: the 2-rank mean is (mean of 4 + mean of 4) / 2, the single one a mean of 8;
// the two orders of summation differ by a few ulps per step, carried through 8 momentum steps.
const close = (a, b, what) => {
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= 1e-5 * Math.abs(b[i]) + 1e-6, `rank ${rank} ${what}[${i}]: ${a[i]} vs ${b[i]}`);
};
const dw = weights(dm), sw = weights(sm);
assert.equal(dw.length, 6);
dw.forEach((w, i) => close(w, sw[i], `weight ${i}`));
// the epoch values are over both ranks' batches, as the single process's
assert.equal(dist.epochs.length, 2);
for (let e = 0; e < 2; e++) {
  for (const k of ["loss", "accuracy", "precision"]) close([dist.epochs[e][k]], [single.epochs[e][k]], `epoch ${e + 1} ${k}`);
}
// per-step logs are this rank's own batch: 4 steps per epoch
assert.equal(dist.steps.length, 8);
// every rank holds the same weights, bit for bit
for (const w of dw) {
  const both = sc.distributed.allGather(sc.reshape(sc.tensor(w, "float32", [w.length]), [1, w.length])).dataSync();
  for (let i = 0; i < w.length; i++) assert.ok(Object.is(both[i], both[w.length + i]), `rank 0 and rank 1 differ at ${i}: ${both[i]} vs ${both[w.length + i]}`);
}
// fit's collectives: the batch-count check, then per step one fused all-reduce of the 6 gradients
// (fit's step is staged: the fused all-reduce is in its graph), then per epoch the logs and the stop flag
assert.equal(after.allReduce - before.allReduce, 1 + 8 * 1 + 2 * 2, `all-reduces made by fit on rank ${rank}`);
assert.equal(after.broadcast - before.broadcast, startVariables, `broadcasts at the start of fit`);

// a model whose layers build on their first call: fit sets them to rank 0's after step 1
const lazy = model(40 + 100 * rank, false);
sc.nn.fit(lazy, { ...fitOptions(sc.data.Dataset.fromTensorSlices([X, Y]).shard(2, rank).batch(4), sc.distributed.DistributedOptimizer(sgd())), epochs: 1 });
for (const w of weights(lazy)) {
  const both = sc.distributed.allGather(sc.reshape(sc.tensor(w, "float32", [w.length]), [1, w.length])).dataSync();
  for (let i = 0; i < w.length; i++) assert.ok(Object.is(both[i], both[w.length + i]), `lazily built model: ranks differ at ${i}`);
}

// unequal shards (33 rows: 17 and 16 batches of 1): every rank gets the same error at the start, none hangs
const X33 = sc.concat([X, sc.slice(X, [0], [1])], 0);
const Y33 = sc.concat([Y, sc.slice(Y, [0], [1])], 0);
assert.throws(() => sc.nn.fit(model(70), { ...fitOptions(sc.data.Dataset.fromTensorSlices([X33, Y33]).shard(2, rank).batch(1), sc.distributed.DistributedOptimizer(sgd())), epochs: 1 }), (e) => e instanceof sc.distributed.DistributedError && /from 16 to 17/.test(e.message));

// a stop asked on one rank only stops both (else rank 0 would wait in the next step's all-reduce)
const stopped = sc.nn.fit(model(80), {
  ...fitOptions(sc.data.Dataset.fromTensorSlices([X, Y]).shard(2, rank).batch(4), sc.distributed.DistributedOptimizer(sgd())),
  callbacks: { onStepEnd: (step, _logs, control) => { if (rank === 1 && step === 3) control.stopTraining = true; } },
});
assert.equal(stopped.steps.length, 3, `rank ${rank} steps after a stop on rank 1`);

// ---- 2. tensor fusion: all-reduces per step, eager and staged; fused = unfused, bit for bit
const stepCalls = (opt, vars, staged) => {
  const xr = sc.slice(X, [16 * rank], [16 * rank + 16]);
  const yr = sc.slice(Y, [16 * rank], [16 * rank + 16]);
  const m = vars.model;
  const step = (x, y) => opt.minimize(() => nn.softmaxCrossEntropy(m.call(x), y), () => [...m.parameters(), ...vars.extra]);
  const run = staged ? sc.stage(step) : step;
  run(xr, yr); // (traces, when staged)
  const a = calls().allReduce;
  run(xr, yr);
  run(xr, yr);
  return (calls().allReduce - a) / 2;
};
const extraF64 = () => sc.variable(sc.tensor([0.5, -0.25], "float64"));
// a float64 variable in the loss too (its gradient goes in a bucket of its own dtype)
const withF64 = (m, v) => ({ model: { call: (x) => sc.add(m.call(x), sc.cast(sc.sum(v), "float32")), parameters: () => m.parameters() }, extra: [v] });
for (const staged of [false, true]) {
  const fused = model(90), unfused = model(90), split = model(90);
  assert.equal(stepCalls(sc.distributed.DistributedOptimizer(sgd()), { model: fused, extra: [] }, staged), 1, `6 float32 gradients in one bucket (staged ${staged})`);
  assert.equal(stepCalls(sc.distributed.DistributedOptimizer(sgd(), { fusionBytes: 0 }), { model: unfused, extra: [] }, staged), 6, `fusionBytes 0: one all-reduce per gradient (staged ${staged})`);
  // buckets of at most 200 bytes: [32+8 floats] > 200 bytes alone, then the 4 small ones fill 2 buckets
  // (Linear(8) kernel 32 floats = 128 B, bias 32 B; Linear(5) kernel 160 B, bias 20 B; Linear(3) kernel 60 B, bias 12 B)
  // -> [128+32], [160+20], [60+12]: 3 buckets
  assert.equal(stepCalls(sc.distributed.DistributedOptimizer(sgd(), { fusionBytes: 200 }), { model: split, extra: [] }, staged), 3, `fusionBytes 200: 3 buckets (staged ${staged})`);
  const fw = weights(fused), uw = weights(unfused), pw = weights(split);
  fw.forEach((w, i) => w.forEach((x, j) => {
    assert.ok(Object.is(x, uw[i][j]) && Object.is(x, pw[i][j]), `fused and unfused updates differ at weight ${i}[${j}] (staged ${staged})`);
  }));
  assert.equal(stepCalls(sc.distributed.DistributedOptimizer(sgd()), withF64(model(90), extraF64()), staged), 2, `float32 and float64 gradients: 2 buckets (staged ${staged})`);
}

// ---- 3. chief-only writes: a callback's file writes and saveOnChief happen on rank 0 only
const log = join(outDir, "epochs.log");
sc.nn.fit(model(60), {
  ...fitOptions(sc.data.Dataset.fromTensorSlices([X, Y]).shard(2, rank).batch(4), sc.distributed.DistributedOptimizer(sgd())),
  callbacks: [sc.distributed.chiefOnly({ onEpochEnd: (epoch, logs) => appendFileSync(log, `rank ${rank} epoch ${epoch} loss ${logs.loss}\n`) })],
});
const wrote = sc.distributed.saveOnChief(dm, join(outDir, `model-saved-by-rank${rank}.safetensors`));
assert.equal(wrote, rank === 0);
assert.equal(sc.distributed.isChief(), rank === 0);
sc.distributed.allReduce(sc.tensor([0], "float32"), "sum"); // (a barrier: rank 0 has written)
// rank 1 reads rank 0's checkpoint: the weights it holds itself
const back = model(500);
sc.io.restore(back, join(outDir, "model-saved-by-rank0.safetensors"));
weights(back).forEach((w, i) => w.forEach((x, j) => assert.ok(Object.is(x, dw[i][j]), `restored weight ${i}[${j}]`)));
assert.ok(!existsSync(join(outDir, "model-saved-by-rank1.safetensors")));

console.log(`rank ${rank} fit ok`);
sc.distributed.finalize();
