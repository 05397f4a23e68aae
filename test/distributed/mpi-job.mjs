// One rank of the 2-process job test/distributed/mpi.test.ts launches (mpirun -np 2 node --import tsx this).
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.ts";
const { rank, size } = sc.distributed.init();
assert.equal(size, 2);
const x = sc.tensor([rank + 1, 10 * (rank + 1)], "float32");
assert.deepEqual([...sc.distributed.allReduce(x, "sum").dataSync()], [3, 30]);
assert.deepEqual([...sc.distributed.allReduce(x, "mean").dataSync()], [1.5, 15]);
assert.deepEqual([...sc.distributed.allReduce(sc.tensor([rank], "int32"), "max").dataSync()], [1]);
assert.deepEqual([...sc.distributed.broadcast(sc.tensor([rank + 5], "float64"), 1).dataSync()], [6]);
assert.deepEqual([...sc.distributed.allGather(sc.tensor([[rank, rank]], "float32")).dataSync()], [0, 0, 1, 1]);
// float64 and int32 carry their own values (none rounded through float32): float64 digits past
// float32's, int32 past 2^24
const f64 = sc.tensor([1 + 1e-12 * (rank + 1), -2.5e-300, rank === 0 ? 1e15 : 3], "float64");
assert.deepEqual([...sc.distributed.allReduce(f64, "sum").dataSync()], [(1 + 1e-12) + (1 + 2e-12), -5e-300, 1e15 + 3]);
assert.deepEqual([...sc.distributed.allReduce(f64, "mean").dataSync()], [((1 + 1e-12) + (1 + 2e-12)) / 2, -2.5e-300, (1e15 + 3) / 2]);
assert.deepEqual([...sc.distributed.allReduce(f64, "max").dataSync()], [1 + 2e-12, -2.5e-300, 1e15]);
assert.equal(sc.distributed.allReduce(f64, "sum").dtype, "float64");
const i32 = sc.tensor([(1 << 24) + 1 + rank, -7 * (rank + 1), rank === 0 ? 2 ** 30 : 5], "int32");
assert.deepEqual([...sc.distributed.allReduce(i32, "sum").dataSync()], [2 * (1 << 24) + 3, -21, 2 ** 30 + 5]);
assert.deepEqual([...sc.distributed.allReduce(i32, "max").dataSync()], [(1 << 24) + 2, -7, 2 ** 30]);
const i32b = sc.distributed.broadcast(sc.tensor([[(1 << 24) + 1 + rank, rank]], "int32"), 1);
assert.equal(i32b.dtype, "int32");
assert.deepEqual([...i32b.dataSync()], [(1 << 24) + 2, 1]);
assert.deepEqual([...sc.distributed.broadcast(f64, 0).dataSync()], [1 + 1e-12, -2.5e-300, 1e15]);
assert.deepEqual([...sc.distributed.broadcast(sc.tensor([0.1 * (rank + 1)], "float32"), 1).dataSync()], [Math.fround(0.2)]);
const g64 = sc.distributed.allGather(sc.reshape(f64, [1, 3]));
assert.deepEqual(g64.shape, [2, 3]);
assert.deepEqual([...g64.dataSync()], [1 + 1e-12, -2.5e-300, 1e15, 1 + 2e-12, -2.5e-300, 3]);
const g32 = sc.distributed.allGather(sc.tensor([(1 << 24) + 1 + rank, -rank], "int32"));
assert.equal(g32.dtype, "int32");
assert.deepEqual([...g32.dataSync()], [(1 << 24) + 1, 0, (1 << 24) + 2, -1]);
assert.deepEqual([...sc.distributed.allReduce(sc.tensor([rank - 0.5, -2 * rank - 1], "float32"), "max").dataSync()], [0.5, -1]);
// staged, the collective as the last op
const f = sc.stage((t) => sc.distributed.allReduce(sc.mul(t, 2), "sum"));
assert.deepEqual([...f(x).dataSync()], [6, 60]);
// gradient of a sum all-reduce: eager tape = staged
const g = sc.grad((t) => sc.sum(sc.mul(sc.distributed.allReduce(t, "sum"), sc.tensor([1, 2], "float64"))));
const xg = sc.tensor([1, 2], "float64");
assert.deepEqual([...g(xg).dataSync()], [2, 4]);
// data-parallel SGD on 2 ranks = one process on the combined batches (float32, rtol 1e-6)
const X = sc.tensor([[1, 2, 3], [0.5, -1, 2], [2, 0, -1], [-1, 1, 0.25]], "float32");
const Y = sc.tensor([1, -2, 0.5, 3], "float32");
const lossOf = (w, x, y) => sc.mean(sc.square(sc.sub(sc.matmul(x, sc.reshape(w, [3, 1])), sc.reshape(y, [-1, 1]))));
const wd = sc.variable(sc.tensor([0.1 * (rank + 1), -0.2, 0.3], "float32"));
sc.distributed.broadcastVariables([wd]);
const ws = sc.variable(sc.tensor([0.1, -0.2, 0.3], "float32"));
const dopt = sc.distributed.DistributedOptimizer(new sc.optim.SGD({ learningRate: 0.05 }), { fusionBytes: 0 });
const sopt = new sc.optim.SGD({ learningRate: 0.05 });
const xr = sc.slice(X, [2 * rank], [2 * rank + 2]);
const yr = sc.slice(Y, [2 * rank], [2 * rank + 2]);
for (let i = 0; i < 5; i++) {
  dopt.minimize(() => lossOf(wd, xr, yr), [wd]);
  sopt.minimize(() => lossOf(ws, X, Y), [ws]);
}
const a = wd.dataSync(), b = ws.dataSync();
for (let i = 0; i < 3; i++) assert.ok(Math.abs(a[i] - b[i]) <= 1e-6 * Math.abs(b[i]) + 1e-7, `rank ${rank} weight ${i}: ${a[i]} vs ${b[i]}`);
assert.equal(Number(dopt.iterations.dataSync()[0]), 5);
console.log(`rank ${rank} ok`);
sc.distributed.finalize();
