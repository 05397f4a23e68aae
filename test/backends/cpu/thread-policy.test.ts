// The thread policy (backends/cpu/thread-policy.ts) is a state machine over the timings it is
// given: these tests feed it timings of a machine whose second core is free, then busy, then
// free again, and check what it chooses. The worker pool's dynamic task hand-out and the
// native kernels' thread counts are checked for bits here too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { jobClass, ThreadPolicy } from "../../../src/backends/cpu/thread-policy.js";
import { matmul } from "../../../src/backends/cpu/matmul.js";
import { poolStats, setThreadLimit } from "../../../src/backends/cpu/worker-pool.js";
import { configuredThreads } from "../../../src/backends/cpu/wasm-runtime.js";
import { installNativeKernels, nativeKernels, nativeStats, useNativeKernels } from "../../../src/backends/cpu/native.js";
import { loadOrtNativeKernels } from "../../../src/onnx/native-kernels.js";
import { mulberry32 } from "../../util/mulberry32.js";

installNativeKernels(loadOrtNativeKernels());

/** Runs `jobs` jobs of class key on a machine where one thread takes `one` s and threads `many` s; returns how many used threads. */
function drive(p: ThreadPolicy, key: string, jobs: number, one: number, many: number, helperIdle = false): number {
  let threaded = 0;
  for (let i = 0; i < jobs; i++) {
    const t = p.useThreads(key);
    if (t) threaded++;
    p.record(key, t, t ? many : one, 1e6, t && helperIdle);
  }
  return threaded;
}

test("thread policy: threads while they pay, one thread while the other core is busy, threads again when it frees", () => {
  const p = new ThreadPolicy({ probeEvery: 16, smoothing: 0.5 });
  const key = jobClass("sgemm", 2 ** 30);
  // free second core: two threads take 0.55 of the time
  const free = drive(p, key, 64, 1.0, 0.55);
  assert.ok(free >= 60, `free core: ${free} of 64 jobs threaded`);
  // busy second core: the two-thread job now takes 1.9x as long
  const busy = drive(p, key, 64, 1.0, 1.9);
  assert.ok(busy <= 10, `busy core: ${busy} of 64 jobs threaded (only probes and the switch-over should be)`);
  // and the probes notice when the core frees again
  const again = drive(p, key, 64, 1.0, 0.55);
  assert.ok(again >= 46, `freed again: ${again} of 64 jobs threaded`);
});

test("thread policy: a job whose helper never took a task counts as no better than one thread", () => {
  const p = new ThreadPolicy({ probeEvery: 8 });
  const key = "k";
  drive(p, key, 2, 1.0, 0.5);
  // the helper sleeps through the jobs: the threaded time (the main thread did all) looks like one thread's
  const idle = drive(p, key, 32, 1.0, 0.99, true);
  assert.ok(idle <= 6, `${idle} of 32 jobs threaded with an idle helper`);
  assert.ok(p.estimates(key).many >= p.estimates(key).one * 0.999);
});

test("thread policy: classes are separate, and the first jobs measure both ways", () => {
  const p = new ThreadPolicy();
  assert.equal(p.useThreads("a"), true);
  p.record("a", true, 2, 1);
  assert.equal(p.useThreads("a"), false);
  p.record("a", false, 1, 1);
  assert.equal(p.useThreads("a"), false, "one thread measured cheaper");
  assert.equal(p.useThreads("b"), true, "another class starts fresh");
  assert.notEqual(jobClass("sgemm", 1e6), jobClass("sgemm", 4e6));
  assert.equal(jobClass("sgemm", 1e6), jobClass("sgemm", 1.2e6));
});

function product(m: number, k: number, n: number): Float32Array {
  const rand = mulberry32(m + k + n);
  const a = Float32Array.from({ length: m * k }, () => rand() * 2 - 1);
  const b = Float32Array.from({ length: k * n }, () => rand() * 2 - 1);
  const out = new Float32Array(m * n);
  matmul("float32", a, [0], b, [0], out, m, k, n, false, false);
  return out;
}

test("worker pool: products cut into tasks for two threads give the one-thread bits (wasm kernels)", { skip: configuredThreads() < 2 ? "one thread configured" : false }, () => {
  useNativeKernels(false);
  try {
    for (const [m, k, n] of [[300, 257, 190], [64, 300, 700], [517, 200, 64]] as const) {
      setThreadLimit(1);
      const one = product(m, k, n);
      setThreadLimit(Infinity);
      const before = poolStats().parallelJobs;
      let got = product(m, k, n);
      // the policy measures both ways first: run until a job went to the pool
      for (let i = 0; i < 64 && poolStats().parallelJobs === before; i++) got = product(m, k, n);
      assert.ok(poolStats().parallelJobs > before, `${m}x${k}x${n}: no job ran on the pool`);
      assert.deepEqual(new Uint32Array(got.buffer), new Uint32Array(one.buffer), `${m}x${k}x${n}`);
    }
  } finally {
    useNativeKernels(true);
    setThreadLimit(Infinity);
  }
});

test("native kernels: one and several threads give the same bits", { skip: nativeKernels() === null ? "onnxruntime-node not loaded" : configuredThreads() < 2 ? "one thread configured" : false }, () => {
  setThreadLimit(1);
  const one = product(256, 300, 200);
  setThreadLimit(Infinity);
  const before = nativeStats().threaded;
  let got = product(256, 300, 200);
  for (let i = 0; i < 64 && nativeStats().threaded === before; i++) got = product(256, 300, 200);
  assert.ok(nativeStats().threaded > before, "no native call ran threaded");
  assert.deepEqual(new Uint32Array(got.buffer), new Uint32Array(one.buffer));
});
