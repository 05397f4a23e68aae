// The compiled executor's gemm split over two threads (each thread takes the next chunk of rows
// from a shared counter) gives exactly the single-thread result, for any row count, any chunk
// size and with accumulation; and a worker the scheduler holds back delays a call, never hangs
// it nor changes its bits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { gemmInstance, gemmModule, type GemmInstance } from "../../src/backends/cpu/wasm/gemm.js";
import { poolPolicy, poolStats, registerExtraKernel, runRowChunks, setSplitForTests } from "../../src/backends/cpu/worker-pool.js";
import { configuredThreads } from "../../src/backends/cpu/wasm-runtime.js";
import { mulberry32 } from "../util/mulberry32.js";

const SHAPES = [[32, 256, 64, 0], [13, 400, 330, 0], [9, 300, 256, 1], [67, 129, 70, 1]] as const;

/** A gemm instance with A, B, C (the reference) and D (the split call's output) laid out in its memory. */
function setUp(m: number, n: number, k: number, seed: number) {
  const rand = mulberry32(seed);
  const bAt = m * k * 4, cAt = bAt + k * n * 4, dAt = cAt + m * n * 4;
  const g = gemmInstance(dAt + m * n * 4, true);
  const mem = new Float32Array(g.memory.buffer);
  for (let i = 0; i < cAt / 4; i++) mem[i] = Math.fround(rand() * 2 - 1);
  const init = Float32Array.from({ length: m * n }, () => Math.fround(rand()));
  return { g, mem, init, cAt, dAt };
}

/** Runs `call` on D until a worker has taken rows (at most 20 s); returns D's bits of the last call. */
async function untilShared(g: GemmInstance, mem: Float32Array, init: Float32Array, dAt: number, m: number, n: number, call: () => void): Promise<Uint32Array> {
  const before = poolStats().workerShares;
  const start = Date.now();
  do {
    mem.set(init, dAt / 4);
    call();
    if (poolStats().workerShares > before) break;
    await new Promise((r) => setTimeout(r, 1)); // (lets a worker that has not started yet start)
  } while (Date.now() - start < 20_000);
  assert.ok(poolStats().workerShares > before, `m=${m}: no worker took rows within 20 s: ${JSON.stringify(poolStats())}`);
  return new Uint32Array(mem.slice(dAt / 4, dAt / 4 + m * n).buffer);
}

const skip = configuredThreads() < 2 ? "one thread configured" : false;

test("split gemm: rows taken by the worker and the main thread give the single-thread bits, for any chunk size", { skip }, async () => {
  poolPolicy.force(true);
  try {
    for (const [m, n, k, acc] of SHAPES) {
      const { g, mem, init, cAt, dAt } = setUp(m, n, k, m + n);
      mem.set(init, cAt / 4);
      g.gemm(0, m * k * 4, cAt, m, n, k, k, 1, acc);
      const want = new Uint32Array(mem.slice(cAt / 4, cAt / 4 + m * n).buffer);
      // the instance's own split (4-row chunks)
      const got = await untilShared(g, mem, init, dAt, m, n, () => g.split(0, m * k * 4, dAt, m, n, k, k, 1, acc));
      assert.deepEqual(got, want, `m=${m} n=${n} k=${k} acc=${acc}, 4-row chunks`);
      // other cuts of the same rows
      const id = registerExtraKernel(gemmModule()!, g.memory, "gemm", g.gemm)!;
      for (const chunk of [1, 3, 8, 16]) {
        if (m < 2 * chunk) continue;
        const got2 = await untilShared(g, mem, init, dAt, m, n, () => runRowChunks(id, g.gemm, [0, m * k * 4, dAt, m, n, k, k, 1, acc], chunk));
        assert.deepEqual(got2, want, `m=${m} n=${n} k=${k} acc=${acc}, ${chunk}-row chunks`);
      }
    }
  } finally {
    poolPolicy.force(null);
  }
});

test("split gemm: a worker held back 30 ms per chunk delays the call but it completes with the same bits", { skip }, async () => {
  const [m, n, k, acc] = SHAPES[3];
  const { g, mem, init, cAt, dAt } = setUp(m, n, k, 11);
  mem.set(init, cAt / 4);
  g.gemm(0, m * k * 4, cAt, m, n, k, k, 1, acc);
  const want = new Uint32Array(mem.slice(cAt / 4, cAt / 4 + m * n).buffer);
  poolPolicy.force(true);
  setSplitForTests(null, 30);
  try {
    const got = await untilShared(g, mem, init, dAt, m, n, () => g.split(0, m * k * 4, dAt, m, n, k, k, 1, acc));
    assert.deepEqual(got, want);
  } finally {
    setSplitForTests(null, 0);
    poolPolicy.force(null);
  }
});

test("split gemm: with one thread by the policy's choice, the call is made on the main thread with the same bits", { skip }, () => {
  const [m, n, k, acc] = SHAPES[1];
  const { g, mem, init, cAt, dAt } = setUp(m, n, k, 12);
  mem.set(init, cAt / 4);
  g.gemm(0, m * k * 4, cAt, m, n, k, k, 1, acc);
  poolPolicy.force(false);
  try {
    const before = poolStats().splitCalls;
    mem.set(init, dAt / 4);
    g.split(0, m * k * 4, dAt, m, n, k, k, 1, acc);
    assert.equal(poolStats().splitCalls, before, "no shared call");
    assert.deepEqual(mem.slice(dAt / 4, dAt / 4 + m * n), mem.slice(cAt / 4, cAt / 4 + m * n));
  } finally {
    poolPolicy.force(null);
  }
});
