// Remote workers (src/remote/): the overhead of a remote call of a tiny staged function on a
// loopback worker process against the same call made locally; the per-op overhead of a tiny eager
// op placed on the worker (src/remote/eager.ts) against the same op run here; and transfer throughput of 1 MB and
// 64 MB float32 tensors up (a call's argument, uploaded in chunks) and down (a fetch, streamed).
// Local and remote calls are interleaved round by round, so the ratio holds on a loaded machine.
//
//   node --import tsx bench/remote.ts
//
// Not part of `npm run bench`: it starts a worker process (test/remote/worker-process.ts).
import * as sc from "../src/api/index.js";
import { median, randomValues } from "./common.js";
import { spawnWorker } from "../test/remote/worker-process.js";

const worker = await spawnWorker();
const cluster = await sc.remote.connect({ cluster: { worker: [worker.address] } });
const DEVICE = "/job:worker/task:0/device:cpu:0";
try {
  // 1. call overhead: y = x + 1 on 4 elements
  const tiny = sc.stage((x: sc.Tensor) => x.add(1));
  const remoteTiny = await sc.remote.device(DEVICE, tiny);
  const x = sc.tensor([1, 2, 3, 4]);
  const h = await remoteTiny(x);
  const local: number[] = [];
  const remote: number[] = [];
  const chained: number[] = [];
  const CALLS = 200;
  for (let round = 0; round < 7; round++) {
    let t = performance.now();
    for (let i = 0; i < CALLS; i++) tiny(x);
    local.push(((performance.now() - t) / CALLS) * 1000);
    t = performance.now();
    for (let i = 0; i < CALLS; i++) await (await remoteTiny(x)).dispose();
    remote.push(((performance.now() - t) / CALLS) * 1000);
    t = performance.now();
    for (let i = 0; i < CALLS; i++) await (await remoteTiny(h)).dispose();
    chained.push(((performance.now() - t) / CALLS) * 1000);
  }
  const l = median(local);
  console.log(`tiny call, local:                        ${l.toFixed(1)} us`);
  console.log(`tiny call, remote (tensor in, dispose):  ${median(remote).toFixed(1)} us  (${(median(remote) / l).toFixed(0)}x local)`);
  console.log(`tiny call, remote (handle in, dispose):  ${median(chained).toFixed(1)} us  (${(median(chained) / l).toFixed(0)}x local)`);

  // 1b. remote eager ops: y = x + 1 on 4 elements, one op at a time on the worker
  const ex = sc.tensor([1, 2, 3, 4]);
  const onWorker0 = sc.device(DEVICE, () => ex.add(0));
  await onWorker0.data();
  const OPS = 200;
  const eagerLocal: number[] = [];
  const eagerRead: number[] = [];
  const eagerChain: number[] = [];
  for (let round = 0; round < 7; round++) {
    let t = performance.now();
    for (let i = 0; i < OPS; i++) ex.add(1);
    eagerLocal.push(((performance.now() - t) / OPS) * 1000);
    // each op's result read back before the next (a Call, a Fetch and a Release per op)
    t = performance.now();
    for (let i = 0; i < OPS; i++) {
      const y = sc.device(DEVICE, () => ex.add(1));
      await y.data();
      y.dispose();
    }
    await sc.remote.sync(DEVICE);
    eagerRead.push(((performance.now() - t) / OPS) * 1000);
    // a chain of ops on a remote handle, read once at the end (calls pipelined: one Call per op)
    t = performance.now();
    let y = onWorker0;
    for (let i = 0; i < OPS; i++) y = sc.device(DEVICE, () => y.add(1));
    await y.data();
    eagerChain.push(((performance.now() - t) / OPS) * 1000);
  }
  const el = median(eagerLocal);
  console.log(`tiny eager op, local:                    ${el.toFixed(2)} us`);
  console.log(`tiny eager op, remote (read each):       ${median(eagerRead).toFixed(1)} us  (${(median(eagerRead) / el).toFixed(0)}x local)`);
  console.log(`tiny eager op, remote (chained, 1 read): ${median(eagerChain).toFixed(1)} us  (${(median(eagerChain) / el).toFixed(0)}x local)`);

  // 2. throughput: up (argument of a call that sums it) and down (fetch of a handle)
  const total = await sc.remote.device(DEVICE, sc.stage((t: sc.Tensor) => t.sum()));
  const same = await sc.remote.device(DEVICE, sc.stage((t: sc.Tensor) => t.mul(1)));
  for (const mb of [1, 64]) {
    const n = (mb * 2 ** 20) / 4;
    const t0 = sc.tensor(randomValues(n, mb), "float32", [n]);
    const onWorker = await same(t0);
    const up: number[] = [];
    const down: number[] = [];
    const rounds = mb === 1 ? 15 : 3;
    for (let r = 0; r < rounds; r++) {
      let t = performance.now();
      await (await total(t0)).dispose();
      up.push(performance.now() - t);
      t = performance.now();
      const back = await onWorker.fetch();
      down.push(performance.now() - t);
      if (back.size !== n) throw new Error("short fetch");
    }
    const rate = (ms: number) => ((mb / ms) * 1000).toFixed(0);
    console.log(`${String(mb).padStart(2)} MB float32: up ${median(up).toFixed(1)} ms (${rate(median(up))} MB/s), down ${median(down).toFixed(1)} ms (${rate(median(down))} MB/s)`);
    await onWorker.dispose();
  }
} finally {
  await cluster.close();
  await worker.kill("SIGTERM");
}
