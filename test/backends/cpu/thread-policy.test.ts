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

/**
 * Runs `jobs` jobs of class key on a simulated machine where a job takes `one` s on one thread
 * and `many` s with threads (a number, or a function of the job's index: noise, a stall);
 * returns how many used threads and the seconds they all took.
 */
function drive(p: ThreadPolicy, key: string, jobs: number, one: number, many: number | ((i: number) => number), helperIdle = false): { threaded: number; seconds: number } {
  let threaded = 0, seconds = 0;
  for (let i = 0; i < jobs; i++) {
    const t = p.useThreads(key);
    if (t) threaded++;
    const s = t ? (typeof many === "number" ? many : many(i)) : one;
    seconds += s;
    p.record(key, t, s, 1e6, t && helperIdle);
  }
  return { threaded, seconds };
}

test("thread policy: threads while they pay, one thread while the other core is busy, threads again when it frees", () => {
  const p = new ThreadPolicy();
  const key = jobClass("sgemm", 2 ** 30);
  // free second core: two threads take 0.55 of the time
  const free = drive(p, key, 200, 1.0, 0.55);
  assert.ok(free.threaded >= 190, `free core: ${free.threaded} of 200 jobs threaded`);
  // busy second core: the two-thread job now takes 1.9x as long; the switch-over costs at most
  // a window's worth of jobs, and the probes at most a few percent after it
  const busy = drive(p, key, 400, 1.0, 1.9);
  assert.ok(busy.threaded <= 18, `busy core: ${busy.threaded} of 400 jobs threaded`);
  assert.ok(busy.seconds <= 400 * 1.06, `busy core: ${busy.seconds} s for 400 one-second jobs`);
  // and the probes notice when the core frees again (within two probe gaps)
  const again = drive(p, key, 200, 1.0, 0.55);
  assert.ok(again.threaded >= 150, `freed again: ${again.threaded} of 200 jobs threaded`);
});

test("thread policy: forget() drops what a busy phase taught, so the next jobs measure both ways afresh", () => {
  const p = new ThreadPolicy();
  const key = jobClass("sgemm", 2 ** 30);
  drive(p, key, 100, 1.0, 1.9); // busy second core: one thread preferred
  assert.ok(p.estimates(key).many > p.estimates(key).one);
  // without forget(), a freed core is seen only through probes: the first jobs stay on one thread
  const kept = new ThreadPolicy();
  drive(kept, key, 100, 1.0, 1.9);
  assert.equal(drive(kept, key, 4, 1.0, 0.55).threaded, 0);
  p.forget();
  assert.ok(Number.isNaN(p.estimates(key).one) && Number.isNaN(p.estimates(key).many));
  // threads first, alternating until both ways have two timings, then threads while they pay
  const after = drive(p, key, 20, 1.0, 0.55);
  assert.ok(after.threaded >= 17, `after forget: ${after.threaded} of 20 jobs threaded`);
});

test("thread policy: probes of a way that costs more come rarer, within the budget and maxGap", () => {
  const p = new ThreadPolicy({ minGap: 16, maxGap: 256, probeBudget: 0.03 });
  const key = "k";
  // threads cost 3x: a probe's extra cost is 2 jobs, so one probe per ~67 one-thread jobs
  const r = drive(p, key, 2000, 1.0, 3.0);
  assert.ok(r.threaded >= 2000 / 256 && r.threaded <= 2000 / 60 + 3, `${r.threaded} probes in 2000 jobs`);
  assert.ok(r.seconds <= 2000 * 1.04, `${r.seconds} s for 2000 one-second jobs`);
  // threads cost the same as one thread: probes every minGap jobs (no extra cost)
  const q = new ThreadPolicy({ minGap: 16, margin: 1.05 });
  const s = drive(q, key, 1700, 1.0, 1.0);
  assert.ok(s.threaded >= 1700 / 17 - 2 && s.threaded <= 1700 / 17 + 4, `${s.threaded} probes of equal cost in 1700 jobs`);
});

test("thread policy: one stray slow threaded job (a descheduled helper) does not flip a class that prefers threads", () => {
  const p = new ThreadPolicy();
  const key = "k";
  drive(p, key, 50, 1.0, 0.55);
  // every 20th threaded job stalls 10x: the median of the last three ignores it
  const r = drive(p, key, 200, 1.0, (i) => (i % 20 === 7 ? 5.5 : 0.55));
  assert.ok(r.threaded >= 190, `${r.threaded} of 200 jobs threaded with rare stalls`);
});

test("thread policy: a job whose helper never took a task counts as no better than one thread", () => {
  const p = new ThreadPolicy({ minGap: 8 });
  const key = "k";
  drive(p, key, 4, 1.0, 0.5);
  // the helper sleeps through the jobs: the threaded time (the main thread did all) looks like one thread's
  const idle = drive(p, key, 64, 1.0, 0.99, true);
  assert.ok(idle.threaded <= 12, `${idle.threaded} of 64 jobs threaded with an idle helper`);
  assert.ok(p.estimates(key).many >= p.estimates(key).one * 0.999);
});

test("thread policy: classes are separate, the first jobs measure both ways, and force() overrides", () => {
  const p = new ThreadPolicy();
  // threads first, then alternately until each way has two timings
  assert.equal(p.useThreads("a"), true);
  p.record("a", true, 2, 1);
  assert.equal(p.useThreads("a"), false);
  p.record("a", false, 1, 1);
  assert.equal(p.useThreads("a"), true);
  p.record("a", true, 2, 1);
  assert.equal(p.useThreads("a"), false);
  p.record("a", false, 1, 1);
  assert.equal(p.useThreads("a"), false, "one thread measured cheaper");
  p.record("a", false, 1, 1);
  assert.equal(p.useThreads("b"), true, "another class starts fresh");
  p.force(true);
  assert.equal(p.useThreads("a"), true, "forced threads");
  p.force(false);
  assert.equal(p.useThreads("b"), false, "forced one thread");
  p.force(null);
  assert.equal(p.useThreads("a"), false, "measured choice again");
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
