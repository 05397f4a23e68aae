// The worker pool's products (backends/cpu/worker-pool.ts): whatever the cut into tasks and
// whichever thread takes which task, every output element is computed by one task with the same
// code, so the bits equal one thread's; and a worker the scheduler holds back with a task in
// hand delays a product, never hangs it nor changes it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { matmul } from "../../../src/backends/cpu/matmul.js";
import { poolPolicy, poolStats, setSplitForTests, setThreadLimit } from "../../../src/backends/cpu/worker-pool.js";
import { configuredThreads } from "../../../src/backends/cpu/wasm-runtime.js";
import { useNativeKernels } from "../../../src/backends/cpu/native.js";
import { mulberry32 } from "../../util/mulberry32.js";

const skip = configuredThreads() < 2 ? "one thread configured" : false;

function operands(m: number, k: number, n: number, batch: number) {
  const rand = mulberry32(m * 7 + k * 3 + n + batch);
  return {
    a: Float32Array.from({ length: batch * m * k }, () => rand() * 2 - 1),
    b: Float32Array.from({ length: batch * k * n }, () => rand() * 2 - 1),
  };
}

/** op(A_i) op(B_i) for every batch item, with the WebAssembly kernels. */
function product(x: { a: Float32Array; b: Float32Array }, m: number, k: number, n: number, batch: number, transA: boolean, transB: boolean): Uint32Array {
  const out = new Float32Array(batch * m * n);
  matmul("float32", x.a, Array.from({ length: batch }, (_, i) => i * m * k), x.b, Array.from({ length: batch }, (_, i) => i * k * n), out, m, k, n, transA, transB);
  return new Uint32Array(out.buffer);
}

/** Runs `f` until a worker has taken a task (at most 20 s); returns its last result. */
async function untilWorkerTook(f: () => Uint32Array, what: string): Promise<Uint32Array> {
  const before = poolStats().workerShares;
  const start = Date.now();
  let got = f();
  while (poolStats().workerShares === before && Date.now() - start < 20_000) {
    await new Promise((r) => setTimeout(r, 1)); // (lets a worker that has not started yet start)
    got = f();
  }
  assert.ok(poolStats().workerShares > before, `${what}: no worker took a task within 20 s: ${JSON.stringify(poolStats())}`);
  return got;
}

test("worker pool: any cut of a product into tasks, shared by two threads, gives the one-thread bits", { skip }, async () => {
  useNativeKernels(false);
  try {
    // rows cut when m >= n, columns when m < n; transposed operands; a batch
    for (const [m, k, n, batch, tA, tB] of [[300, 257, 190, 1, false, false], [64, 300, 700, 1, true, false], [517, 200, 64, 1, false, true], [96, 130, 180, 3, true, true]] as const) {
      const x = operands(m, k, n, batch);
      setThreadLimit(1);
      const one = product(x, m, k, n, batch, tA, tB);
      setThreadLimit(Infinity);
      poolPolicy.force(true);
      try {
        for (const pieces of [2, 3, 5, 16, 1000]) {
          setSplitForTests(pieces);
          const got = await untilWorkerTook(() => product(x, m, k, n, batch, tA, tB), `${m}x${k}x${n} in ${pieces} pieces`);
          assert.deepEqual(got, one, `${m}x${k}x${n} batch ${batch} transA ${tA} transB ${tB}, ${pieces} pieces per product`);
        }
      } finally {
        setSplitForTests(null);
        poolPolicy.force(null);
      }
    }
  } finally {
    useNativeKernels(true);
    setThreadLimit(Infinity);
  }
});

test("worker pool: a worker held back 30 ms per task delays the product but it completes with the same bits", { skip }, async () => {
  useNativeKernels(false);
  const [m, k, n] = [256, 200, 240];
  const x = operands(m, k, n, 1);
  setThreadLimit(1);
  const one = product(x, m, k, n, 1, false, false);
  setThreadLimit(Infinity);
  poolPolicy.force(true);
  setSplitForTests(8, 30);
  try {
    const got = await untilWorkerTook(() => product(x, m, k, n, 1, false, false), "held-back worker");
    assert.deepEqual(got, one);
  } finally {
    setSplitForTests(null, 0);
    poolPolicy.force(null);
    useNativeKernels(true);
  }
});
