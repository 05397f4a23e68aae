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
// staged, the collective as the last op
const f = sc.stage((t) => sc.distributed.allReduce(sc.mul(t, 2), "sum"));
assert.deepEqual([...f(x).dataSync()], [6, 60]);
// gradient of a sum all-reduce: eager tape = staged
const g = sc.grad((t) => sc.sum(sc.mul(sc.distributed.allReduce(t, "sum"), sc.tensor([1, 2], "float64"))));
const xg = sc.tensor([1, 2], "float64");
assert.deepEqual([...g(xg).dataSync()], [2, 4]);
console.log(`rank ${rank} ok`);
sc.distributed.finalize();
