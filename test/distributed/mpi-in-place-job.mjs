// One rank of the 2-process in-place all-reduce job test/distributed/mpi.test.ts launches
// (mpirun -np 2 node --import tsx this): MPI_IN_PLACE on hostBuffers = the out-of-place op, bit
// for bit, float32/float64/int32 x sum/mean/max, small and multi-fragment sizes; a Variable
// assigned; a tensor's storage refused and unchanged; DistributedOptimizer's fused in-place
// bucket = the unfused all-reduces, and = one process on the combined batches.
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.ts";
import { Rng } from "../util/rng.ts";

const { rank, size } = sc.distributed.init();
assert.equal(size, 2);
const rng = new Rng(290 + rank);
const same = (a, b, what) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`rank ${rank} ${what}[${i}]: ${a[i]} vs ${b[i]}`);
};
const arrays = {
  float32: (n) => Float32Array.from({ length: n }, () => rng.uniform(-1e3, 1e3)),
  float64: (n) => Float64Array.from({ length: n }, () => rng.uniform(-1e3, 1e3) * (1 + 1e-13 * rank)),
  int32: (n) => Int32Array.from({ length: n }, () => rng.int(-(2 ** 29), 2 ** 29)),
};
// (300000 float64 = 2.4 MB: past Open MPI's eager limit, a pipelined multi-fragment all-reduce)
for (const n of [1, 7, 300_000]) {
  for (const dtype of ["float32", "float64", "int32"]) {
    for (const reduce of ["sum", "mean", "max"]) {
      if (dtype === "int32" && reduce === "mean") continue;
      const host = sc.distributed.hostBuffer(dtype, n);
      host.set(arrays[dtype](n));
      const expected = sc.distributed.allReduce(sc.tensor(host, dtype, [n]), reduce).dataSync();
      assert.equal(sc.distributed.allReduceInPlace(host, reduce), host);
      same(host, expected, `${dtype} ${reduce} n=${n}`);
      // the same result on both ranks
      const both = sc.distributed.allGather(sc.tensor(host, dtype, [1, n])).dataSync();
      same(both.subarray(0, n), both.subarray(n), `${dtype} ${reduce} n=${n}: ranks differ`);
    }
  }
}
assert.throws(() => sc.distributed.allReduceInPlace(sc.distributed.hostBuffer("int32", 2), "mean"), sc.DtypeError);
// a Variable: assigned, old value untouched
const v = sc.variable(sc.tensor([rank + 1, -2 * rank], "float32"));
const old = v.read();
sc.distributed.allReduceInPlace(v, "sum");
same(v.dataSync(), [3, -2], "variable sum");
same(old.dataSync(), [rank + 1, -2 * rank], "the variable's old value");
// a tensor's storage is refused before any rank calls MPI (both refuse: no rank waits)
const t = sc.tensor([rank, rank + 0.5], "float32");
const view = sc.reshape(t, [2, 1]);
assert.throws(() => sc.distributed.allReduceInPlace(t.dataSync(), "sum"), (e) => e instanceof sc.ValueError && /hostBuffer/.test(e.message));
same(t.dataSync(), [rank, rank + 0.5], "refused tensor");
same(view.dataSync(), [rank, rank + 0.5], "its view");

// DistributedOptimizer: fused (one in-place bucket) = unfused (one op per gradient), bit for bit
const grads = [rng.tensor([4, 3], -1, 1, "float32"), rng.tensor([3], -1, 1, "float32"), rng.tensor([2, 2], -1, 1, "float32")];
const gradValues = grads.map((g) => Float32Array.from(g.dataSync()));
const before = sc.distributed.callCounts().allReduce;
const fused = sc.distributed.allReduceGradients(grads);
assert.equal(sc.distributed.callCounts().allReduce - before, 1, "one fused all-reduce");
const unfused = sc.distributed.allReduceGradients(grads, { fusionBytes: 0 });
fused.forEach((f, i) => same(f.dataSync(), unfused[i].dataSync(), `fused gradient ${i}`));
grads.forEach((g, i) => same(g.dataSync(), gradValues[i], `gradient ${i} unchanged`));

// eager data-parallel Adam on 2 ranks (fused bucket, in place) = one process on the combined batches
const X = sc.tensor([[1, 2, 3], [0.5, -1, 2], [2, 0, -1], [-1, 1, 0.25]], "float32");
const Y = sc.tensor([1, -2, 0.5, 3], "float32");
const lossOf = (w, b, x, y) => sc.mean(sc.square(sc.sub(sc.add(sc.matmul(x, sc.reshape(w, [3, 1])), b), sc.reshape(y, [-1, 1]))));
const wd = sc.variable(sc.tensor([0.1 * (rank + 1), -0.2, 0.3], "float32"));
const bd = sc.variable(sc.tensor([rank], "float32"));
sc.distributed.broadcastVariables([wd, bd]);
const ws = sc.variable(sc.tensor([0.1, -0.2, 0.3], "float32"));
const bs = sc.variable(sc.tensor([0], "float32"));
const dopt = sc.distributed.DistributedOptimizer(new sc.optim.Adam({ learningRate: 0.05 }));
const sopt = new sc.optim.Adam({ learningRate: 0.05 });
const xr = sc.slice(X, [2 * rank], [2 * rank + 2]);
const yr = sc.slice(Y, [2 * rank], [2 * rank + 2]);
const c0 = sc.distributed.callCounts().allReduce;
for (let i = 0; i < 5; i++) {
  dopt.minimize(() => lossOf(wd, bd, xr, yr), [wd, bd]);
  sopt.minimize(() => lossOf(ws, bs, X, Y), [ws, bs]);
}
assert.equal(sc.distributed.callCounts().allReduce - c0, 5, "one fused all-reduce per step");
// float32: (mean of 2 + mean of 2) / 2 against a mean of 4, a few ulps per step through Adam
const close = (a, b, what) => {
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= 1e-5 * Math.abs(b[i]) + 1e-6, `rank ${rank} ${what}[${i}]: ${a[i]} vs ${b[i]}`);
};
close(wd.dataSync(), ws.dataSync(), "w");
close(bd.dataSync(), bs.dataSync(), "b");
console.log(`rank ${rank} in-place ok`);
sc.distributed.finalize();
