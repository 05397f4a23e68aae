// The compiled executor's gemm split over two threads (a worker takes half the rows) gives
// exactly the single-thread result, for any row count and with accumulation.
import { test } from "node:test";
import assert from "node:assert/strict";
import { gemmInstance } from "../../src/backends/cpu/wasm/gemm.js";
import { poolStats } from "../../src/backends/cpu/worker-pool.js";
import { configuredThreads } from "../../src/backends/cpu/wasm-runtime.js";
import { mulberry32 } from "../util/mulberry32.js";

test("split gemm: worker and main thread rows give the single-thread bits", { skip: configuredThreads() < 2 ? "one thread configured" : false }, async () => {
  const rand = mulberry32(5);
  for (const [m, n, k, acc] of [[32, 256, 64, 0], [13, 40, 33, 0], [9, 7, 256, 1]] as const) {
    const aAt = 0,
      bAt = m * k * 4,
      cAt = bAt + k * n * 4,
      dAt = cAt + m * n * 4;
    const g = gemmInstance(dAt + m * n * 4, true);
    const mem = new Float32Array(g.memory.buffer);
    for (let i = 0; i < cAt / 4; i++) mem[i] = Math.fround(rand() * 2 - 1);
    const init = Float32Array.from({ length: m * n }, () => Math.fround(rand()));
    mem.set(init, cAt / 4);
    mem.set(init, dAt / 4);
    g.gemm(aAt, bAt, cAt, m, n, k, k, 1, acc);
    const want = mem.slice(cAt / 4, cAt / 4 + m * n);
    // the first calls wake the worker; it takes half the rows once it polls for work
    const before = poolStats().splitCalls;
    const start = Date.now();
    while (poolStats().splitCalls === before && Date.now() - start < 20_000) {
      mem.set(init, dAt / 4);
      g.split(aAt, bAt, dAt, m, n, k, k, 1, acc);
      if (poolStats().splitCalls === before) await new Promise((r) => setTimeout(r, 1));
    }
    assert.ok(poolStats().splitCalls > before, `m=${m}: no split call within 20 s: ${JSON.stringify(poolStats())}`);
    const got = mem.slice(dAt / 4, dAt / 4 + m * n);
    assert.deepEqual(new Uint32Array(got.buffer), new Uint32Array(want.buffer), `m=${m} n=${n} k=${k} acc=${acc}`);
  }
});
